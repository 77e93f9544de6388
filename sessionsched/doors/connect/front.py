"""The Connect door's front: one TCP (or TLS) connection of a Spark Connect client at a time,
routed by its first call, then passed through to the session's driver byte for byte.

A gRPC relay pays a second gRPC hop for every call and every streamed message (about 0.7 ms
of Python per unary call here, docs/results.md section 4); a small query is nine calls. The
front reads the connection's first call only far enough to route it (its headers and the
first bytes of its request), holds it while the session's app waits (``ConnectDoor.route``),
then opens a connection to the driver, writes it everything the client sent, and from then on
copies bytes both ways. The client's HTTP/2 connection is then the driver's: its settings,
flow control, streams and HPACK tables are theirs; the front reads frame boundaries and
decodes the client's header blocks (``frames.ClientSide``), which is all it needs to check
each later call's token and the session's app (``ConnectDoor.recheck``) and to note a
``ReleaseSession``.

gRPC's client makes no call before its server's settings arrive: the front sends its own
at once (none: HTTP/2's defaults; ``frames.ClientSide`` keeps the client's acknowledgement of
them from the driver, which sends its own settings when the bytes reach it). It acknowledges
none of the client's: the driver does. The client waits a minute for that
(``grpc.http2.settings_timeout``), so a call is held at most ``MAX_SILENT_HOLD_S`` here
whatever ``connect.hold_s`` says.

The front answers a connection itself when it routes none of it: a refusal (a bad token, the
queue's rules), ``Waiting`` after the hold (UNAVAILABLE, which the client retries on a new
connection) or a ``ReleaseSession`` with no driver; then GOAWAY and the connection closes
(``frames.answer``).

On a connection passed through, the front ends the calls still open with a status of its own
and GOAWAY (``cut``) when a later call is refused (its token revoked, its session ended) or
when the driver closes the connection (a kill: FAILED_PRECONDITION naming the end, which the
client does not retry; else UNAVAILABLE, which it does, on a new connection that is routed
again).

gRPC's client shares one connection between a process's channels to one target, so two
sessions of one notebook share it. A connection passed through carries its first call's
session only: a call of another one is never passed (``Calls`` holds a call's frames until
its session is read), and GOAWAY names the last call passed, so the client sends the other
session's call again on a new connection (gRPC retries a call the server never saw by
itself). Both sessions are then ``shared``: their connections go to the ``relay``, which
routes call by call (a second gRPC hop); so does a connection on which another session's call
comes while its first call is held.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import ssl

import grpc

from sessionsched.doors.connect import frames, wire
from sessionsched.doors.connect.frames import Call, Data

log = logging.getLogger("sessionsched.connect")

READ = 1 << 16
FIRST_CALL_S = 60.0  # a client's channel connects for a call: it comes at once
MAX_SILENT_HOLD_S = 50.0
CONNECT_S = 10.0
CLOSE_S = 5.0  # after its answer, the client may still be sending: read it out, then close

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.value[0]


class Front:
    def __init__(self, door, tls: ssl.SSLContext | None, loopback_only: bool):
        self.door = door
        self.tls = tls
        self.loopback_only = loopback_only  # gRPC's local credentials: loopback peers only
        self.connections: set[asyncio.Task] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.connections.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        try:
            if self.loopback_only and not ipaddress.ip_address(peer[0]).is_loopback:
                return
            await _Connection(self.door, reader, writer, f"{peer[0]}:{peer[1]}").run()
        except (ConnectionError, asyncio.TimeoutError, ssl.SSLError):
            pass
        except frames.ProtocolError as e:
            log.info("Connect client %s: %s", peer, e)
        except Exception:
            log.exception("Connect client %s: the connection failed", peer)
        finally:
            self.connections.discard(task)
            writer.close()

    async def stop(self) -> None:
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)


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
        self.foreign: int | None = None  # the first call of another session: its stream
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
        elif r is not None and self.routing is not None and self.foreign is None \
                and r.session_id != self.routing.session_id:
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


def _ignore(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a route nobody waits for any more


class _Connection:
    def __init__(self, door, reader, writer, peer: str):
        self.door = door
        self.reader = reader
        self.writer = writer
        self.peer = peer
        self.calls = Calls()
        self.server = frames.ServerSide()
        self.received = bytearray()  # what may be passed on, read before the route
        self.driver: asyncio.StreamWriter | None = None

    async def run(self) -> None:
        self.writer.write(frames.FRONT_SETTINGS)
        calls = self.calls
        try:
            if not await self._read_until(lambda: calls.first is not None
                                          and calls.first.stream not in calls.reading):
                return
            first, routing = calls.first, calls.routing
            if routing is None:
                raise wire.BadRequest(f"{first.path}: no request")
            if routing.session_id in self.door.shared:
                return await self._pass_to(f"127.0.0.1:{self.door.relay.port}")
            route = asyncio.create_task(self.door.route(
                wire.METHODS[first.path], routing, first.metadata, self.peer,
                min(self.door.sessions.hold_s, MAX_SILENT_HOLD_S)))
            if not await self._read_until(route.done, FIRST_CALL_S + MAX_SILENT_HOLD_S):
                route.cancel()
                return
            if calls.foreign is not None:  # another session's call came while this one waited
                route.add_done_callback(_ignore)
                self.door.shared.update((routing.session_id, calls.foreign_session))
                return await self._pass_to(f"127.0.0.1:{self.door.relay.port}")
            s, address = route.result()
        except Exception as e:
            refusal = self.door.refusal(e)
            if refusal is None:
                raise
            return await self._answer(refusal.code.value[0], str(refusal))
        if s is None:  # ReleaseSession of a session without a driver
            return await self._answer(0, "", wire.release_session_response(routing.session_id))
        calls.refuse = True
        await self._pass_to(address, s)

    async def _read_until(self, done, timeout_s: float = FIRST_CALL_S) -> bool:
        """The client's frames read into ``received`` until ``done()`` or a call of another
        session than the first's; False if the client left first. ``done`` is a task's
        ``done``: that task is waited for alongside."""
        task = getattr(done, "__self__", None)
        read: asyncio.Future | None = None
        try:
            async with asyncio.timeout(timeout_s):
                while not done() and self.calls.foreign is None:
                    read = read or asyncio.ensure_future(self.reader.read(READ))
                    waits = {read, task} if isinstance(task, asyncio.Task) else {read}
                    finished, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    if read in finished:
                        chunk = read.result()
                        read = None
                        if not chunk:
                            return False
                        self.received += self.calls.feed(chunk)[0]
        finally:
            if read is not None:
                read.cancel()
        return True

    async def _pass_to(self, address: str, s=None) -> None:
        """The connection passed through to ``address``: ``s``'s driver (each later call
        checked), or the relay."""
        host, _, port = address.rpartition(":")
        try:
            driver_reader, self.driver = await asyncio.wait_for(
                asyncio.open_connection(host, int(port)), CONNECT_S)
        except (OSError, TimeoutError) as e:
            return await self._answer(UNAVAILABLE, f"the Connect session's driver at {address} "
                                      f"takes no connection ({e}); the client retries")
        self.driver.write(bytes(self.received))
        self.received.clear()
        up = asyncio.create_task(self._up(s))
        down = asyncio.create_task(self._down(s, driver_reader))
        try:
            await asyncio.wait((up, down), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            self.driver.close()
        await self._close_gently()

    async def _up(self, s) -> None:
        """The client's bytes on, each later call checked first (passed through to a driver);
        a call of another session refused with GOAWAY (the client sends it again on a new
        connection, which goes to the relay)."""
        calls = self.calls
        while chunk := await self.reader.read(READ):
            passed, new = calls.feed(chunk)
            if s is not None:
                for call in new:
                    refusal = self.door.recheck(s, call)
                    if refusal is not None:
                        return self._cut(refusal.code.value[0], str(refusal))
                if calls.foreign is not None and not self.server.goaway_sent:
                    self.server.goaway_sent = True
                    self.door.shared.update((s.session_id, calls.foreign_session))
                    self.writer.write(frames.goaway(calls.last_passed, "calls of another "
                                                    "session: on a new connection"))
                if calls.dropped:
                    self.writer.write(frames.window_update(calls.dropped))
                    calls.dropped = 0
            self.driver.write(passed)
            await self.driver.drain()

    async def _down(self, s, driver_reader: asyncio.StreamReader) -> None:
        """The driver's bytes to the client; when the driver closes, the calls still open
        ended (a kill named)."""
        try:
            while chunk := await driver_reader.read(READ):
                self.writer.write(self.server.feed(chunk))
                await self.writer.drain()
        except ConnectionError:
            pass
        if s is not None:
            code, message = self.door.driver_closed(s)
            self._cut(code.value[0], message)

    def _cut(self, code: int, message: str) -> None:
        """The calls still open ended with ``code``, then GOAWAY; the driver's connection
        closed (``run`` closes the client's)."""
        if not self.server.in_block:
            client = self.calls.client
            open_calls = sorted(client.opened - self.server.closed)
            self.writer.write(b"".join(
                frames.status_headers(stream, code, message, stream in self.server.answered)
                for stream in open_calls if stream <= self.calls.last_passed))
            if not self.server.goaway and not self.server.goaway_sent:
                self.writer.write(frames.goaway(self.calls.last_passed, message))
        self.driver.close()

    async def _answer(self, code: int, message: str, body: bytes | None = None) -> None:
        self.writer.write(frames.answer(bytes(self.received), code, message, body))
        await self._close_gently()

    async def _close_gently(self) -> None:
        """Our last bytes written, the client's read out until it closes (a close with unread
        bytes would reset the connection, and the answer could be lost with it)."""
        await self.writer.drain()
        if self.writer.can_write_eof():
            self.writer.write_eof()
        try:
            async with asyncio.timeout(CLOSE_S):
                while await self.reader.read(READ):
                    pass
        except (TimeoutError, ConnectionError):
            pass
