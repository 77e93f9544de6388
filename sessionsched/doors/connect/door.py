"""The Spark Connect door: Spark 4's thin client (``SparkSession.builder.remote(
"sc://sched:15002/;user_id=alice;token=T;queue=adhoc;priority=7000")``) unmodified, its
sessions queued as apps (``sessions``), every call forwarded to the session's driver.

A gRPC (``grpc.aio``) server with one generic handler for ``spark.connect.SparkConnectService``:
each call's request is read only for routing (``wire.routing``: session id, user id); the
serialized messages pass through both ways one by one (a result streams back as the driver
sends it, never buffered whole; an artifact upload streams up). Cancelling a call cancels the
driver's call.

Each call, in order:

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
4. forwarded, with the caller's metadata less its token; a session of a driver shared per
   user first has its fair scheduler pool set (``set_pool``, once per session and door
   process). An ended session's calls (killed,
   failed, released) are answered FAILED_PRECONDITION naming the app's end, which the client
   does not retry.

Steps 2-3 are done in full once per session and caller (``Route``: the caller, the driver's
address): the session's next calls by the same caller still have their token identified (a
revoked token is refused) and the app read (an ended app is refused, a driver not up goes
the full way again), but not the owner's check, the pool or the wait again. A small query is
several calls (``AnalyzePlan``, ``Config``, ``ExecutePlan`` of several messages, and the
client's ``ReleaseExecute`` after each message): docs/results.md, section 4, says where the
door's time per call goes.

``ReleaseSession`` (the client's ``spark.stop()``) is forwarded; the driver stops when its
last session is released and the app ends FINISHED. Released before its driver runs, the
session's app is killed. A session never seen gets the answer without an app.

The sessions' gauge (``metrics.SessionsCollector``) is added to the server's ``/metrics``.

Transport: ``server.tls`` when set; else, with tokens on, local credentials (the client sends
a token only over TLS or to ``localhost``, where it uses gRPC's local credentials); else
plaintext.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import grpc

from sessionsched.config import ConnectSection, TlsSection
from sessionsched.doors.connect import wire
from sessionsched.doors.connect.metrics import SessionsCollector
from sessionsched.doors.connect.sessions import POOL, TAKES_CALLS, Ended, Session, Sessions, Waiting
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


class Refusal(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


def _refusal(out: Outcome) -> Refusal:
    return Refusal(STATUS.get(out.kind, grpc.StatusCode.UNAVAILABLE), out.message)


Metadata = tuple[tuple[str, str | bytes], ...]


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
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.stubs: dict[tuple[str, str], object] = {}  # (address, method) -> multi-callable
        self.routes: dict[str, Route] = {}  # session id -> its last call's route
        self.pooled: set[str] = set()  # sessions whose pool their driver has been told
        self.server: grpc.aio.Server | None = None

    # --- the server ---------------------------------------------------------------------------

    async def start(self) -> None:
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((_Handler(self),))
        address = f"{self.host}:{self.section.port}"
        if self.tls is not None:
            creds = grpc.ssl_server_credentials([(Path(self.tls.key).read_bytes(),
                                                  Path(self.tls.cert).read_bytes())])
            self.server.add_secure_port(address, creds)
        elif self.ops.auth_on:
            self.server.add_secure_port(address, grpc.local_server_credentials(
                grpc.LocalConnectionType.LOCAL_TCP))
        else:
            self.server.add_insecure_port(address)
        await self.server.start()
        self.ops.add_metrics(SessionsCollector(self.sessions.by_state))
        log.info("Spark Connect door on %s", address)

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=1.0)
        for channel in self.channels.values():
            await channel.close()

    # --- one call -----------------------------------------------------------------------------

    async def route(self, method: wire.Method, first: bytes, context: grpc.aio.ServicerContext,
                    ) -> tuple[Session | None, str | None, Metadata]:
        """(the session, its driver's address, the metadata to forward); (None, None, ...) for
        ``ReleaseSession`` of a session that has no driver (answered by the door).

        Every call: the request's session and user read, the token identified (a revoked one
        is refused at once), the user checked, the app read (an ended one is refused). A
        session's call whose caller is its last routed call's skips the rest (``Route``)."""
        metadata = context.invocation_metadata()
        try:
            r = wire.routing(method, first)
            authorization, forwarded = wire.forwarded(metadata)
            token = bearer(authorization)
        except wire.BadRequest as e:
            raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        except auth.Unauthorized as e:
            raise Refusal(grpc.StatusCode.UNAUTHENTICATED, str(e)) from None
        who = self.ops.identify(token)
        if who.ok:
            who = self.ops.as_client(who.value)
        if not who.ok:
            raise _refusal(who)
        caller: auth.Caller = who.value
        if self.ops.auth_on and r.user_id not in (None, caller.user):
            raise Refusal(grpc.StatusCode.PERMISSION_DENIED,
                          f"user_id {r.user_id!r} is not the token's user ({caller.user}): set "
                          f"user_id={caller.user} in the connection string")
        release = method.path == wire.RELEASE_SESSION
        known = None if release else self.routes.get(r.session_id)
        if known is not None and known.caller == caller:
            s = self.sessions.find(r.session_id)
            try:
                app = self.sessions.check_live(s)
            except Ended as e:
                await self.forget(s)
                raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, str(e)) from None
            if app is not None and app.state in TAKES_CALLS:
                return s, known.address, forwarded
        s, address = await self._route(method, r, caller, metadata, context, release)
        if s is not None and not release:
            self.routes[s.session_id] = Route(caller, address)
        return s, address, forwarded

    async def _route(self, method: wire.Method, r: wire.Routing, caller: auth.Caller,
                     metadata, context: grpc.aio.ServicerContext, release: bool,
                     ) -> tuple[Session | None, str | None]:
        """A call routed in full: its session found or opened, the caller's right to it, its
        driver waited for (``ready``), its pool set."""
        p = wire.params(metadata)
        user = caller.user if self.ops.auth_on else (r.user_id or caller.user)
        s = self.sessions.find(r.session_id)
        if s is None and release:
            return None, None
        if s is None:
            s, refused = await self.sessions.open(caller, context.peer(), r.session_id, user,
                                                  p.queue, p.priority, p.conf)
            if refused is not None:
                raise _refusal(refused)
        else:
            allowed = self.ops.may_change(caller, s.app_id, "use the Connect session of")
            if not allowed.ok and allowed.kind is not Kind.NOT_FOUND:
                raise _refusal(allowed)
        if release:
            self.routes.pop(s.session_id, None)
            last = self.sessions.release(s)
            app = self.ops.app(s.app_id)
            if app is not None and app.state.terminal:
                return None, None  # ended already: nothing to release
            if self.sessions.address(s) is None:
                if last:  # a driver shared with the user's other sessions stays
                    self.ops.request_kill(caller, s.app_id, actor=f"{caller.actor} (Connect "
                                          "ReleaseSession before its driver started)")
                return None, None
        try:
            address = await self.sessions.ready(s)
        except Waiting as e:
            raise Refusal(grpc.StatusCode.UNAVAILABLE, str(e)) from None
        except Ended as e:
            await self.forget(s)
            raise Refusal(grpc.StatusCode.FAILED_PRECONDITION, str(e)) from None
        if s.pool is not None and s.session_id not in self.pooled and not release:
            await self.set_pool(s, address, r, p.forwarded)
        return s, address

    async def set_pool(self, s: Session, address: str, r: wire.Routing,
                       forwarded: Metadata) -> None:
        """A session of a driver shared per user: its own fair scheduler pool, set as its
        ``spark.scheduler.pool`` before its first call (Spark copies a session's settings into
        its jobs' local properties, where the fair scheduler reads the pool)."""
        request = wire.set_config(s.session_id, r.user_id, {POOL: s.pool})
        try:
            await self.stub(address, wire.CONFIG, "unary_unary")(request, metadata=forwarded)
        except grpc.aio.AioRpcError as e:
            raise self.upstream_failed(s, e) or Refusal(
                e.code(), f"Connect session {s.session_id}: setting its pool {s.pool}: "
                f"{e.details()}") from None
        self.pooled.add(s.session_id)

    async def forget(self, s: Session) -> None:
        """An ended session's channel to its (gone) driver is closed."""
        self.routes.pop(s.session_id, None)
        address = self.sessions.address(s)
        channel = self.channels.pop(address, None) if address else None
        for key in [k for k in self.stubs if k[0] == address]:
            del self.stubs[key]
        if channel is not None:
            await channel.close()

    def channel(self, address: str) -> grpc.aio.Channel:
        ch = self.channels.get(address)
        if ch is None:
            ch = self.channels[address] = grpc.aio.insecure_channel(
                address, options=[("grpc.max_receive_message_length", -1),
                                  ("grpc.max_send_message_length", -1)])
        return ch

    def stub(self, address: str, path: str, kind: str):
        """The driver's multi-callable for a method (``kind``: the channel's factory of it),
        made once per driver and method."""
        call = self.stubs.get((address, path))
        if call is None:
            call = self.stubs[address, path] = getattr(self.channel(address), kind)(path)
        return call

    def upstream_failed(self, s: Session, e: grpc.aio.AioRpcError) -> Refusal | None:
        """The door's own answer when the driver's call failed because the app has ended (a
        kill); None to pass the driver's error on as it is."""
        if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                            grpc.StatusCode.UNKNOWN):
            return None
        try:
            self.sessions.check_live(s)
        except Ended as ended:
            return Refusal(grpc.StatusCode.FAILED_PRECONDITION, str(ended))
        return None


