"""What the Connect door's front reads and writes of HTTP/2 (doors/connect/frames.py), against
``h2``'s own client and server: a client's calls read from its bytes however they are cut,
the front's settings acknowledgement kept from the driver, and the front's own answers as a
client decodes them (its status written into a connection leaves the HPACK table as it was)."""

from __future__ import annotations

import h2.config
import h2.connection
import h2.events
import pytest
from hpack import Decoder, Encoder

from sessionsched.doors.connect import calls as front_calls
from sessionsched.doors.connect import frames

PATH = "/spark.connect.SparkConnectService/Config"


def client(*calls: tuple[str, str]) -> tuple[h2.connection.H2Connection, bytes]:
    """An h2 client and the bytes it sends for ``calls`` ((path, token) each, with a body)."""
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    for path, token in calls:
        stream = c.get_next_available_stream_id()
        c.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":path", path),
                                (":authority", "sched:15002"), ("te", "trailers"),
                                ("content-type", "application/grpc"),
                                ("authorization", f"Bearer {token}")])
        c.send_data(stream, b"\0\0\0\0\x02hi", end_stream=True)
    return c, c.data_to_send()


@pytest.mark.parametrize("cut", [1, 7, 24, 50, 10_000], ids=lambda n: f"read-{n}-bytes-at-a-time")
def test_a_clients_calls_are_read_however_its_bytes_are_cut(cut):
    _, sent = client((PATH, "T1"), (PATH, "T2"))
    side = frames.ClientSide()
    passed, events = b"", []
    for i in range(0, len(sent), cut):
        got = side.feed(sent[i:i + cut])
        passed += b"".join(f.raw for f in got)
        events += [f.event for f in got if f.event is not None]
    calls = [e for e in events if isinstance(e, frames.Call)]
    assert [(c.stream, c.path, c.get("authorization")) for c in calls] == [
        (1, PATH, "Bearer T1"), (3, PATH, "Bearer T2")]
    data = [(e.stream, e.payload, e.end) for e in events if isinstance(e, frames.Data)]
    assert data == [(1, b"\0\0\0\0\x02hi", True), (3, b"\0\0\0\0\x02hi", True)]
    assert passed == sent  # whole frames: all of it once complete
    assert side.opened == {1, 3}


def test_not_http2_is_refused_at_once():
    with pytest.raises(frames.ProtocolError, match="preface"):
        frames.ClientSide().feed(b"GET / HTTP/1.1\r\n")


def test_the_clients_ack_of_the_fronts_settings_is_not_passed_on():
    c, sent = client((PATH, "T"))
    side = frames.ClientSide()
    side.feed(sent)
    c.receive_data(frames.FRONT_SETTINGS)  # the front's settings: the client acknowledges
    ack = c.data_to_send()
    assert ack and side.feed(ack) == []
    driver = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    driver.initiate_connection()
    c.receive_data(driver.data_to_send())  # the driver's own: that ack passes
    again = c.data_to_send()
    assert again and b"".join(f.raw for f in side.feed(again)) == again


def test_the_fronts_status_ends_a_call_and_leaves_the_hpack_table_as_it_was():
    encoder, decoder = Encoder(), Decoder()
    before = encoder.encode([(":status", "200"), ("x-driver", "first")])
    decoder.decode(before)  # the driver's headers: now in both tables
    ours = frames.status_headers(5, 9, "Connect session s has ended: 100% done", answered=True)
    fields = decoder.decode(ours[9:])
    assert fields == [("grpc-status", "9"),
                      ("grpc-message", "Connect session s has ended: 100%25 done")]
    # the driver's next block refers to its table by index: it still decodes
    assert decoder.decode(encoder.encode([("x-driver", "first")])) == [("x-driver", "first")]


@pytest.mark.parametrize("body, expected", [
    (None, {"grpc-status": "14", "grpc-message": "waits in queue adhoc (position 2)"}),
    (b"released", {"grpc-status": "0"}),
], ids=["a-status-alone", "a-response"])
def test_a_connection_answered_by_the_front_gets_its_answer_then_goaway(body, expected):
    c, sent = client((PATH, "T"), (PATH, "T"))
    events = c.receive_data(frames.answer(sent, 14, "waits in queue adhoc (position 2)", body))
    trailers = [e for e in events if isinstance(e, (h2.events.TrailersReceived,
                                                     h2.events.ResponseReceived))
                and e.stream_id == 1 and any(k == b"grpc-status" for k, _ in e.headers)]
    assert {k.decode(): v.decode() for k, v in trailers[0].headers
            if k.startswith(b"grpc-")} == expected
    got = b"".join(e.data for e in events if isinstance(e, h2.events.DataReceived))
    assert got == (b"\0\0\0\0\x08released" if body else b"")
    (goaway,) = [e for e in events if isinstance(e, h2.events.ConnectionTerminated)]
    assert goaway.last_stream_id == 1  # the second call: not seen, sent again elsewhere


# --- the front's calls: which frames pass to the session's driver --------------------------------

