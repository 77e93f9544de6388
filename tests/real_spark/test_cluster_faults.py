"""The cluster failing under a running scheduler, for real: a ``sessionsched serve``
process on its own small ``LocalCluster`` (1 worker; every port fixed in the test range, so the
master and the worker come back where they were), JVM cluster-mode drivers (``SleepApp``)
created through the scheduler's Spark REST server, and a Python client-mode driver.

1. The worker JVM is killed (SIGKILL) while a cluster-mode driver and the client-mode driver's
   executor run on it: the master drops the worker and ends the cluster-mode driver, whose app
   is FAILED with a reason naming it; the client-mode driver waits for executors; ``/health``
   is ``degraded``; a submission is acknowledged and waits with a reason; nothing is launched.
2. The master JVM is killed (SIGKILL): ``/health`` says the cluster is unreachable; a submission
   is acknowledged, stored and ACCEPTED.
3. The master and a worker start again on the same ports: each waiting app is launched once (the
   scheduler's launch events and the new master's drivers agree) and FINISHES; the failed one
   is not launched again; the client-mode driver, whose application the new master does not
   know (it would wait for executors forever), is stopped and FAILED with a reason saying so.
   Nothing lost, nothing launched twice, nothing stuck.

Not the session's ``spark_cluster``: its processes are killed here.
"""

from __future__ import annotations

import os
import re
import signal

import pytest

