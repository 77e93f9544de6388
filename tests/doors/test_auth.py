"""Serving a team (auth mode tokens) through the native API and Spark REST, in-process on the
offline cluster: how identity, IBM Conductor's role rules, the agent's per-app secret, the audit
trail and the limits on hostile input are said on the wire (401 with its challenge, 403 naming
the rule, 429 with ``Retry-After``, an ``ErrorResponse``); nothing refused is stored. The rules
and limits themselves, for every door: tests/operations/."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from sessionsched.config import tokens_file as tokens
from sessionsched.server.app import create_app
from tests.doors.spark_rest.test_spark_rest import create_body
from tests.support.server_helpers import make_config, rows

AUTH = {"mode": "tokens", "run_as_root": True}


@pytest.fixture
def team(tmp_path):
    """A tokens file with alice and bob (users) and root (admin): {name: token}."""
    path = tmp_path / "tokens.json"
    made = {name: tokens.create(path, name, role)
            for name, role in (("alice", "user"), ("bob", "user"), ("root", "admin"))}
    return path, made


@pytest.fixture
def serve_team(state_dir, offline_cluster, team, open_app):
    """The app, in-process, with tokens on; ``auth`` changes the auth section."""
    def make(**auth) -> TestClient:
        config = make_config(state_dir, cluster=offline_cluster,
                             auth={**AUTH, "tokens_file": str(team[0]), **auth})
        return open_app(create_app(config))

    return make


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def submit(client, token, app_file, **body):
    return client.post("/api/v1/apps", headers=bearer(token),
                       json={"argv": [str(app_file)], "cwd": str(app_file.parent), **body})


def test_token_file_keeps_only_hashes_and_is_private(team):
    path, made = team
    text = path.read_text()
    assert all(t not in text for t in made.values())
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert [(e.user, e.role) for e in tokens.read_entries(path)] == [
        ("alice", "user"), ("bob", "user"), ("root", "admin")]


def test_no_wrong_and_revoked_tokens_are_401(serve_team, team, app_file, db):
    path, made = team
    client = serve_team()
    r = client.get("/api/v1/apps")
    assert (r.status_code, r.json()["detail"]) == (401, (
        "a token is required: send 'Authorization: Bearer TOKEN' (sessionsched --token, "
        "$SESSIONSCHED_TOKEN)"))
    assert r.headers["www-authenticate"] == "Bearer"
    r = client.get("/api/v1/apps", headers=bearer("ss_guessed"))
    assert (r.status_code, r.json()["detail"]) == (401, "unknown or revoked token")
    r = client.get("/api/v1/apps", headers={"Authorization": "Basic YWxpY2U6eA=="})
    assert r.status_code == 401
    assert client.get("/api/v1/apps", headers=bearer(made["bob"])).status_code == 200
    # Revoked while the server runs: refused at the next request, no restart.
    assert tokens.revoke(path, user="bob") == 1
    r = submit(client, made["bob"], app_file)
    assert (r.status_code, r.json()["detail"]) == (401, "unknown or revoked token")
    assert client.get("/api/v1/health").status_code == 200  # open: a probe needs no token
    assert rows(db, "select count(*) from apps") == [(0,)]


def test_user_rules_are_refused_with_the_rule_named_and_admin_is_allowed(
        serve_team, team, app_file, db, caplog):
    caplog.set_level("INFO", logger="sessionsched.audit")
    _, made = team
    client = serve_team()
    # The submitter is the token's user, whatever the properties claim.
    r = submit(client, made["alice"], app_file, name="etl\nForged line",
               conf={"spark.sessionsched.user": "root"})
    assert r.status_code == 201, r.text
    app = r.json()
    assert app["user"] == "alice"
    aid = app["id"]
    r = submit(client, made["alice"], app_file, priority=9000)
    assert (r.status_code, r.json()["detail"]) == (
        403, "user alice may set priority 1-5000, not 9000")
    r = client.post(f"/api/v1/apps/{aid}/priority", json={"priority": 9000},
                    headers=bearer(made["alice"]))
    assert (r.status_code, r.json()["detail"]) == (
        403, "user alice may set priority 1-5000, not 9000")
    r = client.post(f"/api/v1/apps/{aid}/priority", json={"priority": 10},
                    headers=bearer(made["bob"]))
    assert (r.status_code, r.json()["detail"]) == (
        403, f"user bob may re-prioritise only their own apps; {aid} is alice's")
    r = client.post(f"/api/v1/apps/{aid}/kill", headers=bearer(made["bob"]))
    assert (r.status_code, r.json()["detail"]) == (
        403, f"user bob may kill only their own apps; {aid} is alice's")
    assert client.get(f"/api/v1/apps/{aid}", headers=bearer(made["bob"])).status_code == 200
    assert rows(db, f"select priority, state from apps where id = '{aid}'") == [
        (5000, "ACCEPTED")]

    r = client.post(f"/api/v1/apps/{aid}/priority", json={"priority": 4000},
                    headers=bearer(made["alice"]))
    assert r.status_code == 200
    r = client.post(f"/api/v1/apps/{aid}/priority", json={"priority": 10000},
                    headers=bearer(made["root"]))
    assert (r.status_code, r.json()["priority"]) == (200, 10000)
    r = client.post(f"/api/v1/apps/{aid}/kill", headers=bearer(made["root"]))
    assert (r.status_code, r.json()["state"]) == (200, "KILLED")

    lines = [r.getMessage() for r in caplog.records if r.name == "sessionsched.audit"]
    assert lines == [
        "Registering app etl\\nForged line from sender testclient:50000, reserve:0, "
        "priority:5000, limit:unlimited",
        f"Registered app etl\\nForged line with ID {aid}",
        f"User alice updated the priority of {aid} from 5000 to 4000",
        f"Admin root updated the priority of {aid} from 4000 to 10000",
        f"Admin root from testclient:50000 requested a kill of {aid}",
    ]
    # The same facts in the events table, through GET /api/v1/audit (admins only).
    r = client.get("/api/v1/audit", headers=bearer(made["alice"]))
    assert (r.status_code, r.json()["detail"]) == (
        403, "user alice may not read the audit trail (admins only)")
    trail = client.get("/api/v1/audit", params={"app": aid}, headers=bearer(made["root"]))
    assert [(a["kind"], a["who"], a["detail"]) for a in trail.json()] == [
        ("submitted", "alice", "submit submission by alice from testclient:50000 to "
                               "root.default, priority 5000"),
        ("priority", "alice", "User alice updated the priority from 5000 to 4000 "
                              "(from testclient:50000)"),
        ("priority", "root", "Admin root updated the priority from 4000 to 10000 "
                             "(from testclient:50000)"),
        ("kill", "root", "kill requested by Admin root from testclient:50000"),
    ]
    cols = [(a["actor"], a["sender"], a["old"], a["new"]) for a in trail.json()]
    assert cols == [("alice", "testclient:50000", None, "5000"),
                    ("User alice", "testclient:50000", "5000", "4000"),
                    ("Admin root", "testclient:50000", "4000", "10000"),
                    ("Admin root from testclient:50000", None, None, None)]
    only_alice = client.get("/api/v1/audit", params={"user": "alice"},
                            headers=bearer(made["root"])).json()
    assert [a["kind"] for a in only_alice] == ["submitted", "priority"]


def test_spark_rest_token_property_anonymous_and_kill(serve_team, team, db):
    _, made = team
    client = serve_team()
    r = client.post("/v1/submissions/create", json=create_body())
    assert r.status_code == 401
    assert r.json()["action"] == "ErrorResponse"
    assert r.json()["message"] == (
        "a token is required: send 'Authorization: Bearer TOKEN' (sessionsched --token, "
        "$SESSIONSCHED_TOKEN); spark-submit: add --conf spark.sessionsched.token=TOKEN")
    body = create_body()
    body["sparkProperties"]["spark.sessionsched.token"] = made["alice"]
    r = client.post("/v1/submissions/create", json=body)
    assert r.json()["success"] is True, r.text
    sid = r.json()["submissionId"]
    assert rows(db, f"select user from apps where id = '{sid}'") == [("alice",)]
    # The token is nowhere on disk.
    dump = "\n".join(str(row) for table in ("apps", "events")
                     for row in rows(db, f"select * from {table}"))
    assert made["alice"] not in dump
    # spark-submit --kill sends no credentials: anonymous, refused.
    r = client.post(f"/v1/submissions/kill/{sid}")
    assert (r.status_code, r.json()["action"]) == (401, "ErrorResponse")
    r = client.post(f"/v1/submissions/kill/{sid}", headers=bearer(made["bob"]))
    assert (r.status_code, r.json()["message"]) == (
        403, f"user bob may kill only their own apps; {sid} is alice's")
    r = client.post(f"/v1/submissions/update/{sid}", headers=bearer(made["alice"]),
                    json={"action": "UpdateSubmissionRequest", "priority": "9000"})
    assert (r.status_code, r.json()["message"]) == (
        403, "user alice may set priority 1-5000, not 9000")
    # Status needs no token: spark-submit polls it without one.
    assert client.get(f"/v1/submissions/status/{sid}").json()["success"] is True
    r = client.post(f"/v1/submissions/kill/{sid}", headers=bearer(made["alice"]))
    assert r.json()["success"] is True


def test_anonymous_spark_rest_taken_as_the_named_user(serve_team, db):
    client = serve_team(anonymous="guest")
    r = client.post("/v1/submissions/create", json=create_body())
    sid = r.json()["submissionId"]
    assert rows(db, f"select user from apps where id = '{sid}'") == [("guest",)]
    body = create_body(priority="9000")
    r = client.post("/v1/submissions/create", json=body)
    assert (r.status_code, r.json()["message"]) == (
        403, "user guest may set priority 1-5000, not 9000")
    # A wrong token is never taken as anonymous.
    r = client.get("/api/v1/apps", headers=bearer("ss_wrong"))
    assert r.status_code == 401


def test_agent_secret_reports_for_its_own_app_only(serve_team, team, app_file):
    _, made = team
    client = serve_team()
    a = submit(client, made["alice"], app_file).json()["id"]
    b = submit(client, made["alice"], app_file).json()["id"]
    gate = client.api.state.gate
    secret_a = gate.secret_for(a)
    r = client.post("/api/v1/agent/heartbeat", headers=bearer(secret_a),
                    json={"app_id": b, "demand": 100})
    assert (r.status_code, r.json()["detail"]) == (
        403, f"this agent secret is for {a}; it may not report for {b}")
    r = client.post("/api/v1/agent/heartbeat", headers=bearer(secret_a),
                    json={"app_id": a, "demand": 1})
    assert r.status_code == 200
    forged = secret_a[:-4] + "0000"
    r = client.post("/api/v1/agent/heartbeat", headers=bearer(forged), json={"app_id": a})
    assert (r.status_code, r.json()["detail"]) == (401, "invalid agent secret")
    # The rules themselves (a user's token for another's app, a secret that steers):
    # tests/operations/test_rules.py.


def test_hostile_input_is_refused_and_nothing_stored(serve_team, team, app_file, db):
    _, made = team
    client = serve_team(submissions_per_minute=3, max_body_bytes=20000, max_string=200)
    r = submit(client, made["alice"], app_file, env={"LD_PRELOAD": "/tmp/evil.so"})
    assert (r.status_code, r.json()["detail"]) == (400, (
        "environment variable LD_PRELOAD may not be passed to a driver "
        "(auth.env_allow: PYSPARK_PYTHON, SPARK_*, TZ, LANG, LC_*)"))
    r = submit(client, made["alice"], app_file, env={"PYSPARK_DRIVER_PYTHON": "/bin/true"})
    assert r.status_code == 400
    r = submit(client, made["alice"], app_file, name="x" * 300)
    assert (r.status_code, r.json()["detail"]) == (
        400, "name: a value of 300 characters, at most 200 (it starts 'xxxxxxxxxxxxxxxxxxxxxxxx"
             "xxxxxxxxxxxxxxxx')")
    r = submit(client, made["alice"], app_file, name="y" * 30000)
    assert (r.status_code, r.json()["detail"]) == (
        413, "request body over 20000 bytes (auth.max_body_bytes)")
    body = create_body()
    body["environmentVariables"] = {"LD_PRELOAD": "/x.so"}
    r = client.post("/v1/submissions/create", json=body, headers=bearer(made["alice"]))
    assert (r.status_code, r.json()["action"]) == (400, "ErrorResponse")
    assert rows(db, "select count(*) from apps") == [(0,)]
    for _ in range(3):
        assert submit(client, made["alice"], app_file).status_code == 201
    r = submit(client, made["alice"], app_file)
    assert r.status_code == 429
    assert r.json()["detail"].startswith("user alice submitted 3 apps in the last minute")
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert submit(client, made["bob"], app_file).status_code == 201  # per user
    assert rows(db, "select count(*) from apps") == [(4,)]


def test_tokens_as_root_need_run_as_root(state_dir, offline_cluster, team):
    if os.geteuid() != 0:
        pytest.skip("the refusal is for a server running as root")
    config = make_config(state_dir, cluster=offline_cluster,
                         auth={"mode": "tokens", "tokens_file": str(team[0])})
    with pytest.raises(ValueError, match="set auth.run_as_root: true"):
        create_app(config)


def test_launched_driver_gets_its_secret_in_the_environment_not_argv(app_file):
    from sessionsched.config import ServerConfig
    from sessionsched.intake.new_apps import Defaults, from_argv
    from sessionsched.service.launch import build_launch

    cfg = ServerConfig()
    app = from_argv([str(app_file)], str(app_file.parent), {}, {}, None, None, None,
                    Defaults(cfg.queue_tree(), "root.default"))
    app = replace(app, spec=replace(app.spec, app_id="driver-1"))
    launch = build_launch(app, "http://x", app_file.parent, token="sa.driver-1.abc")
    assert launch.env["SESSIONSCHED_TOKEN"] == "sa.driver-1.abc"
    assert not any("sa.driver-1" in a for a in launch.argv)


def test_an_older_events_table_gets_the_audit_columns(tmp_path):
    import sqlite3

    from sessionsched.store import Store

    db = tmp_path / "old.db"
    with sqlite3.connect(db) as c:
        c.execute("create table events (id integer primary key, app_id varchar, at float, "
                  "kind varchar(32), detail text)")
        c.execute("insert into events (app_id, at, kind, detail) values ('a', 1, 'kill', 'x')")
    store = Store(f"sqlite:///{db}")
    try:
        [old] = store.events("a")
        assert (old.detail, old.actor, old.old) == ("x", None, None)
    finally:
        store.close()
    names = [r[1] for r in rows(db, "pragma table_info(events)")]
    assert names[-4:] == ["actor", "sender", "old_value", "new_value"]
