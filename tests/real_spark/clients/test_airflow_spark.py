"""Apache Airflow's Spark provider (SparkSubmitOperator, cluster deploy mode) against the
scheduler, unmodified: it submits with spark-submit, follows the driver by reading our status
answers line by line (curl), and kills with ``spark-submit --kill``."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

DRIVER = re.compile(r"driver-\d{14}-\d{4}")


def our_app(sched, app_id: str) -> dict:
    return HTTP.get(f"{sched.url}/api/v1/apps/{app_id}", timeout=10).json()


def masters_driver_id(sched, app_id: str) -> str:
    """The Spark master's own id of the driver our app became (its launch handle)."""
    db = Path(sched.config_path).parent.parent / "state" / "sessionsched.db"
    with sqlite3.connect(db) as c:
        (handle,) = c.execute("select handle from apps where id = ?", (app_id,)).fetchone()
    return json.loads(handle)["ref"]


def test_operator_follows_a_driver_to_finished(airflow, sched, spark_cluster, jvm_app_jar):
    out, log = airflow("spark", str(jvm_app_jar), "SleepApp", "500", "1", "0")
    assert (out["status"], out["error"]) == ("FINISHED", None), log[-3000:]
    assert DRIVER.fullmatch(out["driver"])
    app = our_app(sched, out["driver"])
    assert (app["state"], app["kind"]) == ("FINISHED", "rest")
    # Our status answer and the master's for the same driver: same worker, same layout.
    ours = HTTP.get(f"{sched.url}/v1/submissions/status/{out['driver']}", timeout=10)
    theirs = HTTP.get(f"{spark_cluster.rest_url}/v1/submissions/status/"
                       f"{masters_driver_id(sched, out['driver'])}", timeout=10)
    ours_body, theirs_body = ours.json(), theirs.json()
    assert theirs_body["driverState"] == ours_body["driverState"] == "FINISHED"
    for key in ("workerId", "workerHostPort", "success", "serverSparkVersion"):
        assert ours_body[key] == theirs_body[key], key
    driver_line = next(line for line in ours.text.splitlines() if "driverState" in line)
    assert driver_line == '  "driverState" : "FINISHED",'


def test_a_failing_app_fails_the_task(airflow, sched, jvm_app_jar):
    out, log = airflow("spark", str(jvm_app_jar), "SleepApp", "100", "1", "3")
    assert out["status"] == "FAILED", log[-3000:]
    assert out["error"] == f"RuntimeError: Driver {out['driver']} exited with status FAILED"
    assert our_app(sched, out["driver"])["state"] == "FAILED"


def test_on_kill_kills_the_driver(airflow, sched, jvm_app_jar):
    out, log = airflow("spark-kill", str(jvm_app_jar), "SleepApp", "120000", "1", "0")
    assert out["killed_while"] == "RUNNING", log[-3000:]
    assert out["status"] == "KILLED", log[-3000:]
    assert our_app(sched, out["driver"])["state"] == "KILLED"
