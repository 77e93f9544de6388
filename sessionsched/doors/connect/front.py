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
session only: a call of another one is never passed (``calls.Calls`` holds a call's frames until
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
from collections.abc import Callable

import grpc

from sessionsched.doors.connect import frames, wire
from sessionsched.doors.connect.calls import Calls

log = logging.getLogger("sessionsched.connect")

FIRST_CALL_S = 60.0  # a client's channel connects for a call: it comes at once
MAX_SILENT_HOLD_S = 50.0
CONNECT_S = 10.0
# What a client may send before its first call is routed: a call's headers and the first
# window of its request (64 KB: the front grants no more) take far less; more is a header block
# that never ends or a flood, each held in memory until the route.
MAX_UNROUTED = 4 << 20
CLOSE_S = 5.0  # after its answer, the client may still be sending: read it out, then close
# what a side may have unsent before the other side's reading pauses: a result streams back
# without a pause every 64 KB (asyncio's default)
WRITE_BUFFER = 1 << 20

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.value[0]


class Front:
    def __init__(self, door, loopback_only: bool):
        self.door = door
        self.loopback_only = loopback_only  # gRPC's local credentials: loopback peers only
        self.connections: set[asyncio.Task] = set()  # routing
        self.open: set[_Connection] = set()

    def connection(self) -> asyncio.Protocol:
        """A new client connection's protocol (``loop.create_server``'s factory)."""
        return _Connection(self)

    async def stop(self) -> None:
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)
        for connection in list(self.open):
            connection.abort()