async def _abort(context: grpc.aio.ServicerContext, e: Exception) -> None:
    if isinstance(e, Refusal):
        await context.abort(e.code, e.args[0])
    assert isinstance(e, grpc.aio.AioRpcError)
    # the driver's trailing metadata carries Spark's error details (grpc-status-details-bin):
    # the client reads its error class there (a reattach to an operation the driver never
    # saw is retried as ExecutePlan on INVALID_HANDLE.*_NOT_FOUND)
    await context.abort(e.code(), e.details() or "", tuple(e.trailing_metadata() or ()))


class _Handler(grpc.GenericRpcHandler):
    """One method handler per Spark Connect method, bytes in and out, made once."""

    def __init__(self, door: ConnectDoor):
        self.handlers = {path: _method_handler(door, m) for path, m in wire.METHODS.items()}

    def service(self, details: grpc.HandlerCallDetails):
        return self.handlers.get(details.method)  # None: UNIMPLEMENTED


def _method_handler(door: ConnectDoor, method: wire.Method) -> grpc.RpcMethodHandler:
    # partials, not lambdas: grpc.aio tells coroutines and async generators by their function
    # (a partial is unwrapped, a lambda is not)
    args = (door, method)
    if method.client_streaming and method.server_streaming:
        return grpc.stream_stream_rpc_method_handler(partial(_stream_both, *args))
    if method.client_streaming:
        return grpc.stream_unary_rpc_method_handler(partial(_stream_up, *args))
    if method.server_streaming:
        return grpc.unary_stream_rpc_method_handler(partial(_stream_down, *args))
    return grpc.unary_unary_rpc_method_handler(partial(_unary, *args))


