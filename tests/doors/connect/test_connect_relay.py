"""The Connect door's calls to a running session, each checked again though its route is kept
(``door.Route``): on a scheduler with tokens on the memory backend, the session's app "runs"
and its driver is a stand-in (a gRPC server in a process of its own, stopped by PID) whose
address is written where a real driver writes it. Repeated calls reach the driver and a
stream's messages pass in order; a token revoked between two calls, another user's token and
a kill between two calls are refused at the next call; an admin's call and the owner's next
one both pass. The real driver and client are tests/real_spark/clients/test_connect.py's (marker
cluster)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import tokens_file as tokens
from tests.doors.connect.connect_standin import config_answer, standin_driver
from tests.sparkcluster import free_port, wait_until
from tests.support.http_client import HTTP
from tests.tlscert import make_cert

pytest.importorskip("pyspark.sql.connect.proto")

import grpc  # noqa: E402
from pyspark.sql.connect.proto import base_pb2  # noqa: E402

SERVICE = "/spark.connect.SparkConnectService"
STREAMED = 3  # the stand-in's ExecutePlan answers this many messages
# the memory backend's driver works an hour; its agent reports nothing
METADATA = (("queue", "default"), ("spark.sessionsched.memory.work", "0"),
            ("spark.sessionsched.memory.startup", "3600"))


@dataclass
class Door:
    server: ServerProcess
    port: int
    tokens_file: Path
    made: dict[str, str]
    session_id: str

    other_id: str  # a second session of alice's, its own stand-in driver
    cert: Path | None = None  # the server's TLS certificate (its own CA), when it has one

    def channel(self, user: str, token: str | None = None) -> grpc.Channel:
        """A channel (a connection of its own) as ``user`` (its token unless ``token``)."""
        if self.cert is None:
            creds, target = grpc.local_channel_credentials(), f"localhost:{self.port}"
        else:
            creds = grpc.ssl_channel_credentials(root_certificates=self.cert.read_bytes())
            target = f"127.0.0.1:{self.port}"
        creds = grpc.composite_channel_credentials(
            creds, grpc.access_token_call_credentials(token or self.made[user]))
        return grpc.secure_channel(target, creds,
                                   options=[("grpc.use_local_subchannel_pool", 1)])

    def call(self, user: str, method: str = "Config", token: str | None = None,
             channel: grpc.Channel | None = None, session_id: str = "") -> list[bytes]:
        """The answers to one call as ``user`` on the session (``session_id``: another),
        on a new channel unless ``channel``."""
        if channel is None:
            with self.channel(user, token) as channel:
                return self.call(user, method, token, channel, session_id)
        ctx = base_pb2.UserContext(user_id=user)
        sid = session_id or self.session_id
        if method == "Config":
            request = base_pb2.ConfigRequest(session_id=sid, user_context=ctx)
            request.operation.get_all.SetInParent()
            return [channel.unary_unary(f"{SERVICE}/Config")(
                request.SerializeToString(), metadata=METADATA, timeout=60)]
        request = base_pb2.ExecutePlanRequest(session_id=sid, user_context=ctx)
        return list(channel.unary_stream(f"{SERVICE}/ExecutePlan")(
            request.SerializeToString(), metadata=METADATA, timeout=60))

    def refused(self, user: str, token: str | None = None) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(grpc.RpcError) as e:
            self.call(user, token=token)
        return e.value.code(), e.value.details()

    def app(self) -> dict:
        (app,) = self.apps()
        return app

    def apps(self) -> list[dict]:
        return self.get("/api/v1/apps")

    def get(self, path: str) -> list[dict]:
        """The scheduler's answer to ``path``, as root."""
        return httpx.get(f"{self.server.url}{path}", timeout=10,
                         verify=str(self.cert) if self.cert else True,
                         headers={"Authorization": f"Bearer {self.made['root']}"}).json()


@pytest.fixture
def door(tmp_path, request) -> Iterator[Door]:
    """The door on the memory backend with tokens on; with TLS when the test's parameter
    ``door`` is true (``indirect``)."""
    path = tmp_path / "tokens.json"
    made = {u: tokens.create(path, u, "admin" if u == "root" else "user")
            for u in ("alice", "bob", "root")}
    sid, other = str(uuid.uuid4()), str(uuid.uuid4())
    state = tmp_path / "state"
    with standin_driver(sid, state, STREAMED) as driver_port, \
            standin_driver(other, state, STREAMED) as other_port:
        port = free_port({driver_port, other_port})
        config = {
            "server": {"state_dir": str(state), "cycle_ms": 50,
                       "port": free_port({driver_port, other_port, port})},
            "cluster": {"backend": "memory", "workers": 1, "cores": 4},
            "auth": {"mode": "tokens", "tokens_file": str(path), "run_as_root": True},
            "connect": {"port": port, "hold_s": 60},
        }
        cert = None
        if getattr(request, "param", False):
            cert, key = make_cert(tmp_path)
            config["server"]["tls"] = {"cert": str(cert), "key": str(key)}
        server = ServerProcess.start(config, tmp_path / "server")
        try:
            wait_until(lambda: _accepts(port), 60, f"the Connect door on port {port}")
            yield Door(server, port, path, made, sid, other, cert)
        finally:
            server.stop()


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def test_a_running_sessions_calls_reach_its_driver_and_a_stream_passes_in_order(door):
    answer = config_answer(door.session_id)
    assert door.call("alice") == [answer]  # the first call opens the session, held till it runs
    assert door.app()["state"] in ("STARTING", "RUNNING")
    assert door.call("alice") == [answer]  # its route kept
    streamed = [base_pb2.ExecutePlanResponse.FromString(m).response_id
                for m in door.call("alice", "ExecutePlan")]
    assert streamed == [f"r{i}" for i in range(STREAMED)]


