"""The Livy API with auth mode tokens (doors/livy/auth.py): a token as Bearer or as the
password of Basic auth (sparkmagic's way), the native API's rules on batches and sessions, and
a session's REPL speaking for its own session only. Batches in-process; sessions against a
real ``sessionsched serve`` (the REPL is a process that must reach it)."""

from __future__ import annotations

import base64

import httpx
import pytest
from fastapi.testclient import TestClient

from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import tokens_file as tokens
from sessionsched.operations.auth import AppSecrets
from sessionsched.server.app import asgi, create_app
from tests.support.server_helpers import make_config, rows, wait_until

QUEUES = [{"name": "root", "queues": [{"name": "default"},
                                      {"name": "etl", "submit_groups": ["etl"]}]}]
BATCH = {"file": "hdfs:/jobs/app.jar", "className": "Main"}


@pytest.fixture
def team(tmp_path):
    path = tmp_path / "tokens.json"
    made = {u: tokens.create(path, u, "admin" if u == "root" else "user")
            for u in ("alice", "bob", "root")}
    return path, made


def auth_section(path) -> dict:
    return {"mode": "tokens", "tokens_file": str(path), "run_as_root": True,
            "groups": {"etl": ["bob"]}}


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_batches_with_basic_auth_and_the_rules(state_dir, offline_cluster, team, db):
    path, made = team
    config = make_config(state_dir, cluster=offline_cluster, queues=QUEUES,
                         auth=auth_section(path))
    with TestClient(asgi(create_app(config))) as client:
        r = client.post("/batches", json=BATCH)
        assert (r.status_code, r.json()["msg"]) == (401, (
            "a token is required: send 'Authorization: Bearer TOKEN' (sessionsched --token, "
            "$SESSIONSCHED_TOKEN); Livy clients: Basic auth with the token as the password"))
        assert r.headers["www-authenticate"].startswith('Basic realm="sessionsched"')
        for headers, msg in (
            (basic("bob", made["alice"]), "Basic auth user 'bob' is not the token's user (alice)"),
            (basic("alice", "ss_guessed"), "unknown or revoked token"),
            ({"Authorization": "Basic !!"}, "Basic auth: not base64 of 'user:password'"),
            ({"Authorization": "Basic é".encode()},  # was a 500 (b64decode's ValueError)
             "Basic auth: not base64 of 'user:password'"),
            (basic("alice", ""), "Basic auth: the password must be a sessionsched token"),
            ({"Authorization": "Digest x"}, "the Authorization header must be 'Bearer TOKEN' "
                                            "or Basic auth with the token as the password"),
        ):
            r = client.post("/batches", json=BATCH, headers=headers)
            assert (r.status_code, r.json()["msg"]) == (401, msg)
        # The native API's submission rules, in Livy's shape; nothing stored.
        r = client.post("/batches", json={**BATCH, "queue": "etl"},
                        headers=basic("alice", made["alice"]))
        assert (r.status_code, r.json()["msg"]) == (
            403, "user alice may not submit to queue root.etl (submit_groups: etl)")
        r = client.post("/batches", json={**BATCH, "conf": {"spark.ego.priority": "9000"}},
                        headers=basic("alice", made["alice"]))
        assert (r.status_code, r.json()["msg"]) == (
            403, "user alice may set priority 1-5000, not 9000")
        assert rows(db, "select count(*) from apps") == [(0,)]

        r = client.post("/batches", json=BATCH, headers=basic("alice", made["alice"]))
        assert r.status_code == 201, r.text
        batch, app_id = r.json()["id"], r.json()["submissionId"]
        assert r.json()["owner"] == "alice"
        r = client.post("/batches", json={**BATCH, "queue": "etl"},
                        headers=basic("", made["bob"]))  # no user name: the token's
        assert (r.status_code, r.json()["owner"]) == (201, "bob")
        # Everyone reads names and states; only the owner (or an admin) deletes and reads logs.
        listed = client.get("/batches", headers=bearer(made["bob"])).json()
        assert [b["owner"] for b in listed["sessions"]] == ["alice", "bob"]
        assert client.get(f"/batches/{batch}/state", headers=bearer(made["bob"])).json() == {
            "id": batch, "state": "not_started"}
        r = client.get(f"/batches/{batch}/log", headers=bearer(made["bob"]))
        assert (r.status_code, r.json()["msg"]) == (
            403, f"user bob may read logs of only their own apps; {app_id} is alice's")
        r = client.delete(f"/batches/{batch}", headers=basic("bob", made["bob"]))
        assert (r.status_code, r.json()["msg"]) == (
            403, f"user bob may delete only their own apps; {app_id} is alice's")
        assert client.delete("/batches/99", headers=bearer(made["bob"])).status_code == 404
        r = client.delete(f"/batches/{batch}", headers=basic("alice", made["alice"]))
        assert (r.status_code, r.json()) == (200, {"msg": "deleted"})
        assert client.get(f"/batches/{batch}/state", headers=bearer(made["root"])).json()[
            "state"] == "killed"
    assert rows(db, f"select actor from events where app_id = '{app_id}' and kind = 'kill'") \
        == [("User alice (Livy from testclient:50000)",)]


def test_a_sessions_repl_speaks_for_its_own_session_only(tmp_path, offline_cluster, team):
    path, made = team
    state = tmp_path / "state"
    config = {"server": {"state_dir": str(state), "cycle_ms": 50},
              "cluster": offline_cluster, "queues": QUEUES, "auth": auth_section(path)}
    server = ServerProcess.start(config, tmp_path / "server")
    http = httpx.Client(base_url=server.url, timeout=30)
    try:
        r = http.post("/sessions", json={"kind": "pyspark"},
                      headers=basic("alice", made["alice"]))
        assert r.status_code == 201, r.text
        sid, app_id = r.json()["id"], r.json()["submissionId"]
        secret = AppSecrets(state).secret(app_id)  # what its REPL got in its environment
        other = AppSecrets(state).secret("driver-00000000000000-9999")
        r = http.post(f"/sessions/{sid}/statements", json={"code": "1 + 1"},
                      headers=basic("bob", made["bob"]))
        assert (r.status_code, r.json()["msg"]) == (
            403, f"user bob may run statements in only their own apps; {app_id} is alice's")
        for token in (made["alice"], other):
            r = http.get(f"/livy-repl/{sid}/next", headers=bearer(token))
            assert (r.status_code, r.json()["msg"]) == (
                403, f"only session {sid}'s REPL may use /livy-repl/{{sid}}/next")
        assert http.get(f"/livy-repl/{sid}/next", headers=bearer(secret)).json() == {"id": None}
        r = http.get("/sessions", headers=bearer(secret))  # a secret is for its REPL's routes
        assert r.status_code == 403
        r = http.delete(f"/sessions/{sid}", headers=basic("alice", made["alice"]))
        assert (r.status_code, r.json()) == (200, {"msg": "deleted"})
        wait_until(lambda: http.get(f"/api/v1/apps/{app_id}", headers=bearer(made["root"]))
                   .json()["state"] == "KILLED", 30, "the queued session to be killed")
    finally:
        http.close()
        server.stop()
