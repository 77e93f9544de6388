"""The Spark Connect door: Spark 4's thin client (``SparkSession.builder.remote(
"sc://sched:15002/;user_id=alice;token=T;queue=adhoc;priority=7000")``) unmodified, its
sessions queued as apps (``sessions``), every call forwarded to the session's driver.

A client's connection is routed by its first call, then passed through to the session's
driver byte for byte (``front``: no second gRPC hop; a result streams back as the driver
sends it, an artifact upload streams up, a cancel reaches the driver as the client sent it).
The first call's request is read only for routing (``wire.routing``: session id, user id).

The first call of a connection, in order:

1. who: the token (``authorization: Bearer``) through the operations port; with tokens on,
   ``user_id`` must be the token's user (pyspark sends ``$USER`` when the connection string
   has no ``user_id``);
2. the session: a known session is its owner's (or an admin's); a new one is submitted
   (``Sessions.open``: the queue's submitters, the priority range, the rate limit), or, in a
   queue with ``connect_share_level: user``, joins its user's live driver;
3. its driver: the call is held up to ``connect.hold_s`` while the app waits in its queue or
   its driver starts, then answered UNAVAILABLE with the app's position and reason. Spark's
   client retries UNAVAILABLE on its own (``DefaultPolicy``: 15 tries, backoff 50 ms x4 up
   to 60 s, about 10 minutes in all), each retry held again, so a queued session's first
   query simply takes longer; past that the client raises ``RETRIES_EXCEEDED`` whose cause
   names the position;
4. passed through, with the caller's metadata as it came (its token too: the driver runs as
   the token's user, and a Connect server started by the door reads no token); a session of
   a driver shared per user first has its fair scheduler pool set (``set_pool``, once per
   session and door process). An ended session's calls (killed, failed, released) are
   answered FAILED_PRECONDITION naming the app's end, which the client does not retry.

Steps 2-3 are done in full once per session and caller (``Route``: the caller, the driver's
address): a new connection's first call by the same caller has its token identified (a
revoked token is refused) and the app read (an ended app is refused, a driver not up goes
the full way again), but not the owner's check, the pool or the wait again. The later calls
of a connection passed through have their token and the app checked the same way
(``recheck``). A small query is several calls (``AnalyzePlan``, ``Config``, ``ExecutePlan``
of several messages, and the client's ``ReleaseExecute`` after each message):
docs/results.md, section 4, says what the door costs them.

``ReleaseSession`` (the client's ``spark.stop()``) is forwarded; the driver stops when its
last session is released and the app ends FINISHED. Released before its driver runs, the
session's app is killed. A session never seen gets the answer without an app.

The sessions' gauge (``metrics.SessionsCollector``) is added to the server's ``/metrics``.

Transport: ``server.tls`` when set (ALPN ``h2``); else, with tokens on, what gRPC's local
credentials are (the client sends a token only over TLS or to ``localhost``, where it uses
them): plaintext from loopback peers only; else plaintext.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass

import grpc

from sessionsched.config import ConnectSection, TlsSection
from sessionsched.doors.connect import wire
from sessionsched.doors.connect.frames import Call
from sessionsched.doors.connect.front import Front
from sessionsched.doors.connect.metrics import SessionsCollector
from sessionsched.doors.connect.relay import Relay
from sessionsched.doors.connect.sessions import POOL, TAKES_CALLS, Ended, Session, Sessions, Waiting
from sessionsched.doors.connect.wire import Refusal
from sessionsched.operations import auth
from sessionsched.operations.callers import bearer
from sessionsched.operations.outcomes import Kind, Outcome
from sessionsched.operations.port import Operations

log = logging.getLogger("sessionsched.connect")

STATUS = {Kind.UNAUTHORIZED: grpc.StatusCode.UNAUTHENTICATED,
          Kind.FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
          Kind.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
          Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
          Kind.REFUSED: grpc.StatusCode.RESOURCE_EXHAUSTED}


# A refusal of a limit by its HTTP status: only a cap (429) is a resource exhausted; a string
# too long (400) is the caller's to change, and RESOURCE_EXHAUSTED would say wait.
REFUSED = {400: grpc.StatusCode.INVALID_ARGUMENT, 403: grpc.StatusCode.PERMISSION_DENIED,
           413: grpc.StatusCode.INVALID_ARGUMENT}


def _refusal(out: Outcome) -> Refusal:
    code = REFUSED.get(out.status) if out.kind is Kind.REFUSED else None
    return Refusal(code or STATUS.get(out.kind, grpc.StatusCode.UNAVAILABLE), out.message)


SET_POOL_S = 30.0


@dataclass(frozen=True)
class Route:
    """A session's call routed in full: who called and where its driver listens, kept so that
    the session's next calls by the same caller skip what cannot have changed (the owner's
    check, the pool, the wait for the driver's address)."""
    caller: auth.Caller
    address: str


