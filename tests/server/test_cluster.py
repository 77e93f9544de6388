"""End to end on a real local Spark standalone cluster (``spark_cluster``: 1 worker, 4 cores):
``sessionsched serve`` as a child process, real spark-submit, real drivers. Few and purposeful:
each test launches a handful of drivers at most."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import httpx
import pytest

from sessionsched.backends.spark_home import spark_submit
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import SMALL, conf_args, spark_env, stop_server_and_its_apps, wait_until

pytestmark = pytest.mark.cluster

END_S = 300  # bound on any wait for drivers to run their course on a busy 2-core machine


def config(tmp_path, spark_cluster, *, driver_slots=4, queue=None) -> dict:
    leaf = {"name": "default", "admission": "stateaware", "starting_limit": 1, **(queue or {})}
    return {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui, "driver_slots": driver_slots},
        "queues": [{"name": "root", "queues": [leaf]}],
    }


@pytest.fixture
def serve(tmp_path):
    """Start ``sessionsched serve`` with a config; every server is stopped at the end, and
    every app still live is killed first (its driver stopped by the backend)."""
    servers: list[ServerProcess] = []

    def start(cfg: dict, name: str = "server") -> ServerProcess:
        server = ServerProcess.start(cfg, tmp_path / name)
        servers.append(server)
        return server

    start.track = servers.append  # a server started some other way, cleaned up the same way
    yield start
    for server in servers:
        stop_server_and_its_apps(server)


def submit_python(server: ServerProcess, app_path, *app_args: str, **body) -> str:
    argv = [*conf_args(SMALL), str(app_path), *app_args]
    r = httpx.post(f"{server.url}/api/v1/apps", timeout=30,
                   json={"argv": argv, "cwd": str(app_path.parent), **body})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def app(server: ServerProcess, app_id: str) -> dict:
    return httpx.get(f"{server.url}/api/v1/apps/{app_id}", timeout=10).json()


def events(server: ServerProcess, app_id: str) -> list[dict]:
    return httpx.get(f"{server.url}/api/v1/apps/{app_id}/events", timeout=10).json()


def all_ended(server: ServerProcess, ids: list[str]) -> list[dict] | None:
    apps = [app(server, i) for i in ids]
    return apps if all(a["state"] in ("FINISHED", "FAILED", "KILLED") for a in apps) else None


JOINS_NEXT_CYCLE = "accepted; joins its queue at the next scheduling cycle"


def master_json(spark_cluster) -> dict:
    return httpx.get(f"{spark_cluster.master_ui}/json/", timeout=10).json()


# --- admission ------------------------------------------------------------------------------


def test_raised_priority_starts_second_with_one_driver_slot(spark_cluster, pyspark_app, serve,
                                                            tmp_path):
    """Conductor's demo, case 1: one driver slot, three apps submitted, the third's priority
    raised while the first runs: the third starts second."""
    server = serve(config(tmp_path, spark_cluster, driver_slots=1), "case1")
    ids = [submit_python(server, pyspark_app, "--tasks", "1", "--task-s", "1", "--hold-s", "4",
                         name=f"case1-{n}") for n in (1, 2, 3)]
    wait_until(lambda: app(server, ids[0])["state"] in ("STARTING", "RUNNING"), 60,
               "the first app to be launched")
    assert [app(server, i)["state"] for i in ids[1:]] == ["ACCEPTED", "ACCEPTED"]
    r = httpx.post(f"{server.url}/api/v1/apps/{ids[2]}/priority", json={"priority": 9000},
                   timeout=30)
    assert (r.status_code, r.json()["position"]) == (200, 1)

    first, second, third = wait_until(lambda: all_ended(server, ids), END_S, "all three to end")
    assert [a["state"] for a in (first, second, third)] == ["FINISHED"] * 3
    assert [a["exit_code"] for a in (first, second, third)] == [0, 0, 0]
    # Launch order 1, 3, 2 — and one driver at a time (one slot).
    assert first["started_at"] < third["started_at"] < second["started_at"]
    assert third["started_at"] >= first["finished_at"]
    assert second["started_at"] >= third["finished_at"]


def test_stateaware_launches_the_next_app_only_once_the_first_has_an_executor(
        spark_cluster, pyspark_app, serve, tmp_path):
    server = serve(config(tmp_path, spark_cluster), "stateaware")
    a = submit_python(server, pyspark_app, "--tasks", "1", "--task-s", "1", name="sa-1")
    b = submit_python(server, pyspark_app, "--tasks", "1", "--task-s", "1", name="sa-2")
    first = wait_until(lambda: (x := app(server, a))["state"] == "STARTING" and x, 60,
                       "the first app to start")
    # Driver slots are free (4), yet the second waits for the first's executor. It may have
    # arrived after the cycle that launched the first: wait for a cycle to have placed it.
    waiting = wait_until(lambda: (x := app(server, b))["reason"] != JOINS_NEXT_CYCLE and x, 30,
                         "a scheduling cycle to place the second app")
    assert waiting["state"] == "ACCEPTED"
    assert waiting["reason"] == "1 app(s) starting in root.default (starting_limit 1)"
    first, second = wait_until(lambda: all_ended(server, [a, b]), END_S, "both to end")
    assert (first["state"], second["state"]) == ("FINISHED", "FINISHED")
    assert first["first_executor_at"] is not None
    assert second["started_at"] >= first["first_executor_at"] > first["started_at"]
    kinds = [(e["kind"], e["detail"]) for e in events(server, a)]
    assert ("state", "STARTING -> RUNNING: first executor registered") in kinds


# --- unmodified spark-submit in REST cluster mode --------------------------------------------


def spark_submit_run(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([spark_submit(), *args], capture_output=True, text=True,
                          env=spark_env(), timeout=timeout_s, stdin=subprocess.DEVNULL)


def test_spark_submit_rest_create_status_update_kill(spark_cluster, jvm_app_jar, serve,
                                                     tmp_path):
    server = serve(config(tmp_path, spark_cluster, queue={"max_running_apps": 1}), "rest")
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
    r = httpx.post(f"{server.url}/v1/submissions/update/{sid}", timeout=30,
                   json={"action": "UpdateSubmissionRequest", "priority": "9000"})
    assert r.json()["message"] == f"Update request for driver {sid} submitted."
    spark_app_id = wait_until(lambda: app(server, sid)["spark_app_id"], 60,
                              "the Spark application id")
    r = httpx.post(f"{server.url}/v1/submissions/update/{spark_app_id}", timeout=30,
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


# --- restart --------------------------------------------------------------------------------


def test_a_running_driver_is_adopted_after_a_crash_not_launched_again(spark_cluster,
                                                                      pyspark_app, serve,
                                                                      tmp_path):
    server = serve(config(tmp_path, spark_cluster), "before")
    app_id = submit_python(server, pyspark_app, "--tasks", "1", "--task-s", "1",
                           "--hold-s", "20", name="survivor")
    wait_until(lambda: app(server, app_id)["state"] == "RUNNING", 120, "the app to run")
    os.killpg(server.proc.pid, signal.SIGKILL)  # the crash
    server.proc.wait(10)

    # The same config (same port, same state directory) again.
    with open(server.log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "sessionsched.cli", "serve", "--config",
                                 str(server.config_path)], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    again = ServerProcess(proc, server.url, server.config_path, server.log_path)
    serve.track(again)  # stopped (its live apps killed first) however the test ends
    again.wait_ready(60)
    adopted = app(again, app_id)
    assert adopted["state"] == "RUNNING"
    ended = wait_until(lambda: all_ended(again, [app_id]), END_S, "the adopted app to end")
    assert (ended[0]["state"], ended[0]["exit_code"]) == ("FINISHED", 0)
    kinds = [e["kind"] for e in events(again, app_id)]
    assert kinds.count("launch") == 1 and "adopted" in kinds
    # The cluster saw one application of that name: it was not launched twice.
    names = [a["name"] for a in master_json(spark_cluster)["activeapps"]
             + master_json(spark_cluster)["completedapps"]]
    assert names.count("survivor") == 1
