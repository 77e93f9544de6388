"""A cycle whose commit fails (the store's filesystem full, for real: a small tmpfs; or its
PostgreSQL server stopped) leaves memory and store as they were: the engine is put back to the
last committed cycle, the kill asked meanwhile is answered 503 with one line and not applied,
nothing is launched that is not recorded, and the cluster's news of that cycle (a driver's
exit code) is not lost. When the store is back, the service carries on without a restart.
Stepped by hand on the memory cluster (``stepped_service.py``)."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.memory import EXIT_CODE, WORK, MemoryBackend
from sessionsched.server.app import create_app
from sessionsched.service.cycle import RETRY_MAX_S
from sessionsched.store import Store
from tests.fullfs import fill, tiny_tmpfs
from tests.support.server_helpers import make_config, rows
from tests.support.stepped_service import Clock, Stepped

pytestmark = pytest.mark.storefault

FULL = "state store unavailable: disk full"


@pytest.fixture
def state_dir(tmp_path):
    """The state directory on a 4 MiB tmpfs of its own."""
    with tiny_tmpfs(tmp_path / "fs") as mnt:
        yield mnt / "state"


def kill_over_http(s, app_id: str) -> dict:
    """POST .../kill from another thread while this one runs the cycles; the answer."""
    answer: dict = {}
    t = threading.Thread(target=lambda: answer.update(
        r=s.client.post(f"/api/v1/apps/{app_id}/kill")), daemon=True)
    t.start()
    for _ in range(200):
        t.join(0.05)
        if not t.is_alive():
            return answer
        s.cycle(0.5)
    pytest.fail("the kill was not answered after 200 cycles")


def test_a_failed_commit_is_rewound_and_loses_nothing(stepped, state_dir, cluster, caplog):
    """The store's filesystem full (a 4 MiB tmpfs)."""
    db = state_dir / "sessionsched.db"
    with stepped(admission="none", max_running_apps=1) as s:
        running = s.submit("running", **{WORK: "4", EXIT_CODE: "3"})
        queued = s.submit("queued")
        s.until(running, "RUNNING")
        seen = s.app(queued)
        assert (seen["state"], seen["position"]) == ("ACCEPTED", 1)

        fill(state_dir.parent / "filler")
        r = kill_over_http(s, queued)["r"]
        assert (r.status_code, r.json()) == (503, {"detail": FULL})
        # Memory and store as they were: still queued, first in line, and killable.
        for _ in range(6):  # the running driver exits (code 3) while nothing can be recorded
            s.cycle(RETRY_MAX_S)
        assert cluster.apps[running].phase.value == "DONE"
        assert queued not in cluster.apps  # admitted by a rewound step only: never launched
        assert (s.app(queued)["state"], s.app(queued)["position"]) == ("ACCEPTED", 1)
        assert s.app(running)["state"] == "RUNNING"
        assert rows(db, f"select state from apps where id in ('{queued}', '{running}') "
                        "order by seq") == [("RUNNING",), ("ACCEPTED",)]
        assert s.service.engine.check() == []
        # Six failures in a row, each stepping the rewound books again: nothing twice.
        assert [r.message for r in caplog.records if "engine refused" in r.message] == []
        health = s.client.get("/api/v1/health").json()
        assert health["status"] == "degraded" and FULL in str(health)

        (state_dir.parent / "filler").unlink()  # space returns: no restart
        s.cycle(RETRY_MAX_S)
        ended = s.app(running)
        assert (ended["state"], ended["exit_code"]) == ("FAILED", 3)  # its exit was not lost
        assert ended["reason"] == "driver exited with code 3"
        assert s.app(queued)["state"] == "STARTING"
        s.until(queued, "RUNNING")
        r = kill_over_http(s, queued)["r"]
        assert r.status_code == 200 and r.json()["state"] == "KILLED"
        assert rows(db, f"select state, exit_code from apps where id = '{running}'") == [
            ("FAILED", 3)]
        launches = rows(db, "select app_id from events where kind = 'launch' order by app_id")
        assert sorted(launches) == sorted([(running,), (queued,)])  # each launched once
        exits = rows(db, f"select detail from events where app_id = '{running}' "
                         "and kind = 'exit'")
        assert exits == [("driver exited with code 3",)]
        assert s.service.engine.check() == []


def test_a_kill_while_postgresql_is_down_is_refused_and_nothing_is_lost(pg_server, tmp_path,
                                                                          cluster):
    """The same on a PostgreSQL store stopped for real: the store cannot even be read, and
    the engine is put back all the same (from memory, not from the store)."""
    (tmp_path / "job.py").write_text("print('hello')\n")
    url = pg_server.fresh_database()
    clock = Clock()
    queues = [{"name": "root", "queues": [
        {"name": "default", "admission": "none", "max_running_apps": 1}]}]
    config = make_config(tmp_path / "state", queues=queues, server={"db_url": url})
    app = create_app(config, MemoryBackend(cluster), run_cycles=False, clock=clock)
    try:
        with TestClient(app) as client:
            s = Stepped(client, clock, cluster, tmp_path)
            running = s.submit("running", **{WORK: "4", EXIT_CODE: "3"})
            queued = s.submit("queued")
            s.until(running, "RUNNING")
            pg_server.stop()
            r = kill_over_http(s, queued)["r"]
            assert r.status_code == 503
            assert r.json()["detail"].startswith("state store unavailable: cannot connect to "
                                                 "PostgreSQL at ")
            for _ in range(6):
                s.cycle(RETRY_MAX_S)
            assert cluster.apps[running].phase.value == "DONE" and queued not in cluster.apps
            assert (s.app(queued)["state"], s.app(queued)["position"]) == ("ACCEPTED", 1)
            pg_server.start()
            s.cycle(RETRY_MAX_S)
            ended = s.app(running)
            assert (ended["state"], ended["exit_code"]) == ("FAILED", 3)
            s.until(queued, "RUNNING")
            r = kill_over_http(s, queued)["r"]
            assert r.status_code == 200 and r.json()["state"] == "KILLED"
            # Its stopped driver's exit (143) is news of a later cycle: waited for, so the
            # store is read after it whichever cycle the kill's answer came back in.
            s.until_true(lambda: s.app(queued)["exit_code"] == 143, "the killed driver's exit")
    finally:
        if pg_server.proc is None or pg_server.proc.poll() is not None:
            pg_server.start()  # the other tests of the session share it
    store = Store(url)
    try:
        assert {a.id: (a.state.value, a.exit_code) for a in store.load_apps()} == {
            running: ("FAILED", 3), queued: ("KILLED", 143)}
        assert [e.kind for e in store.events(running)].count("exit") == 1
        assert [e.kind for e in store.events(queued)].count("launch") == 1
    finally:
        store.close()


def test_a_running_app_keeps_its_reason_through_a_rewind(stepped, state_dir):
    """The engine rebuilt by a rewind takes its running apps back with their committed
    reason: the first cycle committed afterwards shows it, not "" until their next change."""
    with stepped(admission="none", max_running_apps=1) as s:
        running = s.submit("running", **{WORK: "60"})
        queued = s.submit("queued")
        s.until(running, "RUNNING")
        assert s.app(running)["reason"] == "first executor registered"
        fill(state_dir.parent / "filler")
        assert kill_over_http(s, queued)["r"].status_code == 503  # a commit failed: rewound
        (state_dir.parent / "filler").unlink()
        s.cycle(RETRY_MAX_S)  # committed and published from the rebuilt engine
        app = s.app(running)
        assert (app["state"], app["reason"]) == ("RUNNING", "first executor registered")