class ConnectDoor:
    def __init__(self, ops: Operations, section: ConnectSection, host: str,
                 tls: TlsSection | None = None):
        self.ops = ops
        self.section = section
        self.host = host
        self.tls = tls
        self.sessions = Sessions(ops, section.hold_s, section.idle_timeout_s)
        self.channels: dict[str, grpc.aio.Channel] = {}  # the relay's, set_pool's
        self.routes: dict[str, Route] = {}  # session id -> its last call's route
        self.pooled: set[str] = set()  # sessions whose pool their driver has been told
        # sessions seen on one client connection with another (gRPC's client shares one
        # between a process's channels to one target): their connections go to the relay
        self.shared: set[str] = set()
        self.relay = Relay(self)
        self.front: Front | None = None
        self.server: asyncio.Server | None = None

    # --- the server ---------------------------------------------------------------------------

    async def start(self) -> None:
        context = None
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.tls.cert, self.tls.key)
            context.set_alpn_protocols(["h2"])
        await self.relay.start()
        self.front = Front(self, loopback_only=context is None and self.ops.auth_on)
        self.server = await asyncio.get_running_loop().create_server(
            self.front.connection, self.host, self.section.port, ssl=context)
        self.ops.add_metrics(SessionsCollector(self.sessions.by_state))
        log.info("Spark Connect door on %s:%s", self.host, self.section.port)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.front.stop()
            await self.server.wait_closed()
        await self.relay.stop()
        for channel in self.channels.values():
            await channel.close()

    # --- a connection's first call ------------------------------------------------------------

    def _caller(self, authorization: str | None, user_id: str | None) -> auth.Caller:
        try:
            token = bearer(authorization)
        except auth.Unauthorized as e:
            raise Refusal(grpc.StatusCode.UNAUTHENTICATED, str(e)) from None
        who = self.ops.identify(token)
        if who.ok:
            who = self.ops.as_client(who.value)
        if not who.ok:
            raise _refusal(who)
        caller: auth.Caller = who.value
        if self.ops.auth_on and user_id not in (None, caller.user):
            raise Refusal(grpc.StatusCode.PERMISSION_DENIED,
                          f"user_id {user_id!r} is not the token's user ({caller.user}): set "
                          f"user_id={caller.user} in the connection string")
        return caller

    async def route(self, method: wire.Method, r: wire.Routing, metadata: wire.Metadata,
                    peer: str, hold_s: float) -> tuple[Session | None, str | None]:
        """(the session, its driver's address); (None, None) for ``ReleaseSession`` of a
        session that has no driver (answered by the door). Raises ``Refusal``.

        The token identified (a revoked one is refused at once), the user checked, the app
        read (an ended one is refused). A session's call whose caller is its last routed
        call's skips the rest (``Route``)."""
        authorization, _ = wire.forwarded(metadata)
        caller = self._caller(authorization, r.user_id)
        release = method.path == wire.RELEASE_SESSION
        known = None if release else self.routes.get(r.session_id)
        if known is not None and known.caller == caller:
            s = self.sessions.find(r.session_id)
            app = self._live(s)
            if app is not None and app.state in TAKES_CALLS:
                return s, known.address
        s, address = await self._route(r, caller, metadata, peer, release, hold_s)
        if s is not None and not release:
            self.routes[s.session_id] = Route(caller, address)
        return s, address

    async def _route(self, r: wire.Routing, caller: auth.Caller, metadata: wire.Metadata,
                     peer: str, release: bool, hold_s: float,
                     ) -> tuple[Session | None, str | None]:
        """A call routed in full: its session found or opened, the caller's right to it, its
        driver waited for (``ready``), its pool set."""
        p = wire.params(metadata)
        user = caller.user if self.ops.auth_on else (r.user_id or caller.user)
        s = self.sessions.find(r.session_id)
        if s is None and release:
            return None, None
        if s is None:
            s, refused = await self.sessions.open(caller, peer, r.session_id, user,
                                                  p.queue, p.priority, p.conf)
            if refused is not None:
                raise _refusal(refused)
        else:
            allowed = self.ops.may_change(caller, s.app_id, "use the Connect session of")
            if not allowed.ok and allowed.kind is not Kind.NOT_FOUND:
                raise _refusal(allowed)
        if release:
            last = self.released(s)
            app = self.ops.app(s.app_id)
            if app is not None and app.state.terminal:
                return None, None  # ended already: nothing to release
            if self.sessions.address(s) is None:
                if last:  # a driver shared with the user's other sessions stays
                    self.ops.request_kill(caller, s.app_id, actor=f"{caller.actor} (Connect "
                                          "ReleaseSession before its driver started)")
                return None, None
        try:
            address = await self.sessions.ready(s, hold_s)
        except Waiting as e:
            raise Refusal(grpc.StatusCode.UNAVAILABLE, str(e)) from None
        except Ended as e:
            await self.forget(s)
            raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, str(e)) from None
        if s.pool is not None and s.session_id not in self.pooled and not release:
            await self.set_pool(s, address, r, p.forwarded)
        return s, address

    def _live(self, s: Session):
        """The session's app (None: not stored yet); ``Refusal`` if it has ended."""
        try:
            return self.sessions.check_live(s)
        except Ended as e:
            self.routes.pop(s.session_id, None)
            raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, str(e)) from None

    def released(self, s: Session) -> bool:
        """The client released the session: True if its app serves no other session."""
        self.routes.pop(s.session_id, None)
        return self.sessions.release(s)

    async def set_pool(self, s: Session, address: str, r: wire.Routing,
                       forwarded: wire.Metadata) -> None:
        """A session of a driver shared per user: its own fair scheduler pool, set as its
        ``spark.scheduler.pool`` before its first call (Spark copies a session's settings into
        its jobs' local properties, where the fair scheduler reads the pool)."""
        request = wire.set_config(s.session_id, r.user_id, {POOL: s.pool})
        try:
            await self.channel(address).unary_unary(wire.CONFIG)(
                request, metadata=forwarded, timeout=SET_POOL_S)
        except grpc.aio.AioRpcError as e:
            raise Refusal(e.code(), f"Connect session {s.session_id}: setting its pool "
                          f"{s.pool}: {e.details()}") from None
        self.pooled.add(s.session_id)

    async def forget(self, s: Session) -> None:
        """An ended session's channel to its (gone) driver is closed."""
        self.routes.pop(s.session_id, None)
        address = self.sessions.address(s)
        channel = self.channels.pop(address, None) if address else None
        if address:
            self.relay.forget(address)
        if channel is not None:
            await channel.close()

    def channel(self, address: str) -> grpc.aio.Channel:
        ch = self.channels.get(address)
        if ch is None:
            ch = self.channels[address] = grpc.aio.insecure_channel(
                address, options=[("grpc.max_receive_message_length", -1),
                                  ("grpc.max_send_message_length", -1)])
        return ch

    # --- a connection passed through ------------------------------------------------------------

    def recheck(self, s: Session, call: Call) -> Refusal | None:
        """A later call on a connection passed through to ``s``'s driver: its token (revoked?
        still the session's caller's?) and the app (ended?); a ``ReleaseSession`` noted."""
        route = self.routes.get(s.session_id)
        try:
            caller = self._caller(call.get("authorization"), None)
            if route is None or caller != route.caller:
                allowed = self.ops.may_change(caller, s.app_id, "use the Connect session of")
                if not allowed.ok:
                    return _refusal(allowed)
            self._live(s)
        except Refusal as e:
            return e
        if call.path == wire.RELEASE_SESSION:
            self.released(s)
        return None

    def driver_closed(self, s: Session) -> tuple[grpc.StatusCode, str]:
        """What the calls still open when the driver closed their connection are told."""
        try:
            self._live(s)
        except Refusal as e:
            return e.code, str(e)
        return (grpc.StatusCode.UNAVAILABLE, f"Connect session {s.session_id}: its driver "
                "closed the connection; the client retries")

    @staticmethod
    def refusal(e: Exception) -> Refusal | None:
        """What a connection's first call is answered when routing it failed; None: not a
        refusal (a fault, logged)."""
        if isinstance(e, Refusal):
            return e
        if isinstance(e, wire.Unimplemented):
            return Refusal(grpc.StatusCode.UNIMPLEMENTED, str(e))
        if isinstance(e, wire.BadRequest):
            return Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return None