A, B = "9c1b3f4e-0d57-4d2a-8f7e-2f1f3a5b6c7d", "0f0e0d0c-0b0a-4908-8706-050403020100"


def connect_client() -> h2.connection.H2Connection:
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    return c


def config_call(c: h2.connection.H2Connection, session: str, data: bool = True) -> int:
    """A Config call of ``session`` (its request's bytes too unless not ``data``)."""
    from pyspark.sql.connect.proto import base_pb2

    stream = c.get_next_available_stream_id()
    c.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":path", PATH),
                            (":authority", "sched:15002"), ("content-type", "application/grpc")])
    if data:
        body = base_pb2.ConfigRequest(session_id=session).SerializeToString()
        c.send_data(stream, b"\0" + len(body).to_bytes(4, "big") + body, end_stream=True)
    return stream


def test_a_calls_frames_wait_until_its_session_is_read():
    from pyspark.sql.connect.proto import base_pb2

    calls, c = front_calls.Calls(), connect_client()
    config_call(c, A)
    calls.feed(c.data_to_send())
    second = config_call(c, A, data=False)
    headers_only = c.data_to_send()
    assert calls.feed(headers_only) == (b"", [])  # held: whose call is it?
    body = base_pb2.ConfigRequest(session_id=A).SerializeToString()
    c.send_data(second, b"\0" + len(body).to_bytes(4, "big") + body[:10])
    assert calls.feed(c.data_to_send())[0] == b""  # still: the session id is cut
    c.send_data(second, body[10:], end_stream=True)
    passed, checked = calls.feed(c.data_to_send())
    assert passed.startswith(headers_only) and [x.stream for x in checked] == [second]


def test_another_sessions_call_is_dropped_and_its_bytes_given_back():
    calls, c = front_calls.Calls(), connect_client()
    config_call(c, A)
    calls.feed(c.data_to_send())
    calls.refuse = True  # passed through to A's driver
    mine = config_call(c, A)
    theirs = config_call(c, B)
    after = config_call(c, A)  # after the other session's: refused too (GOAWAY names `mine`)
    sent = c.data_to_send()
    passed, checked = calls.feed(sent)
    assert [x.stream for x in checked] == [mine]
    assert (calls.foreign, calls.foreign_session, calls.last_passed) == (theirs, B, mine)
    assert calls.dropped == 2 * (5 + 38)  # the two refused calls' DATA: their windows back
    assert len(passed) < len(sent) and after > theirs


def test_a_call_cancelled_before_its_request_holds_nothing():
    calls, c = front_calls.Calls(), connect_client()
    config_call(c, A)
    calls.feed(c.data_to_send())
    cancelled = config_call(c, A, data=False)
    c.reset_stream(cancelled)
    sent = c.data_to_send()
    assert calls.feed(sent)[0] == sent and not calls.reading  # passed on: the driver's to end


def test_a_header_block_seen_before_is_decoded_again_once_the_table_changed():
    side, encoder = frames.ClientSide(), Encoder()
    side.feed(frames.PREFACE)

    def call(stream: int, block: bytes) -> list[tuple[str, str]]:
        (f,) = side.feed(frames._frame(frames.HEADERS, frames.END_HEADERS, stream, block))
        return f.event.headers

    assert call(1, encoder.encode([("queue", "etl")])) == [("queue", "etl")]  # inserted
    indexed = encoder.encode([("queue", "etl")])  # the newest entry, by index: no insertion
    assert call(3, indexed) == [("queue", "etl")] and indexed in side.decoded
    assert call(5, indexed) == [("queue", "etl")]  # the same bytes: from what it decoded to
    assert call(7, encoder.encode([("queue", "adhoc")])) == [("queue", "adhoc")]  # inserted
    # the same bytes now name the newest entry, another one: decoded again, not remembered
    assert call(9, indexed) == [("queue", "adhoc")]


@pytest.mark.parametrize("cut", [1, 5, 9, 10, 10_000], ids=lambda n: f"read-{n}-bytes-at-a-time")
def test_the_drivers_bytes_are_passed_as_they_come_and_its_frames_followed(cut):
    c, sent = client((PATH, "T"), (PATH, "T"))
    driver = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    driver.initiate_connection()
    driver.receive_data(sent)
    driver.send_headers(1, [(":status", "200"), ("content-type", "application/grpc")])
    driver.send_data(1, b"\0\0\0\0\x03abc")
    driver.send_headers(1, [("grpc-status", "0")], end_stream=True)
    driver.send_headers(3, [(":status", "200"), ("content-type", "application/grpc")])
    driver.send_data(3, b"\0\0\0\0\x03abc")  # call 3 still open
    answered = driver.data_to_send()
    side = frames.ServerSide()
    between = []
    for i in range(0, len(answered), cut):
        side.feed(answered[i:i + cut])
        between.append(side.between_frames)
    assert (side.answered, side.closed, side.goaway) == ({1, 3}, {1}, False)
    assert between[-1] and (cut > len(answered) or not all(between))
