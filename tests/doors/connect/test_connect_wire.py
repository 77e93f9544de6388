"""What the Connect door reads of a call (doors/connect/wire.py): the session and user a
request names, and the connection string's parameters in the call's metadata."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark.sql.connect.proto")

from pyspark.sql.connect.proto import base_pb2  # noqa: E402

from sessionsched.config import ServerConfig  # noqa: E402
from sessionsched.doors.connect import wire  # noqa: E402

SID = "9c1b3f4e-0d57-4d2a-8f7e-2f1f3a5b6c7d"
EXECUTE = wire.METHODS["/spark.connect.SparkConnectService/ExecutePlan"]


def test_every_method_of_the_service_is_known_with_its_streaming():
    assert (EXECUTE.client_streaming, EXECUTE.server_streaming) == (False, True)
    add = wire.METHODS["/spark.connect.SparkConnectService/AddArtifacts"]
    assert (add.client_streaming, add.server_streaming) == (True, False)
    assert wire.RELEASE_SESSION in wire.METHODS


def test_a_request_is_routed_by_its_session_and_user():
    raw = base_pb2.ExecutePlanRequest(
        session_id=SID, user_context=base_pb2.UserContext(user_id="alice")).SerializeToString()
    assert wire.routing(EXECUTE, raw) == wire.Routing(SID, "alice")
    bare = base_pb2.ExecutePlanRequest(session_id=SID).SerializeToString()
    assert wire.routing(EXECUTE, bare) == wire.Routing(SID, None)
    upper = base_pb2.ExecutePlanRequest(session_id=SID.upper()).SerializeToString()
    assert wire.routing(EXECUTE, upper) == wire.Routing(SID.upper(), None)  # Java reads it


@pytest.mark.parametrize("keep, expected", [
    (10, None),  # cut inside session_id
    (38, None),  # session_id whole, user_context may follow
    (47, wire.Routing(SID, "alice")),
    (None, wire.Routing(SID, "alice")),
], ids=["in-the-session", "before-the-user", "both-whole", "all"])
def test_a_large_first_request_is_routed_by_its_first_bytes(keep, expected):
    raw = base_pb2.ExecutePlanRequest(
        session_id=SID, user_context=base_pb2.UserContext(user_id="alice"),
        operation_id=SID).SerializeToString()
    assert wire.routing(EXECUTE, raw[:keep], whole=False) == expected
    bare = base_pb2.ExecutePlanRequest(session_id=SID, operation_id=SID).SerializeToString()
    assert wire.routing(EXECUTE, bare[:60], whole=False) == wire.Routing(SID, None)


@pytest.mark.parametrize("raw, error", [
    (base_pb2.ExecutePlanRequest(session_id="s1").SerializeToString(),
     "session_id 's1' is not a UUID"),
    (b"\xff\xff\xff", "not a ExecutePlanRequest"),
    # were taken (Python reads them as UUIDs), and a driver queued that refuses them
    (base_pb2.ExecutePlanRequest(session_id=f"urn:uuid:{SID}").SerializeToString(),
     f"session_id 'urn:uuid:{SID}' is not a UUID"),
    (base_pb2.ExecutePlanRequest(session_id=f"{{{SID}}}").SerializeToString(),
     "is not a UUID \\(8-4-4-4-12 hex digits, as Spark requires\\)"),
    (base_pb2.ExecutePlanRequest(session_id=SID.replace("-", "")).SerializeToString(),
     f"session_id '{SID.replace('-', '')}' is not a UUID"),
], ids=["session-id-not-a-uuid", "not-the-request-type", "a-urn", "in-braces", "no-hyphens"])
def test_a_request_that_cannot_be_routed_is_one_line(raw, error):
    with pytest.raises(wire.BadRequest, match=error):
        wire.routing(EXECUTE, raw)


@pytest.mark.parametrize("metadata, queue, priority", [
    ([("queue", "adhoc"), ("priority", "7000")], "adhoc", "7000"),
    ([("spark.sessionsched.queue", "etl"), ("spark.ego.priority", "300")], "etl", "300"),
    ([("queue", "adhoc"), ("spark.sessionsched.queue", "etl")], "adhoc", None),
    ([], None, None),
], ids=["short-names", "spark-properties", "short-name-first", "none"])
def test_queue_and_priority_come_from_the_metadata(metadata, queue, priority):
    p = wire.params(metadata)
    assert (p.queue, p.priority) == (queue, priority)


def test_binary_metadata_that_is_not_base64_is_a_bad_request():
    """Was binascii.Error out of the route: logged with its stack, the connection closed
    without an answer."""
    assert wire.forwarded([("x-trace-bin", "aGk")])[1] == (("x-trace-bin", b"hi"),)
    with pytest.raises(wire.BadRequest) as e:
        wire.forwarded([("x-trace-bin", "a")])
    assert str(e.value) == ("metadata x-trace-bin: not base64 (Invalid base64-encoded string: "
                            "number of data characters (1) cannot be 1 more than a multiple "
                            "of 4)")


def test_spark_parameters_are_driver_properties_and_the_token_is_not_forwarded():
    p = wire.params([("authorization", "Bearer T"), ("user-agent", "_SPARK_CONNECT_PYTHON"),
                     ("spark.executor.memory", "2g"), ("spark.ego.priority", "10"),
                     ("spark.sessionsched.token", "T2"), ("x-trace-bin", b"\x00"),
                     ("x-read-off-the-wire-bin", "AAE")])  # base64, its padding left out
    assert p.authorization == "Bearer T"
    assert p.conf == {"spark.executor.memory": "2g"}
    assert dict(p.forwarded) == {"spark.executor.memory": "2g", "spark.ego.priority": "10",
                                 "x-trace-bin": b"\x00", "x-read-off-the-wire-bin": b"\x00\x01"}


def test_the_door_is_off_unless_configured_and_refuses_unknown_settings():
    assert ServerConfig().connect is None
    assert ServerConfig.model_validate({"connect": {"port": 15002}}).connect.hold_s == 50.0
    with pytest.raises(ValueError, match="hold"):
        ServerConfig.model_validate({"connect": {"port": 15002, "hold": 5}})


# --- what a waiting or ended session's client is told (doors/connect/sessions.py) -------------

def _app(**changes):
    from sessionsched.model import AppState
    from sessionsched.operations.port import AppRead

    base = dict(id="driver-1", seq=1, name="connect-9c1b3f4e", user="alice", kind="connect",
                queue="root.adhoc", priority=7000, state=AppState.ACCEPTED, position=2,
                reason="behind driver-0", reason_code=None, submitted_at=0.0, started_at=None,
                first_executor_at=None, finished_at=None, exit_code=None, executors=0,
                target=0, demand=0, spark_app_id=None, warnings=(), log_path=None)
    return AppRead(**{**base, **changes})


NOW = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


@pytest.mark.parametrize("changes, expected", [
    ({}, "waits in queue root.adhoc (position 2: behind driver-0); app driver-1, priority 7000;"
         " the client retries"),
    ({"estimated_start": NOW + 240.4},
     "waits in queue root.adhoc (position 2: behind driver-0, estimated start in 240 s "
     "(08:04:00 UTC)); app driver-1"),
    ({"estimated_start": NOW - 5}, "estimated start in 0 s (07:59:55 UTC)"),
    ({"state": "STARTING", "position": None}, "its driver (driver-1, STARTING) is starting"),
], ids=["queued", "queued-with-an-estimate", "estimate-past", "starting"])
def test_a_waiting_sessions_message(changes, expected):
    from sessionsched.doors.connect.sessions import Session, waiting_text
    from sessionsched.model import AppState

    if "state" in changes:
        changes = {**changes, "state": AppState(changes["state"])}
    text = waiting_text(Session(SID, "driver-1", "alice"), _app(**changes), NOW)
    assert expected in text, text


def test_an_ended_sessions_message_names_the_end():
    from sessionsched.doors.connect.sessions import Session, ended_text
    from sessionsched.model import AppState

    text = ended_text(Session(SID, "driver-1", "alice"),
                      _app(state=AppState.KILLED, reason="killed by bob"))
    assert text == (f"Connect session {SID} has ended: its app driver-1 was killed (killed by "
                    "bob); open a new session")
