"""After a restart (or a crash) nothing acknowledged is lost and nothing is launched twice."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from sessionsched.backends import driver_files
from sessionsched.backends.driver_files import DriverRecord
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.model import AppState
from sessionsched.service.restore import RELAUNCHED
from sessionsched.store import Store
from tests.support.http_client import HTTP
from tests.support.server_helpers import make_config, rows, wait_until


def positions(client) -> dict[str, int]:
    return {a["id"]: a["position"] for a in client.get("/api/v1/apps").json()}


def test_queued_apps_survive_a_restart_with_ids_priorities_and_positions(app_file, offline_app):
    def submit(c, priority):
        r = c.post("/api/v1/apps", json={"argv": [app_file.name], "cwd": str(app_file.parent),
                                         "priority": priority})
        assert r.status_code == 201
        return r.json()["id"]

    with TestClient(offline_app()) as c:
        ids = [submit(c, p) for p in (5000, 7000, 5000, 9000)]
        assert c.post(f"/api/v1/apps/{ids[2]}/priority", json={"priority": 8000}).status_code == 200
        before = wait_until(lambda: (p := positions(c)) and all(p.values()) and p,
                            what="positions")
    assert before == {ids[3]: 1, ids[2]: 2, ids[1]: 3, ids[0]: 4}

    with TestClient(offline_app()) as c:
        after = wait_until(lambda: (p := positions(c)) and all(p.values()) and p,
                           what="positions after the restart")
        assert after == before
        assert c.get(f"/api/v1/apps/{ids[2]}").json()["priority"] == 8000
        # New submissions continue the sequence.
        assert submit(c, 5000).endswith("-0005")


def test_a_launch_not_recorded_before_a_crash_is_failed_not_relaunched(state_dir, app_file,
                                                                          offline_app, db):
    with TestClient(offline_app()) as c:
        r = c.post("/api/v1/apps", json={"argv": [app_file.name], "cwd": str(app_file.parent)})
        app_id = r.json()["id"]
    # The crash point: the launch decision (STARTING) committed, the handle not yet.
    store = Store(make_config(state_dir).database_url())
    with store.session() as s:
        Store.update_apps(s, [{"id": app_id, "state": AppState.STARTING, "started_at": 1.0}])
        s.commit()
    store.close()
    with TestClient(offline_app()) as c:
        app = c.get(f"/api/v1/apps/{app_id}").json()
        assert app["state"] == "FAILED"
        assert app["reason"] == ("its launch was decided before a restart but never recorded; "
                                 "not relaunched, so that no driver runs twice")
    assert rows(db, f"select state from apps where id = '{app_id}'") == [("FAILED",)]


REST_BODY = {"action": "CreateSubmissionRequest", "appResource": "file:/tmp/a.jar",
             "mainClass": "Main", "sparkProperties": {}, "clientSparkVersion": "4.0.1"}


def _unrecorded_rest_launch(offline_app, state_dir) -> str:
    """A Spark REST app whose launch was decided (STARTING committed) but whose handle was
    not recorded: the crash point, as the test above makes it."""
    with TestClient(offline_app()) as c:
        app_id = c.post("/v1/submissions/create", json=REST_BODY).json()["submissionId"]
    store = Store(make_config(state_dir).database_url())
    with store.session() as s:
        Store.update_apps(s, [{"id": app_id, "state": AppState.STARTING,
                               "started_at": time.time()}])  # within its starting_timeout
        s.commit()
    store.close()
    return app_id


def test_an_unrecorded_rest_launch_is_launched_again_looking_first(state_dir, offline_app, db):
    """An unrecorded REST create is launched again rather than FAILED, and that launch first
    looks for a driver the earlier create may have started (here the master cannot be
    reached, so it cannot look: the launch waits in its back-off, STARTING)."""
    app_id = _unrecorded_rest_launch(offline_app, state_dir)
    with TestClient(offline_app()) as c:
        def events(kind: str) -> list[str]:
            return [e["detail"] for e in c.get(f"/api/v1/apps/{app_id}/events").json()
                    if e["kind"] == kind]

        tried = wait_until(lambda: events("retry"), what="the launch to be tried again")
        assert c.get(f"/api/v1/apps/{app_id}").json()["state"] == "STARTING"
        assert events("adopted") == [RELAUNCHED]
        assert tried[0].startswith("launch failed, tried again: an earlier create; cannot look "
                                   "for its driver: cannot reach the Spark master")
    assert rows(db, f"select state from apps where id = '{app_id}'") == [("STARTING",)]


def test_an_unrecorded_rest_launch_the_backend_recorded_is_adopted(state_dir, offline_app, db):
    """The backend's record names the master's driver: the app is adopted with that handle
    (written to the store now), not FAILED and not launched again."""
    app_id = _unrecorded_rest_launch(offline_app, state_dir)
    driver_files.save(state_dir / "drivers", DriverRecord(
        app_id, "cluster-driver", 5.0, driver_id="driver-20261124000000-0007"))
    with TestClient(offline_app()) as c:
        app = c.get(f"/api/v1/apps/{app_id}").json()
        assert app["state"] == "STARTING"
        kinds = [e["kind"] for e in c.get(f"/api/v1/apps/{app_id}/events").json()]
        assert "adopted" in kinds and "retry" not in kinds and "launch" not in kinds
    handle = json.loads(rows(db, f"select handle from apps where id = '{app_id}'")[0][0])
    assert (handle["kind"], handle["ref"]) == ("cluster-driver", "driver-20261124000000-0007")


# --- a real crash: SIGKILL of `sessionsched serve` while clients are submitting --------------


def _crash(server: ServerProcess) -> None:
    if server.proc.poll() is None:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)


@pytest.mark.timeout(180)
def test_a_crash_loses_no_acknowledged_submission(tmp_path, state_dir, offline_config):
    config = offline_config(state_dir)
    body = {"action": "CreateSubmissionRequest", "appResource": "file:/tmp/a.jar",
            "mainClass": "Main", "sparkProperties": {}, "clientSparkVersion": "4.0.1"}
    acked: list[str] = []
    lock = threading.Lock()

    def client(url: str):
        with httpx.Client(base_url=url, timeout=10) as http:
            while True:
                try:
                    r = http.post("/v1/submissions/create", json=body)
                except httpx.TransportError:
                    return  # the server is gone
                if r.status_code == 200 and r.json().get("success"):
                    with lock:
                        acked.append(r.json()["submissionId"])

    server = ServerProcess.start(config, tmp_path / "first")
    try:
        threads = [threading.Thread(target=client, args=(server.url,), daemon=True)
                   for _ in range(8)]
        for t in threads:
            t.start()
        wait_until(lambda: len(acked) >= 300, 60, "300 acknowledged submissions")
        _crash(server)  # mid-stream: requests in flight are cut off unanswered
    finally:
        _crash(server)
    for t in threads:
        t.join(15)
    assert len(acked) >= 300

    server = ServerProcess.start(config, tmp_path / "second")
    try:
        listed = wait_until(
            lambda: (a := HTTP.get(f"{server.url}/api/v1/apps", timeout=10).json())
            and all(x["position"] for x in a) and a, 30, "every app queued again")
    finally:
        server.stop()
    by_id = {a["id"]: a for a in listed}
    assert [i for i in acked if i not in by_id] == []  # nothing acknowledged is lost
    assert {by_id[i]["state"] for i in acked} == {"ACCEPTED"}
    # Queue order is submission order (equal priorities), positions 1..N without a gap.
    ordered = sorted(listed, key=lambda a: a["position"])
    assert [a["position"] for a in ordered] == list(range(1, len(listed) + 1))
    assert [a["id"] for a in ordered] == sorted(by_id, key=lambda i: int(i.rsplit("-", 1)[1]))


def test_a_queue_removed_from_the_config_while_it_holds_apps_stops_the_start(app_file,
                                                                            offline_app):
    with TestClient(offline_app()) as c:
        r = c.post("/api/v1/apps", json={"argv": [app_file.name], "cwd": str(app_file.parent),
                                         "queue": "etl"})
        assert r.status_code == 201
    with pytest.raises(ValueError) as err:
        offline_app(queues=[{"name": "root", "queues": [{"name": "default"}]}])
    assert str(err.value) == ("queues missing from the configuration still hold live apps: "
                              "root.etl (1 app(s)); put them back (or kill those apps first)")
