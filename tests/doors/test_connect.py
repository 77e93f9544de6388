"""The Spark Connect door (doors/connect) with the real Spark Connect client
(``SparkSession.builder.remote``) on the real test cluster: a session is an app of kind
``connect`` in its queue with the priority its connection string asked for; it runs DataFrame
queries and a Python UDF in its own driver and ends FINISHED on ``spark.stop()``; a session
opened while its queue is full waits (its first call is held and retried, not failed) and runs
when another stops; a killed session's client gets an error naming the kill."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import free_ports, stop_server_and_its_apps, wait_until

pytestmark = pytest.mark.cluster

SESSIONSCHED = str(Path(sys.executable).with_name("sessionsched"))
# spark.* parameters of the connection string: the session's driver's Spark properties
SMALL = {"spark.executor.cores": "1", "spark.executor.memory": "512m",
         "spark.driver.memory": "512m", "spark.ui.port": "0"}


@pytest.fixture
def sched(spark_cluster, tmp_path) -> Iterator[ServerProcess]:
    """The scheduler with the Connect door; queue ``adhoc`` runs two sessions at most."""
    api_port, door_port = free_ports(2)
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100, "port": api_port},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui},
        "queues": [{"name": "root", "queues": [
            {"name": "default"},
            {"name": "adhoc", "policy": "fairshare", "max_running_apps": 2}]}],
        "connect": {"port": door_port, "hold_s": 30},
    }
    server = ServerProcess.start(config, tmp_path / "server")
    server.connect_port = config["connect"]["port"]
    try:
        yield server
    finally:
        stop_server_and_its_apps(server)


def remote(sched, **params):
    from pyspark.sql import SparkSession

    extra = "".join(f";{k}={v}" for k, v in {**SMALL, **params}.items())
    return SparkSession.builder.remote(f"sc://127.0.0.1:{sched.connect_port}/{extra}").create()


def apps(sched) -> list[dict]:
    return httpx.get(f"{sched.url}/api/v1/apps", timeout=10).json()


def app_of(sched, session) -> dict:
    sid = session.client._session_id
    return next(a for a in apps(sched) if a["kind"] == "connect" and sid[:8] in a["name"])


def ended(sched, app_id: str) -> dict:
    return wait_until(
        lambda: (a := httpx.get(f"{sched.url}/api/v1/apps/{app_id}", timeout=10).json())
        ["state"] in ("FINISHED", "FAILED", "KILLED") and a, 120, f"{app_id} to end")


def test_a_session_runs_queries_and_a_udf_and_ends_on_stop(sched):
    from pyspark.sql.functions import udf

    spark = remote(sched, user_id="alice", queue="adhoc", priority=7000)
    assert spark.range(100).selectExpr("sum(id) AS s").collect()[0].s == 4950

    @udf("int")
    def plus_one(x):
        return x + 1

    rows = spark.range(3).select(plus_one("id").alias("y")).collect()
    assert [r.y for r in rows] == [1, 2, 3]
    app = app_of(sched, spark)
    assert (app["user"], app["queue"], app["priority"], app["state"]) == \
        ("alice", "root.adhoc", 7000, "RUNNING")
    listed = subprocess.run([SESSIONSCHED, "apps", "--server", sched.url], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    (line,) = [x for x in listed.stdout.splitlines() if app["id"] in x]
    assert "connect" in line and "7000" in line, listed.stdout
    spark.stop()
    assert ended(sched, app["id"])["state"] == "FINISHED"


def test_a_session_waits_while_its_queue_is_full_and_a_killed_one_is_told(sched):
    first = remote(sched, user_id="alice", queue="adhoc")
    second = remote(sched, user_id="bob", queue="adhoc")
    assert first.range(10).count() == 10
    assert second.range(20).count() == 20
    third = remote(sched, user_id="carol", queue="adhoc")
    got: dict = {}
    waiter = threading.Thread(target=lambda: got.setdefault("n", third.range(30).count()),
                              daemon=True)
    waiter.start()
    queued = wait_until(lambda: next((a for a in apps(sched) if a["user"] == "carol"
                                      and a["state"] == "ACCEPTED"
                                      and a["position"] is not None), None), 60,
                        "the third session's app to wait in its queue (a cycle placed it)")
    assert queued["position"] == 1
    waiter.join(5)  # held (hold_s 30), then retried by the client: waiting, not failed
    assert waiter.is_alive() and not got
    first.stop()
    waiter.join(240)
    assert got == {"n": 30}

    killed = app_of(sched, second)
    out = subprocess.run([SESSIONSCHED, "kill", "--server", sched.url, killed["id"]],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert ended(sched, killed["id"])["state"] == "KILLED"
    with pytest.raises(Exception) as e:
        second.range(5).count()
    assert "was killed" in str(e.value) and killed["id"] in str(e.value)
    third.stop()
