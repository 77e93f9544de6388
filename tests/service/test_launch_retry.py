"""Launches that fail for a transient reason (the master cannot be reached) are tried again
with back-off before an app is FAILED; a permanent refusal fails at once; a kill ends the
waiting; a restart during the back-off goes on with the retries (stepped, and a real
``sessionsched serve`` killed in its back-off). The service stepped by hand on the memory
cluster (``stepped_service.py``), whose ``launchFailures`` property makes an app's first
launches fail as an unreachable master."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.memory import LAUNCH_FAILURES, WORK, MemoryBackend
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.server.app import create_app
from tests.sparkcluster import free_port, wait_until
from tests.support.http_client import HTTP
from tests.support.server_helpers import make_config, rows
from tests.support.stepped_service import Clock, Stepped


def trail(s, app_id: str, kind: str) -> list[str]:
    return [e["detail"] for e in s.client.get(f"/api/v1/apps/{app_id}/events").json()
            if e["kind"] == kind]


@pytest.mark.parametrize("failures, state, retries", [
    (2, "FINISHED", 2),
    (99, "FAILED", 5),
], ids=["two failures: launched at the third attempt", "unreachable for good: FAILED after 6"])
def test_a_launch_failing_for_a_transient_reason_is_tried_again(stepped, cluster, failures,
                                                                 state, retries):
    with stepped(admission="none") as s:
        app_id = s.submit("flaky", **{LAUNCH_FAILURES: str(failures), WORK: "1"})
        s.cycle()
        waiting = s.app(app_id)
        assert waiting["state"] == "STARTING" and app_id not in cluster.apps
        app = s.until(app_id, state, step_s=1.0)
        tried = trail(s, app_id, "retry")
        assert len(tried) == retries
        assert tried[0] == ("launch failed, tried again: the memory cluster's master cannot be "
                            f"reached (launch 1 of {app_id}; {LAUNCH_FAILURES}={failures}); "
                            "attempt 1 of 6, next in 1s")
        if state == "FINISHED":
            assert len(trail(s, app_id, "launch")) == 1  # launched once
            assert app["exit_code"] == 0
        else:
            assert app_id not in cluster.apps
            assert app["reason"] == (f"launch failed: the memory cluster's master cannot be "
                                     f"reached (launch 6 of {app_id}; {LAUNCH_FAILURES}="
                                     f"{failures}) (gave up after 6 attempts)")


def test_a_permanent_refusal_fails_at_once_and_a_kill_ends_the_waiting(stepped, cluster):
    with stepped(admission="none") as s:
        broken = s.submit("broken", **{WORK: "soon"})
        flaky = s.submit("flaky", **{LAUNCH_FAILURES: "99"})
        s.cycle()
        s.cycle()  # the refusal's DriverExited is stepped
        app = s.app(broken)
        assert app["state"] == "FAILED" and app["reason"].startswith("launch failed: ")
        assert trail(s, broken, "retry") == []
        assert s.app(flaky)["state"] == "STARTING"
        s.done(s.service.kill(flaky))
        assert s.app(flaky)["state"] == "KILLED"
        for _ in range(40):
            s.cycle(1.0)  # past every back-off: nothing is tried any more
        assert len(trail(s, flaky, "retry")) == 1 and flaky not in cluster.apps


class Noting(MemoryBackend):
    """The memory backend, noting at each launch what the store says of the app's wait: the
    wait must be off the disk before the try (a crash during it must not try it again)."""

    def __init__(self, cluster, db):
        super().__init__(cluster)
        self.db = db
        self.waits_at_launch: list[str | None] = []

    def launch(self, launch):
        self.waits_at_launch += [w for (w,) in rows(
            self.db, f"select launch_wait from apps where id = '{launch.app_id}'")]
        return super().launch(launch)


def test_a_restart_during_the_back_off_goes_on_with_the_same_count(state_dir, db, cluster,
                                                                   tmp_path):
    (tmp_path / "job.py").write_text("print('hello')\n")
    clock = Clock()
    queues = [{"name": "root", "queues": [{"name": "default", "admission": "none"}]}]

    def start(backend) -> TestClient:
        return TestClient(create_app(make_config(state_dir, queues=queues), backend,
                                     run_cycles=False, clock=clock))

    first = Noting(cluster, db)
    with start(first) as c:
        s = Stepped(c, clock, cluster, tmp_path)
        app_id = s.submit("flaky", **{LAUNCH_FAILURES: "2", WORK: "1"})
        s.cycle()  # attempt 1 fails
        s.cycle(1.0)  # attempt 2 fails: the next in 2 s
        assert len(trail(s, app_id, "retry")) == 2
    wait = json.loads(rows(db, f"select launch_wait from apps where id = '{app_id}'")[0][0])
    assert wait == {"tries": 2, "at": clock.now + 2.0}

    # The restart: a new backend over the same cluster, whose count of this app's launches
    # starts again (two more failures), so the scheduler's own count must carry on.
    second = Noting(cluster, db)
    with start(second) as c:
        s = Stepped(c, clock, cluster, tmp_path)
        s.cycle()  # not due yet
        assert s.app(app_id)["state"] == "STARTING" and app_id not in cluster.apps
        app = s.until(app_id, "FINISHED", step_s=1.0)
        tried = [t.split("; ")[-1] for t in trail(s, app_id, "retry")]
        assert tried == ["attempt 1 of 6, next in 1s", "attempt 2 of 6, next in 2s",
                         "attempt 3 of 6, next in 4s", "attempt 4 of 6, next in 8s"]
        assert trail(s, app_id, "adopted") == [
            "launch retries resumed after a scheduler restart (2 failed so far)"]
        assert len(trail(s, app_id, "launch")) == 1 and app["exit_code"] == 0
    assert first.waits_at_launch + second.waits_at_launch == [None] * 5  # cleared before each
    assert rows(db, f"select launch_wait from apps where id = '{app_id}'") == [(None,)]


@pytest.mark.timeout(180)
def test_serve_killed_during_the_back_off_launches_the_app_once_it_is_back(tmp_path,
                                                                         monkeypatch):
    """``sessionsched serve`` (memory backend) kills itself (-9, the fault hook) right after
    the first failed launch's wait is on disk; started again, it tries the launch again with
    the count it had, the app runs to its end, and its driver was launched once."""
    fault_log = tmp_path / "faults.log"
    config = {"server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50},
              "cluster": {"backend": "memory", "workers": 1, "cores": 4, "memory": "8g",
                          "driver_start_s": 0.2, "executor_start_s": 0.2},
              "queues": [{"name": "root", "queues": [{"name": "default", "admission": "none"}]}]}
    body = {"action": "CreateSubmissionRequest", "appResource": "file:/opt/a.jar",
            "mainClass": "Main", "clientSparkVersion": "4.0.1",
            "sparkProperties": {"spark.app.name": "flaky", LAUNCH_FAILURES: "1", WORK: "0.5"}}
    monkeypatch.setenv("SESSIONSCHED_FAULT_LOG", str(fault_log))
    monkeypatch.setenv("SESSIONSCHED_FAULT_KILL", "launch-waiting:1")
    config["server"]["port"] = free_port()
    server = ServerProcess.start(config, tmp_path / "first")
    try:
        r = HTTP.post(f"{server.url}/v1/submissions/create", json=body, timeout=10)
        app_id = r.json()["submissionId"]
        assert server.proc.wait(60) == -9  # killed itself in the back-off
    finally:
        server.stop()

    monkeypatch.delenv("SESSIONSCHED_FAULT_KILL")
    config["server"]["port"] = free_port()
    server = ServerProcess.start(config, tmp_path / "second")
    try:
        def ended() -> dict | None:
            a = HTTP.get(f"{server.url}/api/v1/apps/{app_id}", timeout=10).json()
            return a if a["state"] in ("FINISHED", "FAILED", "KILLED") else None

        app = wait_until(ended, 60, f"{app_id} to end after the restart")
        events = HTTP.get(f"{server.url}/api/v1/apps/{app_id}/events", timeout=10).json()
    finally:
        server.stop()
    assert (app["state"], app["exit_code"]) == ("FINISHED", 0), app
    tried = [e["detail"].split("; ")[-1] for e in events if e["kind"] == "retry"]
    # The memory cluster is a new one after the restart: it fails the first launch again.
    assert tried == ["attempt 1 of 6, next in 1s", "attempt 2 of 6, next in 2s"]
    passes = [line.split() for line in fault_log.read_text().splitlines()]
    assert passes.count(["launched", app_id]) == 1  # launched once, after the restart
    assert passes.count(["launch-waiting", app_id]) == 2