from sessionsched.backends.local import LocalCluster
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.service.reads import JOINS_NEXT_CYCLE
from sessionsched.store.store import Store
from tests.sparkcluster import (
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

JVM_S = 180  # bound on a JVM start (master, worker, a driver with its executor), loaded 2 cores
NOTICE_S = 60  # bound on the scheduler noticing a change of the cluster (a cycle is 100 ms)


@pytest.fixture
def own_cluster(tmp_path):
    """A started 1-worker cluster on fixed ports; stopped by PID at the end, however the test
    ends (also the groups of processes killed by the test: orphaned drivers and executors)."""

    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        taken = {port, rest_port, ui_port}
        worker_ports = (rpc := free_port(taken), free_port(taken | {rpc}))
        # 6 cores advertised: two drivers with an executor each fit under the default
        # admission's driver share (0.4 of the cores), so the last phase runs them at once.
        return LocalCluster(tmp_path / "cluster", workers=1, cores=6, memory="4g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S,
                            worker_ports=worker_ports)

    with started_cluster(make) as cluster:
        yield cluster


def create(server: ServerProcess, jar, name: str, task_ms: int) -> str:
    """A Spark REST create (as spark-submit sends it) of SleepApp: one task of TASK_MS."""
    body = {
        "action": "CreateSubmissionRequest", "appResource": f"file:{jar}",
        "mainClass": "SleepApp", "appArgs": [str(task_ms), "1", "0"],
        "clientSparkVersion": "4.0.1", "environmentVariables": {"SPARK_ENV_LOADED": "1"},
        "sparkProperties": {"spark.app.name": name, "spark.submit.deployMode": "cluster",
                            "spark.jars": f"file:{jar}", "spark.driver.supervise": "false",
                            # one executor: a standalone app takes every free core by default
                            "spark.cores.max": "1", **SMALL},
    }
    r = HTTP.post(f"{server.url}/v1/submissions/create", json=body, timeout=30)
    assert (r.status_code, r.json()["success"]) == (200, True), r.text
    return r.json()["submissionId"]


def app(server: ServerProcess, app_id: str) -> dict:
    return HTTP.get(f"{server.url}/api/v1/apps/{app_id}", timeout=10).json()


def health(server: ServerProcess) -> dict:
    return HTTP.get(f"{server.url}/api/v1/health", timeout=10).json()


def submit_python(server: ServerProcess, app_path, *app_args: str, name: str) -> str:
    """A client-mode PySpark app through the native API, with one executor."""
    argv = [*conf_args({**SMALL, "spark.cores.max": "1"}), str(app_path), *app_args]
    r = HTTP.post(f"{server.url}/api/v1/apps", timeout=30,
                   json={"argv": argv, "cwd": str(app_path.parent), "name": name})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def launches(server: ServerProcess, app_id: str) -> list[str]:
    """The handle of each launch event of the app (a cluster driver's: the master's id)."""
    events = HTTP.get(f"{server.url}/api/v1/apps/{app_id}/events", timeout=10).json()
    return [re.fullmatch(r"driver launched \((?:cluster-driver|process) (\S+)\)", e["detail"])[1]
            for e in events if e["kind"] == "launch"]


def placed(server: ServerProcess, app_id: str) -> dict | None:
    """The app once a scheduling cycle has placed it (its reason is no longer the
    acknowledgement's)."""
    a = app(server, app_id)
    return a if a["reason"] != JOINS_NEXT_CYCLE else None


def master_drivers(cluster: LocalCluster) -> dict[str, str]:
    """Every driver the (current) master knows: id -> state."""
    view = HTTP.get(f"{cluster.master_ui}/json/", timeout=10).json()
    return {d["id"]: d["state"] for d in view["activedrivers"] + view["completeddrivers"]}


def kill(cluster: LocalCluster, role: str) -> None:
    """SIGKILL the JVM itself (not its process group): what it started is left to notice."""
    os.kill(cluster.process(role).pid, signal.SIGKILL)


def test_killed_worker_and_master_lose_nothing_and_launch_nothing_twice(
        own_cluster, jvm_app_jar, pyspark_app, tmp_path):
    state = tmp_path / "state"
    config = {
        "server": {"port": free_port(), "state_dir": str(state), "cycle_ms": 100},
        "cluster": {"backend": "standalone", "master": own_cluster.master_url,
                    "master_ui": own_cluster.master_ui, "driver_slots": 4},
        "queues": [{"name": "root", "queues": [{"name": "default"}]}],  # default admission
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        wait_until(lambda: health(server)["status"] == "ok", NOTICE_S, "health to say ok")

        # 1. The worker dies under a running cluster-mode driver and a client-mode app.
        doomed = create(server, jvm_app_jar, "doomed", 120_000)
        orphan = submit_python(server, pyspark_app, "--tasks", "1", "--task-s", "1",
                               "--hold-s", "600", name="orphan")
        wait_until(lambda: all(app(server, i)["state"] == "RUNNING" for i in (doomed, orphan)),
                   JVM_S, "both drivers to run with an executor")
        [doomed_driver] = launches(server, doomed)
        orphan_spark_id = app(server, orphan)["spark_app_id"]
        kill(own_cluster, "worker-1")
        h = wait_until(lambda: (h := health(server))["status"] == "degraded" and h, NOTICE_S,
                       "health to say degraded")
        assert h["cluster_reachable"] is True
        assert "offers no cores" in h["cluster"]
        failed = wait_until(lambda: (a := app(server, doomed))["state"] == "FAILED" and a,
                            NOTICE_S, "the app whose driver died with the worker to fail")
        assert failed["exit_code"] == 1
        assert failed["reason"] == (f"the master ended driver {doomed_driver} in state ERROR: "
                                    "its worker was lost, or it could not be started")
        assert master_drivers(own_cluster)[doomed_driver] == "ERROR"

        waiting = create(server, jvm_app_jar, "waiting", 500)
        w = wait_until(lambda: placed(server, waiting), NOTICE_S, "a cycle to place it")
        assert w["state"] == "ACCEPTED", w
        assert w["reason"].startswith("cluster reachable but offers no cores"), w
        assert launches(server, waiting) == []
        assert list(master_drivers(own_cluster)) == [doomed_driver]  # none into nowhere
        assert app(server, orphan)["state"] == "RUNNING"  # waiting for executors

        # 2. The master dies.
        kill(own_cluster, "master")
        h = wait_until(lambda: (h := health(server))["cluster_reachable"] is False and h,
                       NOTICE_S, "health to say the cluster is unreachable")
        assert h["status"] == "degraded" and "cluster unreachable" in h["cluster"]
        metrics = HTTP.get(f"{server.url}/metrics", timeout=10).text
        assert "\nsessionsched_cluster_reachable 0.0\n" in metrics
        late = create(server, jvm_app_jar, "late", 500)
        assert "cluster unreachable" in wait_until(
            lambda: placed(server, late), NOTICE_S, "a cycle to place it")["reason"]
        store = Store(f"sqlite:///{state / 'sessionsched.db'}")
        try:
            stored = {i: store.get_app(i) for i in (waiting, late)}
        finally:
            store.close()
        assert {i: a.state.value for i, a in stored.items() if a} == {
            waiting: "ACCEPTED", late: "ACCEPTED"}
        assert launches(server, waiting) == launches(server, late) == []

        # 3. Master and worker back on the same ports.
        own_cluster.stop()  # stray drivers or executors of the killed worker, if any
        own_cluster.start()
        wait_until(lambda: all(app(server, i)["state"] in ("FINISHED", "FAILED", "KILLED")
                               for i in (waiting, late, orphan)), JVM_S, "every app to end")
        apps = {a["id"]: a for a in HTTP.get(f"{server.url}/api/v1/apps", timeout=10).json()}
        assert set(apps) == {doomed, waiting, late, orphan}  # nothing lost
        assert [(apps[i]["state"], apps[i]["exit_code"]) for i in (waiting, late)] == [
            ("FINISHED", 0), ("FINISHED", 0)]
        assert (apps[doomed]["state"], apps[doomed]["exit_code"]) == ("FAILED", 1)
        assert launches(server, doomed) == [doomed_driver]  # not launched again
        assert apps[orphan]["state"] == "FAILED"
        assert apps[orphan]["reason"] == (
            f"the master forgot application {orphan_spark_id} (restarted?): its driver could "
            "get no executors, so it was stopped")
        assert len(launches(server, orphan)) == 1
        [waiting_driver], [late_driver] = launches(server, waiting), launches(server, late)
        # The new master ran exactly those two drivers, once each.
        assert master_drivers(own_cluster) == {waiting_driver: "FINISHED",
                                               late_driver: "FINISHED"}
        assert health(server)["status"] == "ok"
    finally:
        stop_server_and_its_apps(server)
