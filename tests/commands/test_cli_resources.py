"""Custom resources in the displays, against a real scheduler (child process, real SQLite) on a
memory cluster of two GPU workers: ``/api/v1/cluster`` and ``/api/v1/queues`` give each
resource's capacity and use, an app's answer what it asks and holds, ``queues`` a column per
resource, ``status`` and ``why`` a line, ``/metrics`` the gauges. (A cluster without custom
resources answers as before: ``test_cli_server``'s key sets.)"""

from __future__ import annotations

import json
import urllib.request

import pytest

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import TWO_GPU_EXECUTORS, gpu_memory_config, run_cli

GPU = ("spark.executor.resource.gpu.amount=1", "spark.task.resource.gpu.amount=1",
       "spark.dynamicAllocation.maxExecutors=1")


def get(server, path: str):
    with urllib.request.urlopen(f"{server.url}{path}", timeout=10) as resp:
        body = resp.read().decode()
    return body if path == "/metrics" else json.loads(body)


def test_gpu_capacity_and_use_in_the_api_the_cli_and_the_metrics(tmp_path, app_dir):
    config = gpu_memory_config(tmp_path / "state", 2, 4, "8g", 2, [{"name": "ml"}])
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


def _admitted(held: int, grant: int, target: int, demand: int, asks: dict | None = None,
              **kw):
    from sessionsched.client import App

    return App.from_json({
        "id": "driver-2", "name": "train", "user": "ann", "queue": "root.ml", "priority": 5000,
        "state": "RUNNING", "position": None, "reason": "driver launched",
        "executors": held, "grant": grant, "target": target, "demand": demand, **kw,
        **({"resources": {"executor": asks, "driver": {}, "held": {}}} if asks else {})})


STARTING = {"code": "executors_starting", "text": "2 granted executor(s) starting"}
SHARED = {"code": "target_below_demand", "text": "its target is below its demand: root.ml"
          " (fairshare) divides its executors among 2 running app(s)"}


@pytest.mark.parametrize("notes,lines_after", [
    ([STARTING, SHARED], ["executors: 0 held, 2 granted, target 2, demand 3",
                          "2 granted executor(s) starting",
                          SHARED["text"] + " (executors held/target/demand):"]),
    ([], ["executors: 0 held, 2 granted, target 2, demand 3",
          "running in root.ml: 2 (executors held/target/demand):"]),
], ids=["the server's notes, the queue's division heading its running apps",
        "no note (a server older than them): the figures alone"])
def test_why_prints_the_servers_notes_on_a_running_apps_executors(notes, lines_after):
    from sessionsched.commands.inspect import why_lines

    app = _admitted(0, 2, 2, 3, executor_notes=notes)
    other = _admitted(2, 2, 2, 2, id="driver-3")
    lines = why_lines(app, [app, other])
    assert lines[1:2 + len(lines_after)] == ["not waiting: driver launched", *lines_after]
    assert "  driver-3 train RUNNING priority 5000, 2/2/2" in lines


def test_why_of_an_app_whose_executors_wait_for_a_gpu_held_by_another(tmp_path, app_dir):
    """Two GPU apps in a fairshare queue on one worker of 2 GPUs; the first holds both and,
    with ``reclaim_timeout: -1``, gives one back only once idle: the second's share is one
    GPU executor it cannot have yet, and ``why`` says what it waits for."""
    config = gpu_memory_config(tmp_path / "state", 1, 8, "16g", 2, [
        {"name": "ml", "policy": "fairshare", "reclaim_timeout": -1}])
    conf = [a for k, v in TWO_GPU_EXECUTORS.items() for a in ("--conf", f"{k}={v}")]
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        first = run_cli("submit", "--server", server.url, *conf, "job.py", cwd=app_dir)
        assert first.returncode == 0, first.stderr
        wait_until(lambda: get(server, f"/api/v1/apps/{first.stdout.strip()}")
                   .get("resources", {}).get("held") == {"gpu": 2}, 60,
                   "the first app to hold both GPUs")
        second = run_cli("submit", "--server", server.url, *conf, "job.py", cwd=app_dir)
        assert second.returncode == 0, second.stderr
        app_id = second.stdout.strip()
        wait_until(lambda: get(server, f"/api/v1/apps/{app_id}")["target"] == 1, 60,
                   "the second app's share of one GPU executor")
        # The workers' free room is the backend's last report (re-read every few seconds).
        wait_until(lambda: get(server, "/api/v1/cluster")["resources"]["gpu"]["free"] == 0,
                   60, "the cluster to report no GPU free")
        why = run_cli("why", "--server", server.url, app_id)
        answer = get(server, f"/api/v1/apps/{app_id}")
        # The lists and /metrics say it too, one code per app: the first app holds all it
        # wants and says nothing.
        rows = {a["id"]: a for a in get(server, "/api/v1/apps")}
        apps = run_cli("apps", "--server", server.url)
        metrics = get(server, "/metrics")
    finally:
        server.stop()
    assert [(n["code"], n.get("resource")) for n in answer["executor_notes"]] == [
        ("resource_short", "gpu"), ("target_below_demand", None)]
    assert (answer["executor_wait_code"], answer["executor_wait_resource"]) == (
        "resource_short", "gpu")
    assert (rows[app_id]["executor_wait_code"], rows[app_id]["executor_wait_resource"]) == (
        "resource_short", "gpu")
    first_id = first.stdout.strip()
    assert "executor_wait_code" not in rows[first_id], rows[first_id]
    assert apps.returncode == 0, apps.stderr
    line = next(x for x in apps.stdout.splitlines() if x.startswith(app_id))
    assert "resource_short(gpu)" in line, apps.stdout
    assert ('sessionsched_apps_short_of_executors{code="resource_short",queue="root.ml",'
            'resource="gpu"} 1.0') in metrics, metrics
    assert why.returncode == 0, why.stderr
    assert "executors: 0 held, 0 granted, target 1, demand 2" in why.stdout
    assert ("waiting for gpu: each executor asks 1 gpu and no worker has that much free (0 of 2"
            " free in the cluster)") in why.stdout
    assert "its target is below its demand: root.ml (fairshare) divides its executors among 2" \
        in why.stdout
