"""uvicorn's server, which answers the agents' held watches first when told to stop.

uvicorn's graceful stop closes the listener, then waits for every open request to end; an
agent's watch is held up to ``server.agent_keepalive_s`` (10 s by default), so a stop with
agents attached took that long. ``on_stop`` (``AgentDesk.close``) runs on the event loop as
soon as the signal arrives, before the wait: the watches answer, the agents' next requests find
the listener closed and try again later (another scheduler, or this one restarted)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import FrameType

import uvicorn


class HttpServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]):
        super().__init__(config)
        self._on_stop = on_stop
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets=None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # A signal handler: the desk's lock may be held by the code it interrupted, so the
        # release runs on the loop, not here.
        if self._loop is not None and not self.should_exit:
            self._loop.call_soon_threadsafe(self._on_stop)
        super().handle_exit(sig, frame)
