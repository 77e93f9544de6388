"""Estimated starts through the real command against a real scheduler (``sessionsched serve``
as a child process, memory backend, real SQLite), its estimator refreshing in its own process
every half second: ``apps --json``, ``submit --dry-run``, ``why`` and ``top``."""

from __future__ import annotations

import json

import psutil
import pytest

from sessionsched.backends.memory import WORK
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import run_cli

# One app at a time (max_running_apps 1), each running two minutes: the rest wait in order.
LONG = f"--conf={WORK}=120"


@pytest.fixture(scope="module")
def busy_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("estimates")
    config = {
        "server": {"state_dir": str(d / "state"), "cycle_ms": 100, "estimate_s": 0.5},
        "cluster": {"backend": "memory", "workers": 1, "cores": 4, "memory": "8g",
                    "driver_start_s": 0.2, "executor_start_s": 0.2},
        "queues": [{"name": "root", "queues": [
            {"name": "default", "policy": "fifo", "max_running_apps": 1}]}],
    }
    server = ServerProcess.start(config, d / "server")
    try:
        yield server
    finally:
        server.stop()


def cli(server, *args, cwd=None):
    return run_cli(*args, "--server", server.url, cwd=cwd)


def apps(server) -> list[dict]:
    r = cli(server, "apps", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def queue_of_four(busy_server, tmp_path_factory):
    """Four equal apps: the first runs, three wait; their ids, in submission order."""
    work = tmp_path_factory.mktemp("work")
    (work / "job.py").write_text("print('hello')\n")
    ids = []
    for i in range(4):
        r = run_cli("submit", "--server", busy_server.url, f"--conf=spark.app.name=eq-{i}",
                    LONG, "job.py", cwd=work)
        assert r.returncode == 0, r.stderr
        ids.append(r.stdout.strip())

    def estimated():
        by_id = {a["id"]: a for a in apps(busy_server)}
        waiting = [by_id[i] for i in ids[1:]]
        return all(a["estimated_start"] for a in waiting) and by_id

    by_id = wait_until(estimated, 60, "estimated starts for the three waiting apps")
    return ids, by_id, work


def test_the_waiting_apps_get_increasing_estimates_in_the_background(queue_of_four):
    ids, by_id, _ = queue_of_four
    assert by_id[ids[0]]["state"] in ("STARTING", "RUNNING")
    assert by_id[ids[0]]["estimated_start"] is None
    waiting = [by_id[i] for i in ids[1:]]
    assert [a["position"] for a in waiting] == [1, 2, 3]
    starts = [a["estimated_start"] for a in waiting]
    assert starts[0] < starts[1] < starts[2], starts  # ISO 8601 UTC: text order is time order


def test_dry_run_answers_fits_reason_and_start_and_stores_nothing(busy_server, queue_of_four):
    _, _, work = queue_of_four
    before = len(apps(busy_server))
    r = run_cli("submit", "--server", busy_server.url, "--dry-run", LONG, "job.py", cwd=work)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "fits: yes"
    assert lines[1].startswith("waits: position 4 in root.default - behind "), lines
    assert "the head of root.default (3 app(s) ahead of it)" in lines[1], lines
    assert lines[2].startswith("estimated start: ≈ "), lines

    huge = run_cli("submit", "--server", busy_server.url, "--dry-run",
                   "--conf=spark.executor.memory=64g", "job.py", cwd=work)
    assert huge.returncode == 1, huge.stderr
    assert huge.stdout.strip() == ("fits: no - an executor of 1 cores/65536 MiB does not fit "
                                   "in the cluster (4 cores/8192 MiB)")
    assert len(apps(busy_server)) == before  # nothing stored


def test_dry_run_says_no_for_what_a_submission_is_refused(busy_server, tmp_path):
    """A gang of 5 on the one 4-core worker: the cluster's sums do not show it (no executor is
    too large, minExecutors is 0), the check on the workers does."""
    (tmp_path / "job.py").write_text("print('hello')\n")
    gang = ("--conf=spark.sessionsched.gang.size=5", "job.py")
    refused = run_cli("submit", "--server", busy_server.url, *gang, cwd=tmp_path)
    assert refused.returncode == 2
    never = ("5 executor(s) of 1 cores/1024 MiB (a gang of 5) do not fit the cluster: its "
             "workers hold 4 (1 worker of 4 cores/8192 MiB)")
    assert refused.stderr.strip() == f"sessionsched submit: never fits: {never}"
    r = run_cli("submit", "--server", busy_server.url, "--dry-run", *gang, cwd=tmp_path)
    assert r.returncode == 1, r.stdout
    assert r.stdout.strip() == f"fits: no - {never}"


def test_why_names_the_reason_who_is_ahead_and_the_estimate(busy_server, queue_of_four):
    ids, _, _ = queue_of_four
    r = cli(busy_server, "why", ids[3])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"{ids[3]} (eq-3" in out and "ACCEPTED, position 3 in root.default" in out
    assert f"reason: behind {ids[1]}, the head of root.default (2 app(s) ahead of it)" in out
    assert "ahead of it in root.default: 2 queued" in out
    assert f"1. {ids[1]} eq-1" in out and f"2. {ids[2]} eq-2" in out
    assert "running in root.default: 1" in out and ids[0] in out
    assert "estimated start: ≈ " in out
    assert "counter-offer: none" in out  # one executor wanted: nothing to offer

    running = cli(busy_server, "why", ids[0])
    assert running.returncode == 0 and "not waiting" in running.stdout


def test_top_draws_queues_running_and_waiting_apps_frame_after_frame(busy_server, queue_of_four):
    ids, _, _ = queue_of_four
    r = run_cli("top", "--server", busy_server.url, "--iterations", "2", "--interval", "0.2")
    assert r.returncode == 0, r.stderr
    frames = r.stdout.split("sessionsched top - ")[1:]
    assert len(frames) == 2
    for frame in frames:
        assert "1 running, 3 waiting" in frame
        assert "root.default" in frame and "Running" in frame and "Waiting" in frame
        assert all(i in frame for i in ids)
        assert frame.count("≈ ") == 3  # the three waiting apps' estimated starts


def test_the_estimating_process_ends_with_a_server_killed_9(tmp_path):
    """The forward runs' process is the server's child; killed -9, the server cannot stop it,
    so it watches its parent and ends by itself (it would wait for work for ever)."""
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100, "estimate_s": 0.3},
        "cluster": {"backend": "memory", "workers": 1, "cores": 1, "memory": "2g"},
        "queues": [{"name": "root", "queues": [{"name": "default", "max_running_apps": 1}]}],
    }
    server = ServerProcess.start(config, tmp_path / "server")
    worker = None
    try:
        (tmp_path / "job.py").write_text("print('hello')\n")
        for _ in range(2):  # one runs, one waits: the estimator has work, its process starts
            r = run_cli("submit", "--server", server.url, LONG, "job.py", cwd=tmp_path)
            assert r.returncode == 0, r.stderr
        me = psutil.Process(server.proc.pid)
        worker = wait_until(lambda: next((c for c in me.children() if "spawn_main" in
                                          " ".join(c.cmdline())), None),
                            60, "the estimating process")
        server.proc.kill()
        server.proc.wait(15)
        assert wait_until(lambda: not worker.is_running() or worker.status() == "zombie",
                          30, "the estimating process gone")
    finally:
        server.stop()
        if worker is not None and worker.is_running():  # only if the test failed: by its PID
            worker.kill()
