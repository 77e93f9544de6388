"""What the Connect door answers before it launches any driver: a connection's first call it
cannot route (``front``, ``calls``, ``wire``), and the operations port's refusals (``door``),
each a gRPC status the client does not retry, with one line naming the problem."""

from __future__ import annotations

import asyncio
import types

import grpc
import h2.config
import h2.connection
import h2.events
import pytest

pytest.importorskip("pyspark.sql.connect.proto")

from pyspark.sql.connect.proto import base_pb2  # noqa: E402

from sessionsched.doors.connect import door as connect_door  # noqa: E402
from sessionsched.doors.connect import frames  # noqa: E402
from sessionsched.doors.connect.front import Front  # noqa: E402
from sessionsched.operations.outcomes import Kind, failed  # noqa: E402

SERVICE = "/spark.connect.SparkConnectService"
SID = "9c1b3f4e-0d57-4d2a-8f7e-2f1f3a5b6c7d"
INVALID = str(grpc.StatusCode.INVALID_ARGUMENT.value[0])
UNIMPLEMENTED = str(grpc.StatusCode.UNIMPLEMENTED.value[0])


def request(session_id: str, flag: int = 0) -> bytes:
    body = base_pb2.ConfigRequest(session_id=session_id).SerializeToString()
    return bytes([flag]) + len(body).to_bytes(4, "big") + body


async def first_call(path: str, message: bytes, after: bytes = b"") -> dict[str, str]:
    """The grpc- fields of the answer to one call, sent as gRPC's client sends it, on a front
    whose door routes nothing (what is refused here is refused before the route)."""
    door = types.SimpleNamespace(refusal=connect_door.ConnectDoor.refusal, shared=set())
    front = Front(door, loopback_only=True)
    server = await asyncio.get_running_loop().create_server(front.connection, "127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.sockets[0].getsockname()[1])
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        c.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":path", path),
                           (":authority", "sched:15002"), ("content-type", "application/grpc"),
                           ("te", "trailers")])
        c.send_data(1, message, end_stream=True)
        writer.write(c.data_to_send() + after)
        fields: dict[str, str] = {}
        async with asyncio.timeout(10):
            while not fields:
                data = await reader.read(65536)
                assert data, "the front closed the connection without an answer"
                for e in c.receive_data(data):
                    if isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                        fields.update({k.decode(): v.decode() for k, v in e.headers
                                       if k.startswith(b"grpc-")})
        writer.close()
        return fields
    finally:
        server.close()
        await front.stop()
        await server.wait_closed()


# each was a bare GOAWAY: the client's UNAVAILABLE "Stream removed", retried for minutes
CANNOT_ROUTE = {
    "a session id not a UUID": (f"{SERVICE}/Config", request("s1"),
                                "session_id 's1' is not a UUID"),
    "no session id": (f"{SERVICE}/Config", request(""), "session_id '' is not a UUID"),
    "a compressed request": (f"{SERVICE}/Config", request(SID, flag=1),
                             f"{SERVICE}/Config: a compressed request"),
    "not the method's request": (f"{SERVICE}/Config", b"\0\0\0\0\x03\xff\xff\xff",
                                 f"{SERVICE}/Config: not a ConfigRequest"),
    "no such method": (f"{SERVICE}/Bogus", request(SID), f"{SERVICE}/Bogus: not a method of"),
}


@pytest.mark.parametrize("path,message,problem", CANNOT_ROUTE.values(), ids=CANNOT_ROUTE.keys())
def test_a_first_call_that_cannot_be_routed_is_answered_naming_the_problem(path, message,
                                                                           problem):
    fields = asyncio.run(first_call(path, message))
    code = UNIMPLEMENTED if path.endswith("Bogus") else INVALID
    assert fields["grpc-status"] == code
    assert fields["grpc-message"].startswith(problem)


def test_a_frame_h2_refuses_after_the_first_call_leaves_its_answer():
    """A DATA frame on stream 0 after a call refused was h2's ProtocolError out of the
    front's answer: logged with its stack, the connection closed with no answer."""
    fields = asyncio.run(first_call(f"{SERVICE}/Config", request("s1"),
                                    after=frames._frame(frames.DATA, 0, 0, b"xx")))
    assert fields["grpc-status"] == INVALID
    assert fields["grpc-message"].startswith("session_id 's1' is not a UUID")


async def flood(frames_n: int) -> tuple[bytes, float]:
    """A header block that never ends (CONTINUATION after CONTINUATION, 16 KB each) sent to a
    front: what it answered, and how long until it closed the connection."""
    door = types.SimpleNamespace(refusal=connect_door.ConnectDoor.refusal, shared=set())
    front = Front(door, loopback_only=True)
    server = await asyncio.get_running_loop().create_server(front.connection, "127.0.0.1", 0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.sockets[0].getsockname()[1])
        block = b"\0" * 16384
        head = frames.PREFACE + frames._frame(frames.SETTINGS, 0, 0, b"")
        writer.write(head + frames._frame(frames.HEADERS, 0, 1, block))
        answered = b""
        async with asyncio.timeout(15):
            for _ in range(frames_n):
                writer.write(frames._frame(frames.CONTINUATION, 0, 1, block))
                try:
                    await writer.drain()
                except ConnectionError:
                    break
            while chunk := await reader.read(65536):
                answered += chunk
        writer.close()
        return answered, loop.time() - started
    except ConnectionError:
        return b"", loop.time() - started
    finally:
        server.close()
        await front.stop()
        await server.wait_closed()


def test_a_header_block_that_never_ends_closes_the_connection():
    """Was held in memory whole, as long as the client kept sending (the first call's wait
    only bounds the time)."""
    answered, took_s = asyncio.run(flood(frames_n=400))  # 6.4 MB, past MAX_UNROUTED
    assert answered == frames.FRONT_SETTINGS and took_s < 15


# a limit's refusal was RESOURCE_EXHAUSTED whatever the limit: a value too long is not a wait
REFUSALS = {
    "a string past max_string": (400, grpc.StatusCode.INVALID_ARGUMENT),
    "a path outside allowed_paths": (403, grpc.StatusCode.PERMISSION_DENIED),
    "the rate limit or a full queue": (429, grpc.StatusCode.RESOURCE_EXHAUSTED),
}


@pytest.mark.parametrize("status,code", REFUSALS.values(), ids=REFUSALS.keys())
def test_a_refusal_of_the_port_is_the_status_its_limit_means(status, code):
    refusal = connect_door._refusal(failed(Kind.REFUSED, "conf: a value of 5000 characters",
                                           status))
    assert (refusal.code, str(refusal)) == (code, "conf: a value of 5000 characters")
