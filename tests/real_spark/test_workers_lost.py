"""Workers are real, on a real standalone cluster of two small workers (2 cores, 2g each)
started by the test, under a ``sessionsched serve`` process:

1. An executor larger than either worker - 3 cores, or 3g - fits the
   cluster's sum (4 cores, 4g), never one worker: it is refused at submission with the
   number, and nothing is launched (before, it was admitted and its driver waited forever
   with 0 cores).
2. A worker is stopped under a queued app that needs both workers (2 executors of 2 cores,
   minExecutors 2): the app is not refused but held with ``does_not_fit_now``, and the app
   behind it - which fits the worker left - starts and finishes while it waits.

Not the session's ``spark_cluster``: a worker is stopped here.
"""

from __future__ import annotations

import pytest

from sessionsched.backends import procs
from sessionsched.backends.local import LocalCluster
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import (
    DYNAMIC,
    SMALL,
    conf_args,
    free_port,
    master_ports,
    started_cluster,
    stop_server_and_its_apps,
    wait_until,
)
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

JVM_S = 240  # bound on JVM starts (master, 2 workers, drivers, executors) on a loaded host
NOTICE_S = 60  # bound on the scheduler noticing a change of the cluster (a cycle is 100 ms)


@pytest.fixture
def two_workers(tmp_path):
    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(tmp_path / "cluster", workers=2, cores=2, memory="2g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S)

    with started_cluster(make) as cluster:
        yield cluster


def submit(server: ServerProcess, app_path, props: dict, *args: str, name: str):
    argv = [*conf_args({**SMALL, **props}), str(app_path), *args]
    return HTTP.post(f"{server.url}/api/v1/apps", timeout=30,
                      json={"argv": argv, "cwd": str(app_path.parent), "name": name})


def app(server: ServerProcess, app_id: str) -> dict:
    return HTTP.get(f"{server.url}/api/v1/apps/{app_id}", timeout=10).json()


def test_per_worker_fit_and_a_lost_worker(two_workers, pyspark_app, tmp_path):
    config = {
        "server": {"port": free_port(), "state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {"backend": "standalone", "master": two_workers.master_url,
                    "master_ui": two_workers.master_ui, "driver_slots": 4},
        # one app at a time, in order: the apps behind wait for the first to end
        "queues": [{"name": "root", "queues": [
            {"name": "default", "policy": "fifo", "max_running_apps": 1}]}],
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        wait_until(lambda: HTTP.get(f"{server.url}/api/v1/health", timeout=10).json()
                   ["status"] == "ok", NOTICE_S, "health to say ok")

        # 1. larger than either worker: refused, with the number; nothing stored or launched
        workers = "2 workers of 2 cores/2048 MiB"
        for props, line in (
                ({"spark.executor.cores": "3"},
                 f"an executor of 3 cores/512 MiB fits no worker ({workers})"),
                ({"spark.executor.memory": "3g"},
                 f"an executor of 1 cores/3072 MiB fits no worker ({workers})")):
            r = submit(server, pyspark_app, props, name="too-big")
            assert (r.status_code, r.json()) == (400, {"detail": f"never fits: {line}"})
        assert HTTP.get(f"{server.url}/api/v1/apps", timeout=10).json() == []

        # 2. a worker stopped under a queued app
        # the first app runs until the test lets it end, once the app behind it is held
        release = tmp_path / "release-first"
        first = submit(server, pyspark_app, {"spark.cores.max": "1"}, "--tasks", "1",
                       "--task-s", "1", "--until", str(release), name="first").json()["id"]
        wait_until(lambda: app(server, first)["state"] == "RUNNING", JVM_S,
                   "the first app to run")
        both = {**DYNAMIC, "spark.executor.cores": "2", "spark.dynamicAllocation.minExecutors": "2"}
        big = submit(server, pyspark_app, both, "--tasks", "2", name="big").json()["id"]
        small = submit(server, pyspark_app, {"spark.cores.max": "1"}, "--tasks", "1",
                       "--task-s", "1", name="small").json()["id"]
        assert app(server, big)["state"] == app(server, small)["state"] == "ACCEPTED"
        procs.stop_group(two_workers.process("worker-2"), 10)  # by PID, with its executors
        held = wait_until(lambda: "as it is now" in (a := app(server, big))["reason"] and a,
                          NOTICE_S, "the big app to be held: it does not fit now")
        assert held["state"] == "ACCEPTED"
        assert held["reason"] == (
            "does not fit the cluster as it is now: 2 executor(s) of 2 cores/512 MiB"
            " (minExecutors 2) do not fit the cluster: its workers hold 1"
            " (1 worker of 2 cores/2048 MiB)")
        assert app(server, first)["state"] == "RUNNING"  # until released, the small app waits
        release.touch()
        # the app behind it goes ahead once the first ends, on the worker left, and finishes
        done = wait_until(lambda: (a := app(server, small))["state"] in ("FINISHED", "FAILED")
                          and a, JVM_S, "the app behind the held one to end")
        assert (done["state"], done["exit_code"]) == ("FINISHED", 0), done
        assert app(server, first)["state"] == "FINISHED"
        still = app(server, big)
        assert (still["state"], still["started_at"]) == ("ACCEPTED", None)
        assert still["reason"] == held["reason"]
    finally:
        stop_server_and_its_apps(server)