def _ignore(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a route nobody waits for any more


class _Connection(asyncio.Protocol):
    """One client connection. Until it is passed through, ``run`` reads what the client sends
    (``chunks``) and routes its first call; once passed through, each chunk is handled where
    it arrives (``data_received``: read, checked, written to the other side), with no
    coroutine between a read and its write."""

    def __init__(self, front: Front):
        self.front = front
        self.door = front.door
        self.calls = Calls()
        self.server = frames.ServerSide()
        self.received = bytearray()  # what may be passed on, read before the route
        # all the client sent before the route, for an answer of the front's own: a first
        # call refused while its frames are read (not a UUID, no such method) is not in
        # ``received``, and an answer that names no call is a bare GOAWAY, which the client
        # takes as UNAVAILABLE and retries for minutes
        self.sent = bytearray()
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()  # None: the client left
        self.client: asyncio.Transport | None = None
        self.driver: asyncio.Transport | None = None
        self.session = None  # the session passed through to (None: the relay)
        self.relayed_from = 0  # the local port of the connection to the relay
        self.passing = False
        self.closing = False
        self.goaway_sent = False
        self.peer = ""

    # --- the client's transport -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.client = transport
        transport.set_write_buffer_limits(high=WRITE_BUFFER)
        host, port = (transport.get_extra_info("peername") or ("?", 0))[:2]
        self.peer = f"{host}:{port}"
        if self.front.loopback_only and not ipaddress.ip_address(host).is_loopback:
            transport.abort()
            return
        self.front.open.add(self)
        transport.write(frames.FRONT_SETTINGS)
        task = asyncio.get_running_loop().create_task(self._run())
        self.front.connections.add(task)
        task.add_done_callback(self.front.connections.discard)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return  # answered: read out
        if not self.passing:
            self.chunks.put_nowait(data)
            return
        try:
            self._up(data)
        except frames.ProtocolError as e:
            log.info("Connect client %s: %s", self.peer, e)
            self._close()

    def eof_received(self) -> bool:
        self._client_left()
        return False  # the transport closes

    def connection_lost(self, exc) -> None:
        self.front.open.discard(self)
        self._client_left()

    def _client_left(self) -> None:
        self.chunks.put_nowait(None)
        if self.passing:
            self.closing = True  # nothing to tell a client that has gone
        if self.driver is not None:
            self.driver.close()

    def abort(self) -> None:
        for transport in (self.client, self.driver):
            if transport is not None:
                transport.abort()

    def pause_writing(self) -> None:  # the client reads slower than the driver answers
        if self.driver is not None:
            self.driver.pause_reading()

    def resume_writing(self) -> None:
        if self.driver is not None:
            self.driver.resume_reading()

    # --- before the route -----------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._route()
        except (ConnectionError, TimeoutError, ssl.SSLError):
            self._close()
        except frames.ProtocolError as e:
            log.info("Connect client %s: %s", self.peer, e)
            self._close()
        except Exception:
            log.exception("Connect client %s: the connection failed", self.peer)
            self._close()

    async def _route(self) -> None:
        calls = self.calls
        try:
            if not await self._read_until(lambda: calls.first is not None
                                          and calls.first.stream not in calls.reading):
                return self._close()
            first, routing = calls.first, calls.routing
            if routing is None:
                raise wire.BadRequest(f"{first.path}: no request")
            if routing.session_id in self.door.shared:
                return await self._pass_to(f"127.0.0.1:{self.door.relay.port}")
            route = asyncio.create_task(self.door.route(
                wire.METHODS[first.path], routing, first.metadata, self.peer,
                min(self.door.sessions.hold_s, MAX_SILENT_HOLD_S)))
            if not await self._read_until(route.done, route, FIRST_CALL_S + MAX_SILENT_HOLD_S):
                route.cancel()
                return self._close()
            if calls.foreign is not None:  # another session's call came while this one waited
                route.add_done_callback(_ignore)
                self.door.shared.update((routing.session_id, calls.foreign_session))
                return await self._pass_to(f"127.0.0.1:{self.door.relay.port}")
            s, address = route.result()
        except Exception as e:
            refusal = self.door.refusal(e)
            if refusal is None:
                raise
            return self._answer(refusal.code.value[0], str(refusal))
        if s is None:  # ReleaseSession of a session without a driver
            return self._answer(0, "", wire.release_session_response(routing.session_id))
        calls.refuse = True
        await self._pass_to(address, s)

    async def _read_until(self, done: Callable[[], bool], task: asyncio.Task | None = None,
                          timeout_s: float = FIRST_CALL_S) -> bool:
        """The client's frames read into ``received`` until ``done()`` or a call of another
        session than the first's; False if the client left first. ``task`` (whose end is
        ``done``) is waited for alongside."""
        get: asyncio.Future | None = None
        try:
            async with asyncio.timeout(timeout_s):
                while not done() and self.calls.foreign is None:
                    get = get or asyncio.ensure_future(self.chunks.get())
                    waits = {get} if task is None else {get, task}
                    finished, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    if get in finished:
                        chunk = get.result()
                        get = None
                        if chunk is None:
                            return False
                        self.sent += chunk
                        if len(self.sent) > MAX_UNROUTED:
                            raise frames.ProtocolError(
                                f"{len(self.sent)} bytes sent before its first call was "
                                f"routed, at most {MAX_UNROUTED}")
                        self.received += self.calls.feed(chunk)[0]
        finally:
            if get is not None:
                get.cancel()
        return True

    def _answer(self, code: int, message: str, body: bytes | None = None) -> None:
        self.client.write(frames.answer(bytes(self.sent), code, message, body))
        self._close()

    def _close(self) -> None:
        """Our last bytes written, the client's read out until it closes (a close with unread
        bytes would reset the connection, and the answer could be lost with it)."""
        self.closing = True
        if self.driver is not None:
            self.driver.close()
        if self.client.is_closing():
            return
        if self.client.can_write_eof():
            self.client.write_eof()
        asyncio.get_running_loop().call_later(CLOSE_S, self.client.close)

    # --- passed through -------------------------------------------------------------------------

    async def _pass_to(self, address: str, s=None) -> None:
        """The connection passed through to ``address``: ``s``'s driver (each later call
        checked), or the relay."""
        host, _, port = address.rpartition(":")
        try:
            self.driver, _ = await asyncio.wait_for(asyncio.get_running_loop().create_connection(
                lambda: _Driver(self), host, int(port)), CONNECT_S)
        except (OSError, TimeoutError) as e:
            return self._answer(UNAVAILABLE, f"the Connect session's driver at {address} takes "
                                f"no connection ({e}); the client retries")
        if self.client.is_closing():
            return self.driver.close()
        self.session = s
        if s is None:
            self.relayed_from = self.driver.get_extra_info("sockname")[1]
            self.door.relay.senders[self.relayed_from] = self.peer
        self.driver.write(bytes(self.received))
        self.received.clear()
        self.sent.clear()
        # what came since the route: passed on in order, before the rest
        while not self.chunks.empty() and not self.closing:
            chunk = self.chunks.get_nowait()
            if chunk is None:
                return self._close()
            self._up(chunk)
        self.passing = True

    def _up(self, chunk: bytes) -> None:
        """The client's bytes on, each later call checked first (passed through to a driver);
        a call of another session refused with GOAWAY (the client sends it again on a new
        connection, which goes to the relay)."""
        calls, s = self.calls, self.session
        passed, new = calls.feed(chunk)
        if s is not None:
            for call in new:
                refusal = self.door.recheck(s, call)
                if refusal is not None:
                    return self._cut(refusal.code.value[0], str(refusal))
            if calls.foreign is not None and not self.goaway_sent:
                self.goaway_sent = True
                self.door.shared.update((s.session_id, calls.foreign_session))
                self.client.write(frames.goaway(calls.foreign - 2, "calls of another "
                                                "session: on a new connection"))
            if calls.dropped:
                self.client.write(frames.window_update(calls.dropped))
                calls.dropped = 0
        self.driver.write(passed)

    def down(self, chunk: bytes) -> None:
        """The driver's bytes to the client."""
        if not self.closing:
            self.server.feed(chunk)
            self.client.write(chunk)

    def driver_lost(self) -> None:
        """The driver closed the connection: the calls still open ended (a kill named)."""
        self.door.relay.senders.pop(self.relayed_from, None)
        if self.closing:
            return
        if self.session is None:
            return self._close()
        code, message = self.door.driver_closed(self.session)
        self._cut(code.value[0], message)

    def _cut(self, code: int, message: str) -> None:
        """The calls still open ended with ``code``, then GOAWAY; both connections closed."""
        if self.server.between_frames:  # else the client's call ends with the connection
            client = self.calls.client
            open_calls = sorted(client.opened - self.server.closed)
            self.client.write(b"".join(
                frames.status_headers(stream, code, message, stream in self.server.answered)
                for stream in open_calls if stream <= self.calls.last_passed))
            if not self.server.goaway and not self.goaway_sent:
                self.client.write(frames.goaway(self.calls.last_passed, message))
        self._close()


class _Driver(asyncio.Protocol):
    """The connection to the driver (or the relay) of a client connection passed through."""

    def __init__(self, connection: _Connection):
        self.connection = connection

    def connection_made(self, transport: asyncio.Transport) -> None:
        transport.set_write_buffer_limits(high=WRITE_BUFFER)

    def data_received(self, data: bytes) -> None:
        self.connection.down(data)

    def connection_lost(self, exc) -> None:
        self.connection.driver_lost()

    def pause_writing(self) -> None:  # the driver reads slower than the client sends
        self.connection.client.pause_reading()

    def resume_writing(self) -> None:
        self.connection.client.resume_reading()