async def _unary(door: ConnectDoor, method: wire.Method, request: bytes, context) -> bytes:
    try:
        s, address, forwarded = await door.route(method, request, context)
    except Refusal as e:
        await _abort(context, e)
    if s is None:
        return wire.release_session_response(wire.routing(method, request).session_id)
    call = door.stub(address, method.path, "unary_unary")
    try:
        return await call(request, metadata=forwarded, timeout=context.time_remaining())
    except grpc.aio.AioRpcError as e:
        await _abort(context, door.upstream_failed(s, e) or e)


async def _stream_down(door: ConnectDoor, method: wire.Method, request: bytes,
                       context) -> None:
    try:
        s, address, forwarded = await door.route(method, request, context)
    except Refusal as e:
        await _abort(context, e)
    call = door.stub(address, method.path, "unary_stream")(
        request, metadata=forwarded, timeout=context.time_remaining())
    await _relay(door, s, call, context)


async def _relay(door: ConnectDoor, s, call, context) -> None:
    """The driver's answers of a streaming call written to the client as they come (read and
    written one by one: no async generator between them); its failure told the client."""
    try:
        while (response := await call.read()) is not grpc.aio.EOF:
            await context.write(response)
    except grpc.aio.AioRpcError as e:
        await _abort(context, door.upstream_failed(s, e) or e)
    finally:
        call.cancel()  # the client went away: so does the driver's call (no-op when done)


async def _first(method: wire.Method, requests) -> tuple[bytes, AsyncIterator[bytes]]:
    """The first request (which routes the call) and an iterator of all of them."""
    it = requests.__aiter__()
    try:
        first = await it.__anext__()
    except StopAsyncIteration:
        raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"{method.path}: no request") from None

    async def again() -> AsyncIterator[bytes]:
        yield first
        async for r in it:
            yield r

    return first, again()


async def _stream_up(door: ConnectDoor, method: wire.Method, requests, context) -> bytes:
    try:
        first, all_of_them = await _first(method, requests)
        s, address, forwarded = await door.route(method, first, context)
    except Refusal as e:
        await _abort(context, e)
    call = door.stub(address, method.path, "stream_unary")
    try:
        return await call(all_of_them, metadata=forwarded, timeout=context.time_remaining())
    except grpc.aio.AioRpcError as e:
        await _abort(context, door.upstream_failed(s, e) or e)


async def _stream_both(door: ConnectDoor, method: wire.Method, requests, context) -> None:
    try:
        first, all_of_them = await _first(method, requests)
        s, address, forwarded = await door.route(method, first, context)
    except Refusal as e:
        await _abort(context, e)
    call = door.stub(address, method.path, "stream_stream")(
        all_of_them, metadata=forwarded, timeout=context.time_remaining())
    await _relay(door, s, call, context)
