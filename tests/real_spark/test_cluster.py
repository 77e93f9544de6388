"""End to end on a real local Spark standalone cluster (``spark_cluster``: 1 worker, 4 cores):
``sessionsched serve`` as a child process, unmodified spark-submit in REST cluster mode, real
JVM drivers. What the service decides (admission, priority jumps, one driver slot, a restart
that adopts running drivers) is checked stepped by hand on the memory cluster
(``test_cycles.py``); this file keeps what only Spark's own client and master can answer."""

from __future__ import annotations

import re
import subprocess

import pytest

from sessionsched.backends.spark_home import spark_submit
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import SMALL, conf_args, spark_env, stop_server_and_its_apps, wait_until
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster


@pytest.fixture
def server(tmp_path, spark_cluster):
    """``sessionsched serve`` on the test cluster, one queue running one app at a time; every
    app still live is killed at the end (its driver stopped by the backend), then the server."""
    leaf = {"name": "default", "admission": "stateaware", "starting_limit": 1,
            "max_running_apps": 1}
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui, "driver_slots": 4},
        "queues": [{"name": "root", "queues": [leaf]}],
    }
    server = ServerProcess.start(config, tmp_path / "rest")
    try:
        yield server
    finally:
        stop_server_and_its_apps(server)


def app(server: ServerProcess, app_id: str) -> dict:
    return HTTP.get(f"{server.url}/api/v1/apps/{app_id}", timeout=10).json()


def events(server: ServerProcess, app_id: str) -> list[dict]:
    return HTTP.get(f"{server.url}/api/v1/apps/{app_id}/events", timeout=10).json()


def master_json(spark_cluster) -> dict:
    return HTTP.get(f"{spark_cluster.master_ui}/json/", timeout=10).json()


# --- unmodified spark-submit in REST cluster mode --------------------------------------------


def spark_submit_run(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([spark_submit(), *args], capture_output=True, text=True,
                          env=spark_env(), timeout=timeout_s, stdin=subprocess.DEVNULL)


def test_spark_submit_rest_create_status_update_kill(spark_cluster, jvm_app_jar, server):
    master = "spark://" + server.url.removeprefix("http://")
    submit_args = ["--master", master, "--deploy-mode", "cluster",
                   "--conf", "spark.master.rest.enabled=true", *conf_args(SMALL),
                   "--class", "SleepApp", str(jvm_app_jar)]

    created = spark_submit_run(*submit_args, "60000", "1", "0")
    assert created.returncode == 0, created.stderr[-2000:]
    out = created.stdout + created.stderr
    sid = re.search(r"Submission successfully created as (driver-\d{14}-\d{4})", out).group(1)
    assert f"State of driver {sid} is now" in out
    running = wait_until(lambda: (a := app(server, sid))["state"] == "RUNNING" and a, 120,
                         "the JVM driver to get an executor")
    assert running["kind"] == "rest"

    # A second one queues behind it (max_running_apps 1) and is killed while queued.
    queued = spark_submit_run(*submit_args, "60000", "1", "0")
    qid = re.search(r"created as (driver-\d{14}-\d{4})",
                    queued.stdout + queued.stderr).group(1)
    assert app(server, qid)["state"] == "ACCEPTED"
    killed = spark_submit_run("--master", master, "--kill", qid)
    assert f"{qid} is killed successfully" in killed.stdout + killed.stderr
    assert app(server, qid)["state"] == "KILLED"

    status = spark_submit_run("--master", master, "--status", sid)
    assert status.returncode == 0, status.stderr[-2000:]

    # Conductor's update: by driver id, then by the Spark application id.
    r = HTTP.post(f"{server.url}/v1/submissions/update/{sid}", timeout=30,
                   json={"action": "UpdateSubmissionRequest", "priority": "9000"})
    assert r.json()["message"] == f"Update request for driver {sid} submitted."
    spark_app_id = wait_until(lambda: app(server, sid)["spark_app_id"], 60,
                              "the Spark application id")
    r = HTTP.post(f"{server.url}/v1/submissions/update/{spark_app_id}", timeout=30,
                   json={"action": "UpdateSubmissionRequest", "priority": "10000"})
    assert r.json()["message"] == f"Update request for application {spark_app_id} submitted."
    assert app(server, sid)["priority"] == 10000
    changes = [re.sub(r"127\.0\.0\.1:\d+", "HOST:PORT", e["detail"])
               for e in events(server, sid) if e["kind"] == "priority"]
    assert changes == [
        "Admin updated the priority from 5000 to 9000 (Spark REST update from HOST:PORT)",
        "Admin updated the priority from 9000 to 10000 (Spark REST update from HOST:PORT)"]

    # Kill of the running driver, through the master.
    launches = [e["detail"] for e in events(server, sid) if e["kind"] == "launch"]
    master_driver = re.fullmatch(r"driver launched \(cluster-driver (\S+)\)", launches[0])[1]
    killed = spark_submit_run("--master", master, "--kill", sid)
    assert f"{sid} is killed successfully" in killed.stdout + killed.stderr
    assert app(server, sid)["state"] == "KILLED"
    wait_until(lambda: {d["id"]: d["state"] for d in master_json(spark_cluster)
                        ["completeddrivers"]}.get(master_driver) == "KILLED", 60,
               "the master to show the driver killed")
    # The queued one was never launched: no driver on the master for it.
    assert [e for e in events(server, qid) if e["kind"] == "launch"] == []
    again = spark_submit_run("--master", master, "--kill", sid)
    assert f"Driver {sid} has already finished or does not exist" in again.stdout + again.stderr
