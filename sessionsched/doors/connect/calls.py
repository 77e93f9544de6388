"""Which session each call on a client connection belongs to, read from the first bytes of
its request (the session id is field 1 of every Spark Connect request), and which of the
client's frames may therefore be passed to the driver of the connection's first session
(``front``)."""

from __future__ import annotations

from sessionsched.doors.connect import frames, wire
from sessionsched.doors.connect.frames import Call, Data


class Calls:
    """The client's frames, each call's session read from the first bytes of its request.
    Frames wait behind a call whose session is not read yet, so that none of a call of
    another session than the connection's first reaches the driver: once one is seen
    (``foreign``), with ``refuse`` on, its frames and all later calls' are dropped (the
    front's GOAWAY tells the client to send them again, on a new connection)."""

    def __init__(self) -> None:
        self.client = frames.ClientSide()
        self.first: Call | None = None
        self.routing: wire.Routing | None = None  # the first call's, once read
        self.reading: dict[int, tuple[Call, bytearray]] = {}  # calls whose session is unread
        self.held: list[frames.Frame] = []
        self.refuse = False
        # the first call of another session: its stream (calls before it are passed on, or
        # will be once their session is read; with ``refuse``, none after it is)
        self.foreign: int | None = None
        self.foreign_session = ""
        self.last_passed = 0  # the last call passed on
        self.dropped = 0  # DATA bytes of refused calls, not yet given back to the client
        self.checked: list[Call] = []  # later calls of the first's session, not yet returned

    def feed(self, chunk: bytes) -> tuple[bytes, list[Call]]:
        """(the bytes that may be passed on, the calls among them after the first)."""
        out: list[frames.Frame] = []
        for f in self.client.feed(chunk):
            e = f.event
            if isinstance(e, Call):
                if self.first is None:
                    if e.path not in wire.METHODS:
                        raise wire.Unimplemented(f"{e.path}: not a method of {wire.SERVICE}")
                    self.first = e
                if (self.foreign is None or not self.refuse) and e.path in wire.METHODS:
                    self.reading[e.stream] = (e, bytearray())  # else: the driver answers it
                    if e.ended:
                        self._read(e, None)
            elif isinstance(e, Data) and e.stream in self.reading:
                call, message = self.reading[e.stream]
                message += e.payload
                try:
                    r = _routing(call, message, e.end)
                except wire.BadRequest:
                    if call is self.first:
                        raise
                    r = None  # passed on: the driver answers it
                if r is not None or e.end:
                    self._read(call, r)
            elif f.kind == frames.RST_STREAM and f.stream in self.reading:
                self._read(self.reading[f.stream][0], None)  # cancelled before its request
            if self.refuse and self.foreign is not None and f.stream >= self.foreign:
                self.dropped += len(f.raw) - 9 if f.kind == frames.DATA else 0
                continue
            self.held.append(f)
            if not self.reading:
                out += self.held
                self.held = []
        for f in out:
            if isinstance(f.event, Call):
                self.last_passed = f.stream
        calls, self.checked = self.checked, []
        return b"".join(f.raw for f in out), calls

    def _read(self, call: Call, r: wire.Routing | None) -> None:
        del self.reading[call.stream]
        if call is self.first:
            self.routing = r
            return
        if self._same(r):
            self.checked.append(call)
        elif self.foreign is None:
            self.foreign, self.foreign_session = call.stream, r.session_id
            if self.refuse:
                self.dropped += sum(len(f.raw) - 9 for f in self.held
                                    if f.kind == frames.DATA and f.stream >= call.stream)
                self.held = [f for f in self.held if f.stream < call.stream]
                self.reading = {k: v for k, v in self.reading.items() if k < call.stream}

    def _same(self, r: wire.Routing | None) -> bool:
        return r is None or self.routing is None or r.session_id == self.routing.session_id


def _routing(call: Call, message: bytearray, end: bool) -> wire.Routing | None:
    """A call's routing once enough of its request is here (after gRPC's 5-byte prefix: a
    compression flag and the length)."""
    if len(message) < 5:
        return None
    if message[0]:
        raise wire.BadRequest(f"{call.path}: a compressed request (the door reads its "
                              "session): send it uncompressed")
    n = int.from_bytes(message[1:5], "big")
    body = bytes(message[5:5 + n])
    whole = len(body) == n
    if end and not whole:
        raise wire.BadRequest(f"{call.path}: a request cut short")
    return wire.routing(wire.METHODS[call.path], body, whole)
