"""Two GPU apps in one ``fairshare`` queue split a real standalone worker's GPUs: a worker of
4 cores and 4 GPUs (``spark.worker.resource.gpu.amount=4`` and a discovery script printing
fixed addresses), two apps of ``examples/apps/gpu_tasks.py`` (executors of 1 core and 1 GPU,
tasks of 1 GPU, dynamic allocation, eight tasks each: each wants all four GPUs) submitted
through the scheduler. While both run each holds 2 executors: the scheduler's record says so,
and the worker's own ``/json/`` gives each app's executors two GPU addresses, the two apps'
disjoint; the tasks read their addresses from ``TaskContext.resources()``; both finish.

A cluster of its own (``started_cluster``), its one worker given the GPUs through
``SPARK_WORKER_OPTS`` (read for the worker's JVM only), as tests/real_spark/test_worker_gpus.py
gives them by a properties file.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import httpx
import pytest

from sessionsched.backends.local import LocalCluster
from sessionsched.backends.master import MasterClient
from sessionsched.client import SchedulerClient, Submission
from sessionsched.client.errors import ApiError
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import (
    SMALL,
    gpu_discovery_script,
    master_ports,
    started_cluster,
    stop_server_and_its_apps,
    wait_until,
)

pytestmark = pytest.mark.cluster

JVM_S = 240  # bound on JVM starts on a loaded host
APP = Path(__file__).resolve().parents[2] / "examples" / "apps" / "gpu_tasks.py"
TASK_LINE = re.compile(r"^gpu-\w: task \d+: gpu (\S*)$", re.M)


def gpus_by_app(worker_ui: str) -> dict[str, list[str]]:
    """Each app's GPU addresses over its executors on the worker, from the worker's /json/."""
    data = httpx.get(f"{worker_ui.rstrip('/')}/json/", timeout=5).json()
    held: dict[str, list[str]] = {}
    for e in data.get("executors", []):
        gpu = (e.get("resources") or {}).get("gpu") or {}
        held.setdefault(e["appid"], []).extend(gpu.get("addresses", []))
    return held


def test_two_gpu_apps_in_a_fairshare_queue_split_the_gpus(tmp_path, monkeypatch):
    script = gpu_discovery_script(tmp_path, 4)
    monkeypatch.setenv("SPARK_WORKER_OPTS", f"-Dspark.worker.resource.gpu.amount=4 "
                       f"-Dspark.worker.resource.gpu.discoveryScript={script}")

    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(tmp_path / "cluster", workers=1, cores=4, memory="3g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S)

    until = tmp_path / "done"
    start = time.monotonic()

    def mark(what: str) -> None:  # where the time goes, shown with -s or when it fails
        print(f"{time.monotonic() - start:5.1f}s {what}", flush=True)

    with started_cluster(make) as cluster:
        mark("cluster started")
        master = MasterClient(cluster.master_ui, timeout_s=5.0)
        server = None
        try:
            (worker,) = master.read_master().alive_workers()
            assert worker.resources == (("gpu", 4),), "the worker did not declare its GPUs"
            state = tmp_path / "server"
            server = ServerProcess.start({
                "server": {"state_dir": str(state / "state"), "cycle_ms": 200,
                           "heartbeat_s": 1.0},
                "cluster": {"backend": "standalone", "master": cluster.master_url,
                            "master_ui": cluster.master_ui, "driver_slots": 2},
                "defaults": {"queue": "root.gpu"},
                "queues": [{"name": "root", "queues": [{"name": "gpu", "policy": "fairshare"}]}],
            }, state)
            api = SchedulerClient(server.url)
            mark("server started")
            props = {**SMALL, "spark.driver.host": "127.0.0.1",
                     "spark.pyspark.python": sys.executable,
                     "spark.executor.resource.gpu.amount": "1",
                     "spark.task.resource.gpu.amount": "1",
                     "spark.executor.resource.gpu.discoveryScript": str(script)}
            ids = []
            for name in ("gpu-a", "gpu-b"):
                argv = ["--name", name]
                for k, v in props.items():
                    argv += ["--conf", f"{k}={v}"]
                argv += [str(APP), "--tasks", "8", "--task-s", "1", "--until", str(until)]
                ids.append(api.submit(Submission(tuple(argv), str(tmp_path),
                                                 queue="root.gpu")).id)

            def log(app_id: str) -> str:
                try:
                    return api.log(app_id, tail=2000)
                except ApiError:  # no driver log yet: the app is still queued
                    return ""

            def split() -> dict[str, list[str]] | None:
                apps = [api.app(i) for i in ids]
                for a in apps:
                    if a.state.terminal:
                        pytest.fail(f"{a.name} ended: {log(a.id)}")
                if [a.executors for a in apps] != [2, 2] or not all(a.spark_app_id for a in apps):
                    return None
                held = gpus_by_app(worker.webui)
                mine = {a.spark_app_id: sorted(held.get(a.spark_app_id, [])) for a in apps}
                return mine if all(len(g) == 2 for g in mine.values()) else None

            held = wait_until(split, 2 * JVM_S, "both apps to hold 2 GPU executors at once",
                              interval_s=0.3)
            mark(f"both hold 2 GPU executors: {held}")
            # Two GPUs each, the two apps' disjoint: all four in use.
            first, second = held.values()
            assert sorted(first + second) == ["0", "1", "2", "3"], held
            until.touch()
            wait_until(lambda: all(api.app(i).state.terminal for i in ids), 120,
                       "both apps to end")
            mark("both ended")
            for i in ids:
                app, text = api.app(i), log(i)
                assert app.state.value == "FINISHED", text
                # The tasks read one GPU address each from TaskContext.resources().
                seen = TASK_LINE.findall(text)
                assert seen and all(g in ("0", "1", "2", "3") for g in seen), text
            api.close()
        finally:
            if server is not None:
                stop_server_and_its_apps(server)
            master.close()
