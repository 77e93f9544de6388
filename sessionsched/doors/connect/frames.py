"""What the Connect door's front reads and writes of HTTP/2 (RFC 9113), gRPC's transport.

The front passes a connection's bytes through unchanged once its route is known, so it reads
only frame boundaries and, of the client's frames, the header blocks (each call's method and
token) and the first bytes of each call's request (its session). It writes three things of
its own: a whole answer on a connection it never passed on (``answer``, by ``h2``), and, on
one it did, a call's closing status (``status_headers``) and ``goaway``.

Its own header blocks use literals that are never indexed (RFC 7541, section 6.2.3): they
leave the client's HPACK table as the driver's encoder left it, so the driver's next header
block still decodes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from urllib.parse import quote

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from hpack import Decoder, Encoder, NeverIndexedHeaderTuple

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0x0, 0x1, 0x3, 0x4, 0x7, 0x8, 0x9)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
_HEAD = struct.Struct(">HBBBL")  # length (24 bits: 16 + 8), type, flags, stream id


class ProtocolError(ValueError):
    """Bytes that are not an HTTP/2 client's: the connection is closed."""


@dataclass
class Call:
    """A call's request headers (decoded; ``-bin`` values stay base64 text)."""
    stream: int
    headers: list[tuple[str, str]]
    ended: bool = False  # no request follows (END_STREAM on its headers)

    def get(self, key: str) -> str | None:
        return next((v for k, v in self.headers if k == key), None)

    @property
    def path(self) -> str:
        return self.get(":path") or ""

    @property
    def metadata(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.headers if not k.startswith(":")]


@dataclass
class Data:
    stream: int
    payload: bytes
    end: bool


def _payload(flags: int, body: memoryview) -> memoryview:
    """A DATA or HEADERS frame's content without its padding (and priority fields)."""
    start, end = 0, len(body)
    if flags & PADDED:
        if not body:
            raise ProtocolError("a padded frame with no pad length")
        start, end = 1, end - body[0]
    if flags & PRIORITY:
        start += 5
    if start > end:
        raise ProtocolError("padding longer than the frame")
    return body[start:end]


@dataclass
class Frames:
    """The client's direction of a connection, read frame by frame as its bytes arrive:
    ``feed`` returns the bytes of the frames now complete (what may be passed on) and those
    frames (type, flags, stream, content); the rest waits for its next bytes."""
    preface: bool = True  # the connection preface is still to come
    pending: bytearray = field(default_factory=bytearray)

    def feed(self, chunk: bytes) -> tuple[bytes, list[tuple[int, int, int, int, int]]]:
        """(the complete frames' bytes, each frame's type, flags, stream and its content's
        start and end in those bytes)."""
        buf = self.pending
        buf += chunk
        pos = 0
        if self.preface:
            n = min(len(buf), len(PREFACE))
            if buf[:n] != PREFACE[:n]:
                raise ProtocolError("not an HTTP/2 connection preface")
            if n < len(PREFACE):
                return b"", []
            self.preface = False
            pos = n
        spans = []
        while len(buf) - pos >= 9:
            high, low, kind, flags, stream = _HEAD.unpack_from(buf, pos)
            end = pos + 9 + (high << 8 | low)
            if end > len(buf):
                break
            spans.append((kind, flags, stream & 0x7FFFFFFF, pos + 9, end))
            pos = end
        done = bytes(buf[:pos])
        del buf[:pos]
        return done, spans


@dataclass
class Frame:
    """One of the client's frames as it came (``raw``, its 9-byte head included; the
    connection preface is one too, of type -1) and what the front read of it."""
    raw: bytes
    kind: int
    stream: int
    event: Call | Data | None = None


