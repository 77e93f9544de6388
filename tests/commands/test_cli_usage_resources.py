"""``sessionsched usage`` for custom resources, against a real scheduler (child process, real
SQLite) on a memory cluster whose worker has GPUs: a GPU app's lines carry its gpu
resource-seconds beside the cores' (per app and in the hourly rollup), a CPU app's none, and
the table and CSV gain the gpu columns; ``/metrics`` has the per-resource counters."""

from __future__ import annotations

import csv
import io
import json
import urllib.request

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import gpu_memory_config, run_cli

GPU = ("spark.executor.resource.gpu.amount=1", "spark.task.resource.gpu.amount=1")


def test_gpu_resource_seconds_per_app_and_queue(tmp_path, app_dir):
    config = gpu_memory_config(tmp_path / "state", 1, 4, "8g", 2,
                               [{"name": "gpu"}, {"name": "cpu"}])
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        ids = []
        for queue, more in (("gpu", GPU), ("cpu", ())):
            conf = [a for c in ("spark.sessionsched.memory.work=2x1", *more)
                    for a in ("--conf", c)]
            r = run_cli("submit", "--server", server.url, "--queue", queue, *conf, "job.py",
                        cwd=app_dir)
            assert r.returncode == 0, r.stderr
            ids.append(r.stdout.strip())

        def ended():
            r = run_cli("usage", "--server", server.url, "--by", "app", "--json")
            lines = json.loads(r.stdout) if r.returncode == 0 else []
            return len(lines) == 2 and all(a["state"] == "FINISHED" for a in lines) and lines

        apps = wait_until(ended, 60, "two apps FINISHED")

        def rolled_up():
            r = run_cli("usage", "--server", server.url, "--json")
            lines = json.loads(r.stdout) if r.returncode == 0 else []
            gpu = [q for q in lines if q["queue"] == "root.gpu"]
            return (gpu and abs(gpu[0].get("gpu_held_s", 0) - apps[0]["gpu_held_s"]) < 0.005
                    and lines)

        by_queue = wait_until(rolled_up, 30, "the gpu queue's line to have the app's gpu")
        table = run_cli("usage", "--server", server.url)
        raw = run_cli("usage", "--server", server.url, "--by", "app", "--csv")
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
    finally:
        server.stop()
    gpu_app, cpu_app = apps
    assert gpu_app["app"] == ids[0]
    # one executor of 1 gpu and 1 core: the gpu's figures are the cores'
    for kind in ("held", "busy", "idle"):
        assert gpu_app[f"gpu_{kind}_s"] == gpu_app[f"{kind}_core_s"]
    assert gpu_app["gpu_busy_s"] >= 2 * 0.9  # 2 one-second tasks
    assert (gpu_app["gpu_reclaimed_s"], gpu_app["gpu_driver_s"]) == (0.0, 0.0)
    assert not any(k.startswith("gpu_") for k in cpu_app)
    cpu_line = next(q for q in by_queue if q["queue"] == "root.cpu")
    assert not any(k.startswith("gpu_") for k in cpu_line)
    header = table.stdout.splitlines()[0].split()
    assert header[-5:] == ["gpu_held_s", "gpu_busy_s", "gpu_idle_s", "gpu_reclaimed_s",
                           "gpu_driver_s"]
    rows = list(csv.DictReader(io.StringIO(raw.stdout)))
    assert [r["gpu_held_s"] for r in rows] == [str(gpu_app["gpu_held_s"]), ""]
    assert ('sessionsched_app_resource_usage_total{kind="held_s",queue="root.gpu",'
            'resource="gpu",user=') in metrics
