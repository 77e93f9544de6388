"""The agent protocol over HTTP (docs/design/agent-protocol.md): register, heartbeat and watch.

Every running driver's agent reports (a heartbeat) when its facts change and at least every
keep-alive -- once a second on the old protocol -- and waits for its decisions with a watch
held open until they change: with a thousand drivers these are nearly all the requests a
scheduler answers, so the server's front (``server/front.py``) sends a ``POST`` to one of
these routes to ``AgentDoor``, not to FastAPI. The handlers are the same (``register``,
``heartbeat``, ``watch``: one call of the operations port, which checks the caller and asks the
agent desk, which never waits for a cycle; a watch awaits the desk's future on the event loop,
no thread), but the request skips what FastAPI spends on each one — its middleware, the walk
through every route, dependency solving, a worker thread for the body and the response model's
validation (the answer is written by the C JSON encoder) — and its body is parsed by pydantic's
JSON parser in one call (pydantic-core: as cheap as ``json.loads`` on these bodies, and its
refusals name the field): at 300 agents the server's CPU halved, at 1,000 it keeps up
(``benchmarks/agent_load.py``, docs/design/agent-protocol.md). The FastAPI routes stay for the
OpenAPI spec (and answer any other method: 405); both give the same answers and refusals
(``tests/doors/native/test_agent_api.py``).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ValidationError

from sessionsched.doors.common.asgi import send_answer
from sessionsched.doors.native.agent_schemas import (
    AgentHeartbeat,
    AgentRegister,
    AgentReply,
    AgentWatch,
)
from sessionsched.doors.native.deps import CallerDep, OpsDep, answer, identify
from sessionsched.doors.native.schemas import error_responses
from sessionsched.doors.native.views import unreadable, validation_detail
from sessionsched.model import Resources
from sessionsched.model.custom import custom_of
from sessionsched.model.profiles import Profile
from sessionsched.model.stages import MAX_ACTIVE, MAX_DONE, ActiveStage, DoneStage, Stages
from sessionsched.model.text import one_line
from sessionsched.operations import auth
from sessionsched.operations.port import Operations, executors_of

log = logging.getLogger("sessionsched.server")

router = APIRouter()


def register(ops: Operations, caller: auth.Caller, body: AgentRegister) -> dict:
    return answer(ops.register(caller, body.app_id, body.spark_app_id, body.control,
                               body.reason, body.pid, body.spark_version, body.attempt))


def heartbeat(ops: Operations, caller: auth.Caller, body: AgentHeartbeat) -> dict:
    return answer(ops.heartbeat(caller, body.app_id, body.demand, executors_of(body.executors),
                                body.control, body.observed_at,
                                {r.id: r.at for r in body.removed}, body.changed_after,
                                profiles_of(body.profiles), body.attempt,
                                stages_of(body.stages)))


async def watch(ops: Operations, caller: auth.Caller, body: AgentWatch) -> dict:
    return answer(await ops.watch(caller, body.app_id, body.version, body.wait_s,
                                  body.attempt))


def profiles_of(reports) -> tuple[Profile, ...]:
    """An agent's resource profiles as the engine's ``Profile`` records, by id."""
    return tuple(sorted(
        (Profile(p.id, Resources(p.cores, p.memory_mib, custom_of(
            {k: int(v) for k, v in p.resources.items()})), p.demand, p.pending_tasks,
            p.running_tasks, p.task_cpus, tuple(sorted(p.task_resources.items())))
         for p in reports), key=lambda p: p.profile_id))


def stages_of(report) -> Stages | None:
    if report is None:
        return None
    return (tuple(DoneStage(s.tasks, s.task_s) for s in report.done[:MAX_DONE]),
            tuple(ActiveStage(s.tasks, s.done, s.running, s.oldest_running_s, s.task_s)
                  for s in report.active[:MAX_ACTIVE]))


Handler = Callable[[Operations, auth.Caller, BaseModel], dict | Awaitable[dict]]
ROUTES: dict[str, tuple[type[BaseModel], Handler]] = {
    "/api/v1/agent/register": (AgentRegister, register),
    "/api/v1/agent/heartbeat": (AgentHeartbeat, heartbeat),
    "/api/v1/agent/watch": (AgentWatch, watch),
}


# --- as FastAPI routes (the OpenAPI spec) ---------------------------------------------------------
# Async: the handlers never block (the desk has its own short lock), so no worker thread.


@router.post("/api/v1/agent/register", response_model=AgentReply,
             responses=error_responses(404, 422), response_model_exclude_unset=True)
async def agent_register(body: AgentRegister, ops: OpsDep, caller: CallerDep):
    return register(ops, caller, body)


@router.post("/api/v1/agent/heartbeat", response_model=AgentReply,
             responses=error_responses(404, 422), response_model_exclude_unset=True)
async def agent_heartbeat(body: AgentHeartbeat, ops: OpsDep, caller: CallerDep):
    return heartbeat(ops, caller, body)


@router.post("/api/v1/agent/watch", response_model=AgentReply,
             responses=error_responses(404, 422), response_model_exclude_unset=True)
async def agent_watch(body: AgentWatch, ops: OpsDep, caller: CallerDep):
    return await watch(ops, caller, body)


# --- the door the front sends them to (module docstring) ------------------------------------------


class AgentDoor:
    """ASGI: a ``POST`` to one of ``ROUTES`` (the front sends no other request here)."""

    def __init__(self, ops: Operations):
        self.ops = ops

    async def __call__(self, scope, receive, send) -> None:
        route = ROUTES[scope["path"]]
        raw = bytearray()
        while True:  # a body over the limit raises here, for ``asgi.BodyLimit`` to refuse
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            raw += message.get("body", b"")
            if not message.get("more_body", False):
                break
        status, answer, headers = await self.answer(route, scope, bytes(raw))
        await send_answer(send, status, answer, headers=headers)

    async def answer(self, route: tuple[type[BaseModel], Handler], scope,
                     raw: bytes) -> tuple[int, bytes, list]:
        model, handler = route
        try:
            caller = identify(self.ops, _header(scope, b"authorization"))
            if not raw:
                raise HTTPException(422, "request body is missing")
            try:
                body = model.model_validate_json(raw)
            except ValidationError as e:
                raise HTTPException(422, _not_json(raw) or validation_detail(e.errors())) from None
            reply = handler(self.ops, caller, body)
            if inspect.isawaitable(reply):
                reply = await reply
            return 200, json.dumps(reply, separators=(",", ":")).encode(), []
        except HTTPException as e:
            headers = [(k.lower().encode(), v.encode()) for k, v in (e.headers or {}).items()]
            return e.status_code, _detail(one_line(str(e.detail))), headers
        except Exception as e:  # pragma: no cover - a bug; answered as the FastAPI app does
            log.exception("unhandled error on POST %s", scope["path"])
            return 500, _detail(f"internal error: {type(e).__name__}: {e}"), []


def _not_json(raw: bytes) -> str | None:
    """What FastAPI's refusal says of a body its parser (``json.loads``) cannot read at all."""
    try:
        json.loads(raw)
    except (UnicodeDecodeError, RecursionError) as e:
        return unreadable(e)
    except ValueError:
        pass
    return None


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _detail(text: str) -> bytes:
    return json.dumps({"detail": text}).encode()
