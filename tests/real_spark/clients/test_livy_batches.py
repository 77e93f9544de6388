"""Airflow's Livy provider (``LivyHook``, the client ``LivyOperator`` uses) against the
scheduler's Livy API on a real cluster: a batch waits in its queue like any app, runs, and is
followed to ``success``; a failing one ends ``dead``; ``delete_batch`` kills a running one."""

from __future__ import annotations

import pytest

from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

TERMINAL = ("success", "dead", "killed")


def test_a_batch_runs_to_success(airflow, sched, pyspark_app):
    out, log = airflow("livy", str(pyspark_app), "--tasks", "1", "--task-s", "0.2")
    assert out["states"][-1] == "success", log[-3000:]
    # Only Livy's own state names, in lifecycle order.
    order = ["not_started", "starting", "running", "success"]
    assert [order.index(s) for s in out["states"]] == sorted(order.index(s)
                                                            for s in out["states"])
    batch = out["batch"]
    assert batch["id"] == out["id"] and batch["appId"].startswith("app-")
    assert batch["appInfo"]["driverLogUrl"].endswith(f"/api/v1/apps/{batch['submissionId']}/log")
    assert out["logs"]["from"] == 0 and out["logs"]["total"] > 0
    assert any(line == f"SPARK_APP_ID {batch['appId']}" for line in out["logs"]["log"])
    native = HTTP.get(f"{sched.url}/api/v1/apps/{batch['submissionId']}", timeout=10).json()
    assert (native["state"], native["priority"], native["spark_app_id"]) == (
        "FINISHED", 7000, batch["appId"])


def test_a_failing_batch_is_dead(airflow, pyspark_app):
    out, log = airflow("livy", str(pyspark_app), "--no-spark", "--exit-code", "3")
    assert out["states"][-1] == "dead", log[-3000:]
    assert out["batch"]["schedulerState"] == "FAILED"


def test_delete_batch_kills_a_running_batch(airflow, sched, pyspark_app):
    out, log = airflow("livy-kill", str(pyspark_app), "--tasks", "1", "--hold-s", "300")
    assert "running" in out["states"] and out["states"][-1] == "killed", log[-3000:]
    native = HTTP.get(f"{sched.url}/api/v1/apps/{out['batch']['submissionId']}",
                       timeout=10).json()
    assert native["state"] == "KILLED"
