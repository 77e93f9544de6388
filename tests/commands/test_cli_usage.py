"""``sessionsched usage`` against a real scheduler (child process, real SQLite) on the memory
cluster: an app runs to its end, and the command shows its figures per app, queue and user as
a table, JSON and CSV; a bad time is one line and exit 2."""

from __future__ import annotations

import csv
import io
import json

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import run_cli

QUEUES = [{"name": "root", "queues": [{"name": "etl"}, {"name": "adhoc"}]}]


def test_usage_by_app_queue_and_user_as_table_json_and_csv(tmp_path, app_dir):
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50},
        "cluster": {"backend": "memory", "cores": 4, "memory": "8g", "driver_start_s": 0.2,
                    "executor_start_s": 0.2},
        "defaults": {"queue": "root.etl"},
        "queues": QUEUES,
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        ids = []
        for queue in ("etl", "etl", "adhoc"):
            r = run_cli("submit", "--server", server.url, "--queue", queue,
                        "--conf", "spark.sessionsched.memory.work=2x1", "job.py", cwd=app_dir)
            assert r.returncode == 0, r.stderr
            ids.append(r.stdout.strip())

        def ended():
            r = run_cli("usage", "--server", server.url, "--by", "app", "--json")
            lines = json.loads(r.stdout) if r.returncode == 0 else []
            return len(lines) == 3 and all(a["state"] == "FINISHED" for a in lines) and lines

        apps = wait_until(ended, 60, "three apps FINISHED")

        def rolled_up():  # the hourly rollup has the last app's end once the meter wrote it
            r = run_cli("usage", "--server", server.url, "--json")
            lines = json.loads(r.stdout) if r.returncode == 0 else []
            held = sum(q["held_core_s"] for q in lines)
            return (sum(q["apps"] for q in lines) == 3
                    and abs(held - sum(a["held_core_s"] for a in apps)) < 0.005 and lines)

        by_queue = wait_until(rolled_up, 30, "the queues' lines to have the three apps")
        table = run_cli("usage", "--server", server.url, "--by", "user")
        raw = run_cli("usage", "--server", server.url, "--by", "app", "--csv", "--since", "1h")
        bad = run_cli("usage", "--server", server.url, "--until", "yesterday")
    finally:
        server.stop()
    assert [a["app"] for a in apps] == ids
    for a in apps:  # 2 one-second tasks each: busy is at least their work (seen per cycle)
        assert a["busy_core_s"] >= 2 * 0.9
        assert a["held_core_s"] == round(a["busy_core_s"] + a["idle_core_s"], 3)
        assert a["driver_core_s"] > 0
    assert [(q["queue"], q["apps"]) for q in by_queue] == [("root.adhoc", 1), ("root.etl", 2)]
    etl = by_queue[1]["held_core_s"]
    # the rollup adds unrounded hours, the app lines are rounded each: equal to the last digit
    assert abs(etl - (apps[0]["held_core_s"] + apps[1]["held_core_s"])) <= 0.002
    assert table.returncode == 0, table.stderr
    header = table.stdout.splitlines()[0].split()
    assert header[:4] == ["user", "apps", "held_core_s", "busy_core_s"]
    assert table.stdout.splitlines()[1].split()[1] == "3"
    rows = list(csv.DictReader(io.StringIO(raw.stdout)))
    assert [r["app"] for r in rows] == ids
    assert [float(r["held_core_s"]) for r in rows] == [a["held_core_s"] for a in apps]
    assert (bad.returncode, bad.stderr.strip()) == (
        2, "sessionsched usage: until 'yesterday' is not a time (like 7d, 12h, epoch seconds "
           "or ISO 8601)")
