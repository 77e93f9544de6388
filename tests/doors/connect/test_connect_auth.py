"""The Spark Connect door with auth mode tokens, through the real Spark Connect client, on a
scheduler whose cluster cannot be reached (sessions queue, nothing starts): the token is the
connection string's ``token=``, ``user_id`` must be its user, the priority range, the queue's
submitters and the session's owner are the operations port's rules; a session that may open
queues as an app of kind ``connect`` and its call is answered UNAVAILABLE with its position; in
a queue with ``connect_share_level: user`` a user's second session joins her first one's app
(bob's does not), and ``/metrics`` counts the sessions by queue and state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import tokens_file as tokens
from tests.sparkcluster import free_port, wait_until
from tests.support.http_client import HTTP

pytest.importorskip("pyspark.sql.connect.session")


@pytest.fixture
def door(tmp_path) -> Iterator[tuple[ServerProcess, int, dict[str, str]]]:
    path = tmp_path / "tokens.json"
    made = {u: tokens.create(path, u, "admin" if u == "root" else "user")
            for u in ("alice", "bob", "root")}
    closed = free_port()
    port = free_port({closed})
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50,
                   "port": free_port({closed, port})},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{closed}",
                    "master_ui": f"http://127.0.0.1:{closed}"},
        "auth": {"mode": "tokens", "tokens_file": str(path), "run_as_root": True,
                 "groups": {"etl": ["bob"]}},
        "queues": [{"name": "root", "queues": [{"name": "default"},
                                               {"name": "etl", "submit_groups": ["etl"]},
                                               {"name": "team",
                                                "connect_share_level": "user"}]}],
        "connect": {"port": port, "hold_s": 1},
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server, port, made
    finally:
        server.stop()


def session(port: int, **params):
    """A Connect session that does not retry (the door's answers surface at once)."""
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.client.retries import DefaultPolicy

    extra = "".join(f";{k}={v}" for k, v in params.items())
    spark = SparkSession.builder.remote(f"sc://localhost:{port}/{extra}").create()
    spark.client.set_retry_policies([DefaultPolicy(max_retries=0)])
    return spark


def first_call_error(spark) -> str:
    with pytest.raises(Exception) as e:
        spark.conf.get("spark.app.name")
    cause = e.value.__cause__ or e.value
    details = cause.details() if hasattr(cause, "details") else ""
    return f"{e.value} {cause} {details}"


@pytest.mark.parametrize("params, refused", [
    (dict(user_id="bob"), "user_id 'bob' is not the token's user (alice)"),
    (dict(user_id="alice", priority=9000), "user alice may set priority 1-5000, not 9000"),
    (dict(user_id="alice", queue="etl"), "user alice may not submit to queue root.etl"),
], ids=["as-another-user", "above-her-priority-range", "queue-not-hers"])
def test_a_user_token_opens_no_session_beyond_its_rights(door, params, refused):
    server, port, made = door
    spark = session(port, token=made["alice"], **params)
    assert refused in first_call_error(spark)
    assert HTTP.get(f"{server.url}/api/v1/apps", timeout=10,
                     headers={"Authorization": f"Bearer {made['root']}"}).json() == []


def test_no_token_no_session(door):
    _server, port, _made = door
    assert "a token is required" in first_call_error(session(port, user_id="alice"))


def test_a_session_queues_as_a_connect_app_and_is_its_owners(door):
    server, port, made = door
    spark = session(port, token=made["alice"], user_id="alice", priority=4000)
    text = first_call_error(spark)  # held hold_s, then UNAVAILABLE: the client would retry
    assert "UNAVAILABLE" in text and "waits in queue root.default (position 1" in text, text
    root = {"Authorization": f"Bearer {made['root']}"}
    (app,) = HTTP.get(f"{server.url}/api/v1/apps", headers=root, timeout=10).json()
    assert (app["kind"], app["user"], app["priority"], app["state"]) == \
        ("connect", "alice", 4000, "ACCEPTED")
    # bob's token on alice's session (its id is what a client sends): not his
    sid = spark.client._session_id
    assert "user bob may use the Connect session of only their own apps" in \
        raw_config_error(port, made["bob"], sid, "bob")
    # the client's spark.stop() before the driver ran: the queued app is killed
    session(port, token=made["alice"], user_id="alice", session_id=sid).stop()
    wait_until(lambda: HTTP.get(f"{server.url}/api/v1/apps/{app['id']}", headers=root,
                                 timeout=10).json()["state"] == "KILLED", 30,
               "the released session's queued app to be killed")


def raw_config_error(port: int, token: str, session_id: str, user: str) -> str:
    """A ``Config`` call as the client makes it, from a plain gRPC stub."""
    import grpc
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    creds = grpc.composite_channel_credentials(grpc.local_channel_credentials(),
                                               grpc.access_token_call_credentials(token))
    with grpc.secure_channel(f"localhost:{port}", creds) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        request = base_pb2.ConfigRequest(session_id=session_id,
                                         user_context=base_pb2.UserContext(user_id=user))
        request.operation.get_all.SetInParent()
        with pytest.raises(grpc.RpcError) as e:
            stub.Config(request, timeout=30)
    return f"{e.value.code().name}: {e.value.details()}"


def test_a_users_sessions_share_one_app_in_a_user_level_queue(door):
    server, port, made = door
    root = {"Authorization": f"Bearer {made['root']}"}
    opened = [session(port, token=made[u], user_id=u, queue="team") for u in
              ("alice", "alice", "bob")]
    texts = [first_call_error(s) for s in opened]  # each held hold_s, then UNAVAILABLE
    assert all("waits in queue root.team" in t for t in texts), texts
    listed = HTTP.get(f"{server.url}/api/v1/apps", headers=root, timeout=10).json()
    assert sorted((a["user"], a["kind"], a["queue"]) for a in listed) == [
        ("alice", "connect", "root.team"), ("bob", "connect", "root.team")]
    alices = next(a["id"] for a in listed if a["user"] == "alice")
    assert texts[0].count(alices) and texts[1].count(alices), texts  # one app, two sessions
    metrics = HTTP.get(f"{server.url}/metrics", timeout=10).text
    assert 'sessionsched_connect_sessions{queue="root.team",state="ACCEPTED"} 3.0' in metrics
    # her first session released while the driver is queued: her second one keeps the app
    opened[0].stop()
    assert HTTP.get(f"{server.url}/api/v1/apps/{alices}", headers=root,
                     timeout=10).json()["state"] == "ACCEPTED"
    metrics = HTTP.get(f"{server.url}/metrics", timeout=10).text
    assert 'sessionsched_connect_sessions{queue="root.team",state="ACCEPTED"} 2.0' in metrics
    opened[1].stop()  # her last one: the queued app is killed
    wait_until(lambda: HTTP.get(f"{server.url}/api/v1/apps/{alices}", headers=root,
                                 timeout=10).json()["state"] == "KILLED", 30,
               "her queued app killed with her last session")
