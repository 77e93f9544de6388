"""The native API under ``/api/v1`` (docs/api.md) and the agent protocol
(docs/agent-protocol.md). Thin: parse the body (pydantic), call the service, map its errors to
HTTP (404 unknown app, 409 ended, 400 bad value, 503 store or cycle too slow), render.

With auth mode ``none`` every caller acts as the admin (priorities 1..10000 on any app).
With ``tokens`` (``auth.Gate``) every operation but health and metrics needs a token (401
without one, unless ``auth.anonymous`` names a user), and the rules answer 403 naming the rule:
users change only their own apps, within their priority range; agents report for their app.
"""

from __future__ import annotations

import asyncio
import functools
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.responses import PlainTextResponse
from pydantic import TypeAdapter

from sessionsched.config import resolve_queue
from sessionsched.doors.native.audit_read import audit_rows
from sessionsched.doors.native.schemas import (
    AppIn,
    AppOut,
    AuditOut,
    EventOut,
    HealthOut,
    PriorityIn,
    QueueOut,
    SessionIn,
    StopIn,
    error_responses,
)
from sessionsched.doors.native.views import app_out, iso
from sessionsched.intake import remote, submissions
from sessionsched.intake.guard import Refused, strip_token, strip_token_argv
from sessionsched.intake.uploads import UploadError
from sessionsched.model import AppState, parse_priority
from sessionsched.operations import auth
from sessionsched.service.metrics import CONTENT_TYPE
from sessionsched.service.reads import AppRead
from sessionsched.service.service import Conflict, NotFound, Service

SUBMIT_WAIT_S = 30.0
CYCLE_WAIT_S = 10.0

router = APIRouter()


# Async, so that FastAPI does not hop to a worker thread to run them.
async def get_service(request: Request) -> Service:
    return request.app.state.service


async def get_defaults(request: Request) -> submissions.Defaults:
    return request.app.state.defaults


def identify(gate: auth.Gate, authorization: str | None) -> auth.Caller:
    """Who is asking (``auth.Gate.identify``): 401 for no, a wrong or a revoked token."""
    try:
        return gate.identify(auth.bearer(authorization) if gate.on else None)
    except auth.Unauthorized as e:
        raise HTTPException(401, str(e), headers={"WWW-Authenticate": "Bearer"}) from None


async def get_caller(request: Request) -> auth.Caller:
    return identify(request.app.state.gate, request.headers.get("authorization"))


def _gate(request: Request) -> auth.Gate:
    return request.app.state.gate


def allowed(check, *args) -> None:
    """A rule of the gate, its refusal as 403 naming the rule."""
    try:
        check(*args)
    except auth.Forbidden as e:
        raise HTTPException(403, str(e)) from None


def owner(service: Service, app_id: str) -> str:
    app = service.app(app_id)
    if app is None:
        raise HTTPException(404, f"no app {app_id!r}")
    return app.user


def _admit(request: Request, caller: auth.Caller, app):
    try:
        return auth.admit(_gate(request), request.app.state.rate_limit, caller, app)
    except auth.Forbidden as e:
        raise HTTPException(403, str(e)) from None
    except Refused as e:
        headers = {"Retry-After": str(e.retry_after)} if e.retry_after else None
        raise HTTPException(e.status, str(e), headers=headers) from None


# Every operation's possible refusals with auth on (``create_app`` adds them to the spec); as
# explicit JSON content, so that the text/plain log read declares them as JSON too.
AUTH_RESPONSES = error_responses(401, 403, 413, 429, text=True)

ServiceDep = Annotated[Service, Depends(get_service)]
CallerDep = Annotated[auth.Caller, Depends(get_caller)]
DefaultsDep = Annotated[submissions.Defaults, Depends(get_defaults)]


async def _wait(future, timeout_s: float, what: str):
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
    except NotFound as e:
        raise HTTPException(404, str(e)) from None
    except Conflict as e:
        raise HTTPException(409, str(e)) from None
    except asyncio.TimeoutError:
        raise HTTPException(503, f"{what} not confirmed within {timeout_s:g}s; "
                                 "the scheduler is overloaded, try again") from None


def _out(service: Service, app_id: str) -> AppOut:
    app = service.app(app_id)
    if app is None:
        raise HTTPException(404, f"no app {app_id!r}")
    return app_out(app)