@pytest.mark.parametrize("door", [True], indirect=True, ids=["tls"])
def test_a_session_over_tls_is_passed_through_and_refused_without_a_token_of_its_own(door):
    answer = config_answer(door.session_id)
    with door.channel("alice") as channel:
        assert door.call("alice", channel=channel) == [answer]
        assert door.call("alice", channel=channel) == [answer]  # passed through, over TLS
    assert door.refused("alice", token="not-a-token") == (grpc.StatusCode.UNAUTHENTICATED,
                                                          "unknown or revoked token")


def test_two_sessions_on_one_connection_each_reach_their_own_driver(door):
    # gRPC's client shares one connection between a process's channels to one target: two
    # sessions' calls interleaved on it, the second's first one after the first's route
    with door.channel("alice") as channel:
        for sid in (door.session_id, door.other_id) * 3:
            assert door.call("alice", channel=channel, session_id=sid) == [config_answer(sid)]
            streamed = door.call("alice", "ExecutePlan", channel=channel, session_id=sid)
            assert [base_pb2.ExecutePlanResponse.FromString(m).session_id
                    for m in streamed] == [sid] * STREAMED
        # the second session opened on the connection the client made after the GOAWAY, which
        # goes to the relay: its audit names that connection, not the front's hop to the relay
        ours = {f"127.0.0.1:{c.laddr.port}" for c in psutil.Process().net_connections("tcp")
                if c.raddr and c.raddr.port == door.port}
        senders = {r["app_id"]: r["sender"] for r in door.get("/api/v1/audit")
                   if r["kind"] == "submitted"}
        apps = {a["name"]: a["id"] for a in door.apps()}
        assert senders[apps[f"connect-{door.other_id[:8]}"]] in ours
        assert senders[apps[f"connect-{door.session_id[:8]}"]].startswith("127.0.0.1:")
    assert sorted(apps) == sorted(f"connect-{sid[:8]}" for sid in (door.session_id, door.other_id))


def test_a_call_on_a_connection_passed_through_is_checked_again(door):
    with door.channel("alice") as channel:
        door.call("alice", channel=channel)
        door.call("alice", channel=channel)  # on the same connection: passed through
        assert tokens.revoke(door.tokens_file, user="alice") == 1
        with pytest.raises(grpc.RpcError) as e:
            door.call("alice", channel=channel)
    assert (e.value.code(), e.value.details()) == (grpc.StatusCode.UNAUTHENTICATED,
                                                   "unknown or revoked token")


def test_a_token_revoked_between_two_calls_is_refused_at_the_next(door):
    door.call("alice")
    door.call("alice")
    assert tokens.revoke(door.tokens_file, user="alice") == 1
    assert door.refused("alice") == (grpc.StatusCode.UNAUTHENTICATED,
                                     "unknown or revoked token")


def test_another_users_token_is_refused_and_an_admins_passes_on_a_routed_session(door):
    door.call("alice")
    code, details = door.refused("bob")
    assert code is grpc.StatusCode.PERMISSION_DENIED
    assert "user bob may use the Connect session of only their own apps" in details
    # bob's token naming alice as the user: not his
    code, details = door.refused("alice", token=door.made["bob"])
    assert code is grpc.StatusCode.PERMISSION_DENIED and "is not the token's user" in details
    assert len(door.call("", token=door.made["root"])) == 1  # an admin's call (no user_id)
    assert len(door.call("alice")) == 1  # the owner's again


def test_a_session_killed_between_two_calls_is_refused_at_the_next(door):
    door.call("alice")
    door.call("alice")
    app = door.app()
    root = {"Authorization": f"Bearer {door.made['root']}"}
    assert HTTP.post(f"{door.server.url}/api/v1/apps/{app['id']}/kill", headers=root,
                      timeout=10).status_code == 200
    wait_until(lambda: door.app()["state"] == "KILLED", 30, "the session's app to be killed")
    code, details = door.refused("alice")
    assert code is grpc.StatusCode.FAILED_PRECONDITION
    assert f"its app {app['id']} was killed" in details
