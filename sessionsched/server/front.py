"""The one router in front of the doors: what uvicorn serves (and what an in-process
TestClient of the application calls first). Each HTTP request is matched once, by one table,
to its door, and what every door shares is applied here once, around whichever door it is:

1. the request body limit (``doors/common/asgi.BodyLimit``): a 413 for a Content-Length over
   ``auth.max_body_bytes`` (uploads: ``uploads.max_file_bytes``), in Spark's shape on its
   paths, before any door;
2. the door, first match wins:
   - any request but the health check while this scheduler does not serve: the standby's
     answers (``doors/standby/front.Standby``: 307 to the leader, 503, its readyz and metrics);
   - a ``POST`` to an agent route (``/api/v1/agent/register``, ``heartbeat``, ``watch``): the
     agent door (``doors/native/agent_api.AgentDoor``);
   - ``/VERSION/submissions[/...]``: Spark's REST door (``doors/spark_rest/rest.SparkDoor``),
     which answers in Spark's own JSON shapes;
   - anything else, and the lifespan: FastAPI's own stack (its error and telemetry
     middleware, its router): the native API, Apache Livy's, uploads, the dashboard and the
     OpenAPI spec, every refusal shaped by ``create_app``'s exception handlers;
3. the body counted as the door reads it: the same 413 once it is past the limit (a body sent
   without a Content-Length), if the door has not answered yet.

The agents' reports and Spark's status polls are nearly all the requests a busy scheduler
answers: their doors skip FastAPI's per-request machinery (``benchmarks/agent_load.py``).
Authentication is each door's own (the credentials each protocol's clients can send, refused
in its shape), through the one operations port.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from sessionsched.doors.common.asgi import BodyLimit, TooLarge
from sessionsched.doors.native.agent_api import ROUTES as AGENT_ROUTES
from sessionsched.doors.spark_rest.rest import is_spark
from sessionsched.doors.standby.front import HEALTH_PATH


class Front:
    """ASGI: the module docstring's table, and the body limit around the door it picks;
    ``native`` is FastAPI's stack, ``serves`` whether this scheduler answers requests itself
    (``leader.ActiveStandby``)."""

    def __init__(self, native, agents, spark, standby, limit: BodyLimit,
                 serves: Callable[[], bool]):
        self.native = native
        self.agents = agents
        self.spark = spark
        self.standby = standby
        self.limit = limit
        self.serves = serves

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.native(scope, receive, send)  # the lifespan
            return
        path = scope["path"]
        limit, setting = self.limit.of(path)
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await self.limit.refuse(path, send, limit, setting)
                return
        if path != HEALTH_PATH and not self.serves():
            door = self.standby
        elif path in AGENT_ROUTES and scope["method"] == "POST":
            door = self.agents
        elif is_spark(path):
            door = self.spark
        else:
            door = self.native
        seen = 0
        started = False

        async def counted():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise TooLarge()
            return message

        async def watched_send(message):
            nonlocal started
            started = True
            await send(message)

        try:
            await door(scope, counted, watched_send)
        except TooLarge:  # a body without a Content-Length, or a door that reads past it
            if not started:
                await self.limit.refuse(path, send, limit, setting)


class App(FastAPI):
    """The FastAPI application, entered through its ``front`` (set by ``create_app``), which
    hands FastAPI (``fastapi``) what is FastAPI's: a client of the application takes the path
    a served request takes."""

    front: Front

    async def __call__(self, scope, receive, send) -> None:
        await self.front(scope, receive, send)

    @property
    def fastapi(self):
        """FastAPI's own entry (its middleware stack, then its router)."""
        return super().__call__
