"""The Connect door's relay: a connection whose calls belong to more than one session (gRPC's
client shares one connection between the channels of a process that have the same target:
two sessions of one notebook) is relayed call by call instead of passed through (``front``).

A gRPC (``grpc.aio``) server on a loopback port of its own, which the front hands such a
connection to byte for byte, with one generic handler for ``spark.connect.SparkConnectService``:
each call routed (``ConnectDoor.route``, the session read from its request), its serialized
messages passed on both ways one by one to its session's driver (a result streams back as the
driver sends it, never buffered whole; an artifact upload streams up), with the caller's
metadata less its token. Cancelling a call cancels the driver's call. Each call and streamed
message pays a second gRPC hop here (docs/results.md, section 4).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial

import grpc

from sessionsched.doors.connect import wire
from sessionsched.doors.connect.sessions import Ended, Session
from sessionsched.doors.connect.wire import Refusal


class Relay:
    def __init__(self, door):
        self.door = door
        self.stubs: dict[tuple[str, str], object] = {}  # (address, method) -> multi-callable
        self.server: grpc.aio.Server | None = None
        self.port = 0
        # the front's end of each connection it hands here (its local port) -> the client's
        # HOST:PORT: the relay's own peer is the front, and the audit names the client
        self.senders: dict[int, str] = {}

    async def start(self) -> None:
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((_Handler(self),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=1.0)

    async def route(self, method: wire.Method, first: bytes, context):
        """(the session, its driver's address, the metadata to forward); (None, None, ...)
        for ``ReleaseSession`` of a session that has no driver (answered here)."""
        try:
            r = wire.routing(method, first)
        except wire.BadRequest as e:
            raise Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        metadata = context.invocation_metadata()
        s, address = await self.door.route(method, r, metadata, self.sender(context.peer()),
                                           self.door.sessions.hold_s)
        return s, address, wire.forwarded(metadata)[1]

    def sender(self, peer: str) -> str:
        """The client behind the front's connection ``peer`` (gRPC's ``ipv4:HOST:PORT``)."""
        port = peer.rpartition(":")[2]
        return self.senders.get(int(port), peer) if port.isdigit() else peer

    def stub(self, address: str, path: str, kind: str):
        """The driver's multi-callable for a method (``kind``: the channel's factory of it),
        made once per driver and method."""
        call = self.stubs.get((address, path))
        if call is None:
            call = self.stubs[address, path] = getattr(self.door.channel(address), kind)(path)
        return call

    def forget(self, address: str) -> None:
        for key in [k for k in self.stubs if k[0] == address]:
            del self.stubs[key]

    def upstream_failed(self, s: Session, e: grpc.aio.AioRpcError) -> Refusal | None:
        """The door's own answer when the driver's call failed because the app has ended (a
        kill); None to pass the driver's error on as it is."""
        if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                            grpc.StatusCode.UNKNOWN):
            return None
        try:
            self.door.sessions.check_live(s)
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

    def __init__(self, door: Relay):
        self.handlers = {path: _method_handler(door, m) for path, m in wire.METHODS.items()}

    def service(self, details: grpc.HandlerCallDetails):
        return self.handlers.get(details.method)  # None: UNIMPLEMENTED


def _method_handler(door: Relay, method: wire.Method) -> grpc.RpcMethodHandler:
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


async def _routed(door: Relay, method: wire.Method, first: bytes, context):
    """``Relay.route``'s answer; a refusal aborts the call with its status."""
    try:
        return await door.route(method, first, context)
    except Refusal as e:
        await _abort(context, e)


async def _answered(door: Relay, method: wire.Method, kind: str, first: bytes, requests,
                    context) -> bytes:
    """A call the driver answers once (``requests``: the request, or all of them)."""
    s, address, forwarded = await _routed(door, method, first, context)
    if s is None:
        return wire.release_session_response(wire.routing(method, first).session_id)
    call = door.stub(address, method.path, kind)
    try:
        return await call(requests, metadata=forwarded, timeout=context.time_remaining())
    except grpc.aio.AioRpcError as e:
        await _abort(context, door.upstream_failed(s, e) or e)


async def _streamed(door: Relay, method: wire.Method, kind: str, first: bytes, requests,
                    context) -> None:
    """A call the driver answers with a stream: written to the client as it comes (read and
    written one by one: no async generator between them); its failure told the client."""
    s, address, forwarded = await _routed(door, method, first, context)
    call = door.stub(address, method.path, kind)(
        requests, metadata=forwarded, timeout=context.time_remaining())
    try:
        while (response := await call.read()) is not grpc.aio.EOF:
            await context.write(response)
    except grpc.aio.AioRpcError as e:
        await _abort(context, door.upstream_failed(s, e) or e)
    finally:
        call.cancel()  # the client went away: so does the driver's call (no-op when done)


async def _first(method: wire.Method, requests, context) -> tuple[bytes, AsyncIterator[bytes]]:
    """The first request (which routes the call) and an iterator of all of them."""
    it = requests.__aiter__()
    try:
        first = await it.__anext__()
    except StopAsyncIteration:
        await _abort(context, Refusal(grpc.StatusCode.INVALID_ARGUMENT,
                                      f"{method.path}: no request"))

    async def again() -> AsyncIterator[bytes]:
        yield first
        async for r in it:
            yield r

    return first, again()


async def _unary(door: Relay, method: wire.Method, request: bytes, context) -> bytes:
    return await _answered(door, method, "unary_unary", request, request, context)


async def _stream_down(door: Relay, method: wire.Method, request: bytes, context) -> None:
    await _streamed(door, method, "unary_stream", request, request, context)


async def _stream_up(door: Relay, method: wire.Method, requests, context) -> bytes:
    first, all_of_them = await _first(method, requests, context)
    return await _answered(door, method, "stream_unary", first, all_of_them, context)


async def _stream_both(door: Relay, method: wire.Method, requests, context) -> None:
    first, all_of_them = await _first(method, requests, context)
    await _streamed(door, method, "stream_stream", first, all_of_them, context)
