"""A Livy interactive session with a real Livy client (pylivy's ``LivySession``) on a real
cluster: the session waits in its queue as an app of kind ``session``, its REPL driver runs
statements with Livy's output shapes, and closing it ends the app."""

from __future__ import annotations

import pytest

from tests.sparkcluster import wait_until
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster


def test_a_pyspark_session_runs_statements(airflow, sched):
    out, log = airflow("livy-session")
    assert out.get("count") == "100", log[-3000:]
    assert out["printed"] == "hi\n42"
    assert out["error"] == ["ZeroDivisionError", "division by zero"]
    assert out["state_before_close"] == "idle"
    apps = HTTP.get(f"{sched.url}/api/v1/apps", timeout=10).json()
    (app,) = [a for a in apps if a["kind"] == "session"]
    assert (app["name"], app["priority"]) == ("repl", 6000)
    ended = wait_until(
        lambda: (a := HTTP.get(f"{sched.url}/api/v1/apps/{app['id']}", timeout=10).json())
        ["state"] in ("FINISHED", "FAILED", "KILLED") and a, 120, "the session's app to end")
    assert ended["state"] == "FINISHED"
    state = HTTP.get(f"{sched.url}/sessions/{out['session']}/state", timeout=10).json()
    assert state == {"id": out["session"], "state": "success"}