class ClientSide:
    """The client's direction: its frames, and in them its calls (header blocks decoded, in
    order, with one HPACK table for the connection) and their messages' bytes.

    gRPC's client sends no call before its server's settings, so the front sends its own
    (``FRONT_SETTINGS``: none, HTTP/2's defaults) at once; the client's acknowledgement of
    them is the first it sends and is not passed on (the driver, which sends its own
    settings when the bytes reach it, never sent those)."""

    def __init__(self) -> None:
        self.frames = Frames()
        self.decoder = Decoder()
        self.block: tuple[int, bytearray, bool] | None = None  # a header block arriving
        self.opened: set[int] = set()
        self.last_stream = 0
        self.front_acked = False
        # header blocks that left the HPACK table as it was -> their headers: a client's next
        # call of the same method is often the same bytes (all its fields indexed), and while
        # the table is unchanged they decode to the same headers (decoding is most of the
        # front's time per call)
        self.decoded: dict[bytes, list[tuple[str, str]]] = {}

    def _decode(self, block: bytes) -> list[tuple[str, str]]:
        table = self.decoder.header_table.dynamic_entries  # newest first
        size, newest = len(table), table[0] if table else None
        try:
            headers = self.decoder.decode(block)
        except Exception as e:  # hpack's errors have no common base
            raise ProtocolError(f"a header block that does not decode: {e}") from None
        if len(table) == size and (table[0] if table else None) is newest:
            if len(self.decoded) < 64:
                self.decoded[block] = headers
        else:
            self.decoded.clear()  # the table changed: what they decoded to may not hold
        return headers

    def feed(self, chunk: bytes) -> list[Frame]:
        was_new = self.frames.preface
        done, spans = self.frames.feed(chunk)
        out = [Frame(PREFACE, -1, 0)] if was_new and not self.frames.preface else []
        view = memoryview(done)
        for kind, flags, stream, start, end in spans:
            frame = Frame(done[start - 9:end], kind, stream)
            if kind == SETTINGS and flags & ACK and not self.front_acked:
                self.front_acked = True
                continue
            if kind == HEADERS or kind == CONTINUATION:
                frame.event = self._header_block(kind, flags, stream, view[start:end])
            elif kind == DATA:
                frame.event = Data(stream, bytes(_payload(flags, view[start:end])),
                                   bool(flags & END_STREAM))
            elif kind == RST_STREAM:
                self.opened.discard(stream)
            out.append(frame)
        return out

    def _header_block(self, kind: int, flags: int, stream: int, body: memoryview,
                      ) -> Call | Data | None:
        if kind == HEADERS:
            self.block = (stream, bytearray(_payload(flags, body)), bool(flags & END_STREAM))
        elif self.block is None or self.block[0] != stream:
            raise ProtocolError("a CONTINUATION frame out of place")
        else:
            self.block[1].extend(body)
        if not flags & END_HEADERS:
            return None
        block, ended = bytes(self.block[1]), self.block[2]
        self.block = None
        headers = self.decoded.get(block)
        if headers is None:
            headers = self._decode(block)
        if stream in self.opened or stream <= self.last_stream:
            return None  # trailers
        self.opened.add(stream)
        self.last_stream = stream
        return Call(stream, headers, ended)


class ServerSide:
    """The driver's direction, passed on as it arrives (a large result's frames are not
    waited for whole): only the frames' heads are read, for which calls the driver has
    answered headers to and closed, whether it sent GOAWAY, and whether the front may write a
    frame of its own now (``between_frames``: not inside a frame or a header block)."""

    def __init__(self) -> None:
        self.head = bytearray()  # a frame head still arriving
        self.left = 0  # bytes of the current frame's content still to come
        self.answered: set[int] = set()
        self.closed: set[int] = set()
        self.in_block = False
        self.goaway = False  # the driver sent GOAWAY

    @property
    def between_frames(self) -> bool:
        return not self.head and not self.left and not self.in_block

    def feed(self, chunk: bytes) -> None:
        pos, n = 0, len(chunk)
        while pos < n:
            if self.left:
                step = min(self.left, n - pos)
                self.left -= step
                pos += step
                continue
            take = min(9 - len(self.head), n - pos)
            self.head += chunk[pos:pos + take]
            pos += take
            if len(self.head) < 9:
                return
            high, low, kind, flags, stream = _HEAD.unpack(self.head)
            self.head.clear()
            self.left = high << 8 | low
            stream &= 0x7FFFFFFF
            if kind == HEADERS or kind == CONTINUATION:
                self.answered.add(stream)
                self.in_block = not flags & END_HEADERS
            if (kind in (HEADERS, DATA) and flags & END_STREAM) or kind == RST_STREAM:
                self.closed.add(stream)
            elif kind == GOAWAY:
                self.goaway = True


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    n = len(payload)
    return _HEAD.pack(n >> 8, n & 0xFF, kind, flags, stream) + payload