def _sender(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client else ""


def call(fn, *args, **kwargs):
    """A service operation, its refusals as HTTP errors."""
    try:
        return fn(*args, **kwargs)
    except NotFound as e:
        raise HTTPException(404, str(e)) from None
    except Conflict as e:
        raise HTTPException(409, str(e)) from None


# --- queues and apps --------------------------------------------------------------------------


@router.get("/api/v1/queues", response_model=list[QueueOut])
def queues(service: ServiceDep, _caller: CallerDep):
    out = []
    for q, u, waiting in service.view.queue_rows():
        out.append(QueueOut(
            name=q.name, admission=q.admission.value, policy=q.policy.value, weight=q.weight,
            min_share=q.min_share_cores, max_cores=q.max_cores,
            max_running_apps=q.max_running_apps, starting_limit=q.starting_limit,
            starting_timeout=q.starting_timeout_s, reclaim_timeout=q.reclaim_timeout_s,
            pending=u.pending if u else 0, starting=u.starting if u else 0,
            running=u.running if u else 0, executor_cores=u.executor_cores if u else 0,
            demand_cores=u.demand_cores if u else 0, waiting_reason=waiting,
        ))
    return out


# The reads below run on the event loop (async, no await): a sync handler would hop to the
# thread pool and back twice (the handler, then the response's validation), and each hop waits
# for the interpreter lock while a cycle holds it (issue 14: reads p99 while cycles run).


@router.get("/api/v1/apps", response_model=list[AppOut], responses=error_responses(400, 422))
async def list_apps(service: ServiceDep, _caller: CallerDep, queue: str | None = None,
                    state: str | None = None):
    view = service.view
    leaf = None
    if queue:
        try:
            leaf = resolve_queue(view.engine.root, queue).name
        except LookupError as e:
            raise HTTPException(400, str(e)) from None
    wanted = None
    if state:
        try:
            wanted = AppState(state.strip().upper())
        except ValueError:
            names = ", ".join(s.value for s in AppState)
            raise HTTPException(400, f"unknown state {state!r}; one of {names}") from None
    rows = b",".join([_row_json(app) for app in view.apps(leaf, wanted)])
    return Response(b"[" + rows + b"]", media_type="application/json")


@functools.lru_cache(maxsize=16384)
def _row_json(app: AppRead) -> bytes:
    """One app's row of a list, encoded by pydantic-core (FastAPI would validate the rows
    just built, turn them into dicts and encode those with the json module: 0.37 ms for 100
    rows, not 0.09), and kept: an app that did not change since the last list (an equal
    ``AppRead``: most apps, between two cycles) costs a lookup, not an answer built again
    (a third of a one-queue list's time at 10,000 apps)."""
    return _APP_ROW.dump_json(app_out(app))


_APP_ROW = TypeAdapter(AppOut)


@router.post("/api/v1/apps", status_code=201, response_model=AppOut,
             responses=error_responses(400, 422, 503))
async def submit(body: AppIn, request: Request, service: ServiceDep,
                 defaults: DefaultsDep, caller: CallerDep):
    conf, _ = strip_token(body.conf)  # a token in spark-defaults is a secret, not a property
    argv, cwd = strip_token_argv(body.argv), body.cwd
    if body.uploads is not None:  # from another host, with its files (intake/remote.py)
        if caller.role == auth.AGENT:
            raise HTTPException(403, "an agent secret may only report for its own app")
        try:
            local = remote.rewrite(argv, conf, cwd, body.uploads, request.app.state.uploads.place,
                                   str(request.app.state.uploads.root),
                                   service.config.uploads.max_files)
        except UploadError as e:
            raise HTTPException(e.status, str(e)) from None
        argv, conf, cwd = local.argv, local.conf, local.cwd
    try:
        app = submissions.from_argv(argv, cwd, conf, body.env,
                                    body.queue, body.priority, body.name, defaults)
    except submissions.SubmissionError as e:
        raise HTTPException(400, str(e)) from None
    app = _admit(request, caller, app)
    stored = await _wait(service.submit(app, _sender(request)), SUBMIT_WAIT_S, "submission")
    return _out(service, stored.id)


@router.get("/api/v1/apps/{app_id}", response_model=AppOut,
            responses=error_responses(404, 422))
async def get_app(app_id: str, service: ServiceDep, _caller: CallerDep):
    return _out(service, app_id)


@router.post("/api/v1/apps/{app_id}/priority", response_model=AppOut,
             responses=error_responses(400, 404, 409, 422, 503))
async def set_priority(app_id: str, body: PriorityIn, service: ServiceDep, caller: CallerDep,
                       request: Request):
    try:
        priority = parse_priority(body.priority)
    except ValueError as e:
        raise HTTPException(400, str(e)) from None
    gate = _gate(request)
    allowed(gate.may_change, caller, app_id, owner(service, app_id), "re-prioritise")
    allowed(gate.check_priority, caller, priority)
    future = call(service.set_priority, app_id, priority, actor=caller.actor,
                  via=f"from {_sender(request)}", sender=_sender(request))
    await _wait(future, CYCLE_WAIT_S, "priority change")
    return _out(service, app_id)


@router.post("/api/v1/apps/{app_id}/kill", response_model=AppOut,
             responses=error_responses(404, 409, 422, 503))
async def kill(app_id: str, service: ServiceDep, caller: CallerDep, request: Request):
    allowed(_gate(request).may_change, caller, app_id, owner(service, app_id), "kill")
    future = call(service.kill, app_id, actor=f"{caller.actor} from {_sender(request)}")
    await _wait(future, CYCLE_WAIT_S, "kill")
    out = _out(service, app_id)
    if out.state != AppState.KILLED.value:
        raise HTTPException(409, f"{app_id} ended ({out.state}) before it could be killed")
    return out


@router.get("/api/v1/apps/{app_id}/events", response_model=list[EventOut],
            responses=error_responses(404, 422))
def events(app_id: str, service: ServiceDep, _caller: CallerDep):
    rows = call(service.events, app_id)
    return [EventOut(at=iso(e.at), kind=e.kind, detail=e.detail) for e in rows]


@router.get("/api/v1/apps/{app_id}/log", response_class=PlainTextResponse,
            responses=error_responses(404, 422, text=True))
def log_tail(app_id: str, service: ServiceDep, caller: CallerDep, request: Request,
             tail: Annotated[int, Query(ge=0, le=100000)] = 50):
    # A driver's log may hold its data: its owner's (and admins') to read.
    allowed(_gate(request).may_change, caller, app_id, owner(service, app_id), "read logs of")
    return PlainTextResponse(call(service.log_tail, app_id, tail))


# --- notebook sessions ------------------------------------------------------------------------


@router.post("/api/v1/sessions", status_code=201, response_model=AppOut,
             responses=error_responses(400, 422, 503))
async def create_session(body: SessionIn, request: Request,
                         service: ServiceDep,
                         defaults: DefaultsDep, caller: CallerDep):
    conf, _ = strip_token(body.conf)
    try:
        app = submissions.from_session(body.name, body.queue, body.priority, conf, defaults)
    except submissions.SubmissionError as e:
        raise HTTPException(400, str(e)) from None
    app = _admit(request, caller, app)
    stored = await _wait(service.submit(app, _sender(request)), SUBMIT_WAIT_S, "session")
    return _out(service, stored.id)


@router.post("/api/v1/sessions/{app_id}/stop", response_model=AppOut,
             responses=error_responses(404, 409, 422, 503))
async def stop_session(app_id: str, service: ServiceDep, caller: CallerDep, request: Request,
                       body: StopIn | None = None):
    allowed(_gate(request).may_change, caller, app_id, owner(service, app_id), "stop")
    code = body.exit_code if body is not None else 0
    future = call(service.stop_session, app_id, code)
    await _wait(future, CYCLE_WAIT_S, "session stop")
    return _out(service, app_id)


# --- the audit trail (admins) ------------------------------------------------------------------


@router.get("/api/v1/audit", response_model=list[AuditOut],
            responses=error_responses(400, 422))
def audit(service: ServiceDep, caller: CallerDep, request: Request,
          app: Annotated[str | None, Query(max_length=200)] = None,
          user: Annotated[str | None, Query(max_length=200)] = None,
          since: Annotated[str | None, Query(max_length=64)] = None):
    """Submissions, priority changes and kills, oldest first: who, which app, what."""
    if _gate(request).on and caller.role != auth.ADMIN:
        raise HTTPException(403, f"{caller.role} {caller.user} may not read the audit trail "
                                 "(admins only)")
    start = None
    if since:
        try:
            start = float(since) if since.replace(".", "", 1).isdigit() else \
                datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise HTTPException(400, f"since {since!r} is not a time (ISO 8601 or epoch "
                                     "seconds)") from None
    rows = audit_rows(service.store, app, user, start)
    return [AuditOut(at=iso(r.at), app_id=r.app_id, kind=r.kind, who=r.who, detail=r.detail,
                     actor=r.actor, sender=r.sender, old=r.old, new=r.new) for r in rows]


# --- health and metrics -----------------------------------------------------------------------


@router.get("/api/v1/health", response_model=HealthOut)
def health(service: ServiceDep):
    row = service.view.health_row()
    store = service.store.health()  # a round trip to the database: not part of the view
    row["store"] = str(store)
    if not store.ok:
        row["status"] = "degraded"
    row["last_cycle_at"] = iso(row["last_cycle_at"])
    row["role"], row["leader"] = service.role, service.leader_url
    if service.role in ("standby", "taking over"):  # alive; its books are the leader's
        row["status"] = "standby"
    return HealthOut(**row)


@router.get("/metrics", include_in_schema=False)
def metrics(service: ServiceDep):
    return Response(service.metrics.render(), media_type=CONTENT_TYPE)
