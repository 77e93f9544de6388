"""The scheduler service itself on a PostgreSQL store (``server.db_url: postgresql://…``):
submissions, a priority change and the queue survive a restart, and the sequence continues —
what the SQLite store gives, on the other backend."""

from __future__ import annotations

from fastapi.testclient import TestClient

from sessionsched.backends.ports import free_port
from sessionsched.config import ServerConfig
from sessionsched.server.app import create_app
from sessionsched.store import Store
from tests.sparkcluster import wait_until


def test_the_service_keeps_its_queue_across_a_restart_on_postgresql(pg_server, tmp_path):
    url = pg_server.fresh_database()
    closed = free_port()  # a cluster nobody listens on: apps queue and stay queued
    config = ServerConfig.model_validate({
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50, "db_url": url},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{closed}",
                    "master_ui": f"http://127.0.0.1:{closed}"},
        "queues": [{"name": "root", "queues": [{"name": "default", "policy": "fairshare"}]}],
    })
    app_file = tmp_path / "job.py"
    app_file.write_text("print('hello')\n")

    def submit(c: TestClient, priority: int) -> str:
        r = c.post("/api/v1/apps", json={"argv": [app_file.name], "cwd": str(tmp_path),
                                         "priority": priority})
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def positions(c: TestClient) -> dict[str, int]:
        return {a["id"]: a["position"] for a in c.get("/api/v1/apps").json()}

    with TestClient(create_app(config)) as c:
        ids = [submit(c, p) for p in (5000, 7000, 5000)]
        assert c.post(f"/api/v1/apps/{ids[2]}/priority", json={"priority": 9000}).status_code \
            == 200
        before = wait_until(lambda: (p := positions(c)) and all(p.values()) and p, 30,
                            "queue positions")
    assert before == {ids[2]: 1, ids[1]: 2, ids[0]: 3}

    store = Store(url)  # it is in PostgreSQL, not in some file of the state directory
    try:
        assert [a.id for a in store.load_apps()] == ids
        assert store.get_app(ids[2]).priority == 9000
    finally:
        store.close()
    assert not (tmp_path / "state" / "sessionsched.db").exists()

    with TestClient(create_app(config)) as c:
        after = wait_until(lambda: (p := positions(c)) and all(p.values()) and p, 30,
                           "queue positions after the restart")
        assert after == before
        assert submit(c, 5000).endswith("-0004")
