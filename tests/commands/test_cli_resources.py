"""Custom resources in the displays, against a real scheduler (child process, real SQLite) on a
memory cluster of two GPU workers: ``/api/v1/cluster`` and ``/api/v1/queues`` give each
resource's capacity and use, an app's answer what it asks and holds, ``queues`` a column per
resource, ``status`` and ``why`` a line, ``/metrics`` the gauges. (A cluster without custom
resources answers as before: ``test_cli_server``'s key sets.)"""

from __future__ import annotations

import json
import urllib.request

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import run_cli

GPU = ("spark.executor.resource.gpu.amount=1", "spark.task.resource.gpu.amount=1",
       "spark.dynamicAllocation.maxExecutors=1")


def get(server, path: str):
    with urllib.request.urlopen(f"{server.url}{path}", timeout=10) as resp:
        body = resp.read().decode()
    return body if path == "/metrics" else json.loads(body)


def test_gpu_capacity_and_use_in_the_api_the_cli_and_the_metrics(tmp_path, app_dir):
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50},
        "cluster": {"backend": "memory", "driver_start_s": 0.2, "executor_start_s": 0.2,
                    "worker_groups": [{"count": 2, "cores": 4, "memory": "8g",
                                       "resources": {"gpu": 2}}]},
        "defaults": {"queue": "root.ml"},
        "queues": [{"name": "root", "queues": [{"name": "ml"}]}],
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        conf = [a for c in ("spark.sessionsched.memory.work=1x60", *GPU) for a in ("--conf", c)]
        r = run_cli("submit", "--server", server.url, *conf, "job.py", cwd=app_dir)
        assert r.returncode == 0, r.stderr
        app_id = r.stdout.strip()

        def holding():
            app = get(server, f"/api/v1/apps/{app_id}")
            return app.get("resources", {}).get("held") == {"gpu": 1} and app

        app = wait_until(holding, 60, "the app to hold its GPU executor")
        cluster = get(server, "/api/v1/cluster")
        queues = get(server, "/api/v1/queues")
        metrics = get(server, "/metrics")
        table = run_cli("queues", "--server", server.url)
        status = run_cli("status", "--server", server.url, app_id)
    finally:
        server.stop()
    assert app["resources"] == {"executor": {"gpu": 1}, "driver": {}, "held": {"gpu": 1}}
    assert cluster["resources"]["gpu"]["capacity"] == 4
    assert cluster["resources"]["gpu"]["used"] == 1
    assert all(w["resources"] == {"gpu": 2} for w in cluster["workers"])
    rows = {q["name"]: q["resources"] for q in queues}
    assert rows == {"root": {"gpu": {"used": 1, "max": None, "min": None}},
                    "root.ml": {"gpu": {"used": 1, "max": None, "min": None}}}
    assert 'sessionsched_resource_capacity{resource="gpu"} 4.0' in metrics
    assert 'sessionsched_resource_used{resource="gpu"} 1.0' in metrics
    assert 'sessionsched_queue_resource_used{queue="root.ml",resource="gpu"} 1.0' in metrics
    assert table.returncode == 0, table.stderr
    header = table.stdout.splitlines()[0].split()
    assert header[header.index("DEMAND") + 1] == "GPU"
    assert status.returncode == 0, status.stderr
    assert "resources" in status.stdout and "executor 1 gpu; driver -; held 1 gpu" in status.stdout


def test_why_names_the_apps_resources_and_their_use_in_its_queue():
    from sessionsched.client import App
    from sessionsched.commands.inspect import why_lines

    app = App.from_json({
        "id": "driver-1", "name": "train", "user": "ann", "queue": "root.ml", "priority": 0,
        "state": "ACCEPTED", "position": 1, "reason": "waiting for gpu: ...",
        "reason_code": "driver_room",
        "resources": {"executor": {"gpu": 2}, "driver": {"gpu": 1}, "held": {}}})
    queue = {"name": "root.ml", "resources": {"gpu": {"used": 3, "max": 4, "min": 2}}}
    lines = why_lines(app, [app], queue)
    assert "custom resources: executor 2 gpu; driver 1 gpu; held -" in lines
    assert "gpu in root.ml: 3 held, capped at 4, guaranteed 2" in lines
    plain = App.from_json({k: v for k, v in app.raw.items() if k != "resources"})
    assert not any("gpu in" in line or "custom" in line for line in why_lines(plain, [plain]))