FRONT_SETTINGS = _frame(SETTINGS, 0, 0, b"")


def window_update(increment: int) -> bytes:
    """The connection's flow-control window given back by ``increment`` bytes."""
    return _frame(WINDOW_UPDATE, 0, 0, struct.pack(">L", increment))


# gRPC's grpc-message is percent-encoded UTF-8: all but printable ASCII, and "%" itself
_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def _grpc_message(text: str) -> str:
    return quote(text, safe=_SAFE)


def status_headers(stream: int, code: int, message: str, answered: bool) -> bytes:
    """A call's end with status ``code``: trailers after the driver's response headers, or a
    whole trailers-only response; never indexed (module doc)."""
    head = [] if answered else [(":status", "200"), ("content-type", "application/grpc")]
    fields = [*head, ("grpc-status", str(code)), ("grpc-message", _grpc_message(message))]
    block = Encoder().encode([NeverIndexedHeaderTuple(k, v) for k, v in fields],
                             huffman=False)
    return _frame(HEADERS, END_STREAM | END_HEADERS, stream, block)


def goaway(last_stream: int, message: str) -> bytes:
    """GOAWAY, NO_ERROR: calls on streams above ``last_stream`` were not seen (the client
    may send them again on a new connection)."""
    return _frame(GOAWAY, 0, 0, struct.pack(">LL", last_stream, 0) + message.encode()[:256])


def _split(received: bytes) -> list[bytes]:
    """The connection preface and each whole frame of ``received``, apart."""
    done, spans = Frames(preface=received.startswith(PREFACE)).feed(received)
    head = [PREFACE] if done.startswith(PREFACE) else []
    return head + [done[start - 9:end] for _kind, _flags, _stream, start, end in spans]


def answer(received: bytes, code: int, message: str, body: bytes | None = None) -> bytes:
    """All the front writes on a connection it answers itself (``received``: all it read of
    it): its first call's answer (``body``, a serialized response, with status 0; else the
    status alone), then GOAWAY naming that call as the last one seen, so the client sends its
    other calls again on a new connection."""
    conn = h2.connection.H2Connection(h2.config.H2Configuration(
        client_side=False, header_encoding="utf-8", validate_inbound_headers=False))
    conn.initiate_connection()
    first = None
    try:  # frame by frame: a frame h2 refuses after the first call leaves that call answered
        for frame in _split(received):
            first = first or next((e.stream_id for e in conn.receive_data(frame)
                                   if isinstance(e, h2.events.RequestReceived)), None)
    except h2.exceptions.H2Error:
        pass
    if first is not None:
        head = [(":status", "200"), ("content-type", "application/grpc")]
        if body is None:
            conn.send_headers(first, [*head, ("grpc-status", str(code)),
                                      ("grpc-message", _grpc_message(message))],
                              end_stream=True)
        else:
            conn.send_headers(first, head)
            conn.send_data(first, b"\0" + struct.pack(">L", len(body)) + body)
            conn.send_headers(first, [("grpc-status", "0")], end_stream=True)
    conn.close_connection(last_stream_id=first or 0)
    return conn.data_to_send()
