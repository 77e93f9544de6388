"""The one router in front of the doors: what uvicorn (and an in-process TestClient) calls
first. Each HTTP request is matched once, by one table, to its door, and the concerns every
door shares are applied once, around whichever door it is:

- the door, first match wins:
  - any request but the health check while this scheduler does not serve: the standby's
    answers (``doors/standby/front.Standby``: 307 to the leader, 503, its readyz and metrics);
  - a ``POST`` to an agent route (``/api/v1/agent/register``, ``heartbeat``, ``watch``): the
    agent door (``doors/native/agent_api.AgentDoor``);
  - ``/VERSION/submissions[/...]``: Spark's REST door (``doors/spark_rest/rest.SparkDoor``),
    which answers in Spark's own JSON shapes;
  - anything else, and the lifespan: FastAPI's own stack (its error and telemetry middleware,
    its router): the native API, Apache Livy's, uploads, the dashboard and the OpenAPI spec,
    every refusal shaped by ``create_app``'s exception handlers;
- the request body limit (``doors/common/asgi.BodyLimit``): 413 before any door reads a body
  over ``auth.max_body_bytes`` (uploads: ``uploads.max_file_bytes``), in Spark's shape on its
  paths.

The agents' reports and Spark's status polls are nearly all the requests a busy scheduler
answers: their doors skip FastAPI's per-request machinery (``benchmarks/agent_load.py``).
Authentication is each door's own (the credentials each protocol's clients can send, refused
in its shape), through the one operations port.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from sessionsched.doors.common.asgi import BodyLimit
from sessionsched.doors.native.agent_api import ROUTES as AGENT_ROUTES
from sessionsched.doors.spark_rest.rest import is_spark
from sessionsched.doors.standby.front import HEALTH_PATH


class Front:
    """ASGI: the module docstring's table and the body limit; ``native`` is FastAPI's stack,
    ``serves`` whether this scheduler answers requests itself (``leader.ActiveStandby``)."""

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
        if path != HEALTH_PATH and not self.serves():
            door = self.standby
        elif path in AGENT_ROUTES and scope["method"] == "POST":
            door = self.agents
        elif is_spark(path):
            door = self.spark
        else:
            door = self.native
        await self.limit(door, scope, receive, send)


class App(FastAPI):
    """The FastAPI application, entered through its ``front`` (set by ``create_app``): uvicorn
    and TestClient call the application, the front hands FastAPI (``fastapi``) what is
    FastAPI's."""

    front: Front

    async def __call__(self, scope, receive, send) -> None:
        await self.front(scope, receive, send)

    @property
    def fastapi(self):
        """FastAPI's own entry (its middleware stack, then its router)."""
        return super().__call__
