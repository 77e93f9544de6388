"""The native API under ``/api/v1`` (docs/user/api.md). Thin: parse the body (pydantic), call the
operations port (``operations.port.Operations``: who, may they, the service, the wait), render;
the port's outcomes become HTTP errors in ``deps.answer`` (404 unknown app, 409 ended, 400 bad
value, 401/403 the gate's refusals naming the rule, 503 store or cycle too slow).

With auth mode ``none`` every caller acts as the admin (priorities 1..10000 on any app).
With ``tokens`` every operation but health and metrics needs a token (401 without one, unless
``auth.anonymous`` names a user).
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import PlainTextResponse
from pydantic import TypeAdapter

from sessionsched.doors.common.requests import sender
from sessionsched.doors.common.times import iso
from sessionsched.doors.native.deps import CallerDep, OpsDep, answer
from sessionsched.doors.native.queue_memory import queue_memory
from sessionsched.doors.native.resource_schemas import AppResourcesOut, ExecutorNoteOut
from sessionsched.doors.native.schemas import (
    AppIn,
    AppOut,
    AuditOut,
    ClusterOut,
    DryRunOut,
    EventOut,
    HealthOut,
    PriorityIn,
    QueueOut,
    SessionIn,
    StopIn,
    UsageOut,
    error_responses,
)
from sessionsched.doors.native.shared_answers import Answer, accepted_age, respond, shared
from sessionsched.doors.native.spark_ui import with_spark_ui
from sessionsched.doors.native.views import app_out, dry_run_out
from sessionsched.model import AppState, parse_priority
from sessionsched.operations.callers import strip_token, strip_token_argv
from sessionsched.operations.port import AppRead, Operations

router = APIRouter()

# Every operation's possible refusals with auth on (``create_app`` adds them to the spec); as
# explicit JSON content, so that the text/plain log read declares them as JSON too.
AUTH_RESPONSES = error_responses(401, 403, 413, 429, text=True)


def _out(ops: Operations, app_id: str) -> AppOut:
    app = ops.app(app_id)
    if app is None:
        raise HTTPException(404, f"no app {app_id!r}")
    out = app_out(app)
    held = ops.app_resources(app_id)  # one app's answer only: no cost to the lists
    out.resources = None if held is None else AppResourcesOut.model_validate(held)
    if app.state.admitted:
        out.executor_notes = [ExecutorNoteOut(code=n.code.value, text=n.text, resource=n.resource)
                              for n in ops.executor_notes(app)]
        with_wait(out, ops.executor_wait(app))
    return out


def with_wait(out: AppOut, wait: tuple[str, str | None] | None) -> AppOut:
    """``out`` with its executors' one code (``Reads.executor_waits``), where it has one."""
    if wait is not None:
        out.executor_wait_code, out.executor_wait_resource = str(wait[0]), wait[1]
    return out


# --- queues and apps --------------------------------------------------------------------------


@router.get("/api/v1/queues", response_model=list[QueueOut])
async def queues_read(request: Request, ops: OpsDep, _caller: CallerDep):
    return respond(request, queues_json(request, ops))


def queues_json(request: Request, ops: Operations) -> Answer:
    """The queues' rows, built once per published view (``shared_answers``), with each
    queue's executor memory held and wanted (``queue_memory``)."""
    def build() -> bytes:
        rows, memory = queues(ops, None), queue_memory(ops.service.view)
        for row in rows:
            row.executor_memory_mib, row.demand_memory_mib = memory.get(row.name, (0, 0))
        return _QUEUES.dump_json(rows)
    return shared(request).of_version(("queues",), ops.version, build)


def queues(ops: OpsDep, _caller: CallerDep):
    out = []
    codes = ops.queue_wait_codes()
    resources = ops.queue_resources() or {}
    for q, u, waiting in ops.queue_rows():
        leaf = q.is_leaf  # a parent's row leaves out what acts on a leaf only (QueueOut)
        out.append(QueueOut(
            name=q.name, leaf=leaf, admission=q.admission.value if leaf else None,
            policy=q.policy.value if leaf else None, weight=q.weight,
            min_share=q.min_share_cores, max_cores=q.max_cores,
            max_running_apps=q.max_running_apps,
            starting_limit=q.starting_limit if leaf else None,
            starting_timeout=q.starting_timeout_s if leaf else None,
            reclaim_timeout=q.reclaim_timeout_s if leaf else None,
            max_wait=q.max_wait_s if leaf else None,
            max_queued_apps=q.max_queued_apps if leaf else None,
            max_queued_apps_per_user=q.max_queued_apps_per_user if leaf else None,
            pending=u.pending if u else 0, starting=u.starting if u else 0,
            running=u.running if u else 0, executor_cores=u.executor_cores if u else 0,
            demand_cores=u.demand_cores if u else 0, waiting_reason=waiting,
            waiting_reason_code=codes.get(q.name) if waiting is not None else None,
            usage_half_life=q.usage_half_life_s,
            decayed_cores=u.decayed_cores if u else None,
            decayed_users=u.decayed_users if u else None,
            node_sort=q.node_sort.value,
            resources=resources.get(q.name),
        ))
    return out


_QUEUES = TypeAdapter(list[QueueOut])


# The reads below run on the event loop (async, no await): a sync handler would hop to the
# thread pool and back twice (the handler, then the response's validation), and each hop waits
# for the interpreter lock while a cycle holds it (the reads' p99 while cycles run:
# benchmarks/service_throughput.py).


@router.get("/api/v1/apps", response_model=list[AppOut], responses=error_responses(400, 422))
async def list_apps(request: Request, ops: OpsDep, _caller: CallerDep,
                    queue: str | None = None, state: str | None = None):
    leaf = answer(ops.leaf(queue)) if queue else None
    return respond(request, apps_json(request, ops, leaf, state_param(state)))


def state_param(state: str | None) -> AppState | None:
    """An app state asked for by a ``state`` query parameter, any case; a 400 naming the
    states for one that is none of them."""
    if not state:
        return None
    try:
        return AppState(state.strip().upper())
    except ValueError:
        names = ", ".join(s.value for s in AppState)
        raise HTTPException(400, f"unknown state {state!r}; one of {names}") from None


def apps_json(request: Request, ops: Operations, leaf: str | None = None,
              wanted: AppState | None = None) -> Answer:
    """The list, built once per published view and query (``shared_answers``)."""
    def build() -> bytes:
        waits = ops.executor_waits()
        return b"[" + b",".join([_row_json(app, waits.get(app.id))
                                 for app in ops.apps(leaf, wanted)]) + b"]"
    return shared(request).of_version(("apps", leaf, wanted), ops.version, build)


@functools.lru_cache(maxsize=16384)
def _row_json(app: AppRead, wait: tuple[str, str | None] | None = None) -> bytes:
    """One app's row of a list, with its executors' one code (``with_wait``), encoded by
    pydantic-core (FastAPI would validate the rows just built, turn them into dicts and
    encode those with the json module: 0.37 ms for 100 rows, not 0.09), and kept: an app that
    did not change since the last list (an equal ``AppRead`` and code: most apps, between two
    cycles) costs a lookup, not an answer built again (a third of a one-queue list's time at
    10,000 apps)."""
    return _APP_ROW.dump_json(with_wait(app_out(app), wait))


_APP_ROW = TypeAdapter(AppOut)


@router.post("/api/v1/apps", status_code=201, response_model=AppOut,
             responses=error_responses(400, 422, 429, 503))
async def submit(body: AppIn, request: Request, ops: OpsDep, caller: CallerDep):
    conf, _ = strip_token(body.conf)  # a token in spark-defaults is a secret, not a property
    stored = answer(await ops.submit_argv(
        caller, sender(request), strip_token_argv(body.argv), body.cwd, conf, body.env,
        body.queue, body.priority, body.name, uploads=body.uploads))
    return _out(ops, stored.id)


@router.post("/api/v1/apps/dry-run", response_model=DryRunOut,
             responses=error_responses(400, 403, 422))
async def dry_run(body: AppIn, ops: OpsDep, caller: CallerDep):
    """What the submission would meet now (``submit --dry-run``): whether it fits at all,
    why it would wait, when it would start. Nothing is stored; ``uploads`` is not needed."""
    conf, _ = strip_token(body.conf)
    queue, found = answer(await ops.dry_run(
        caller, strip_token_argv(body.argv), body.cwd, conf, body.env, body.queue,
        body.priority, body.name))
    return dry_run_out(queue, found)


@router.get("/api/v1/apps/{app_id}", response_model=AppOut,
            responses=error_responses(404, 422))
async def get_app(app_id: str, ops: OpsDep, _caller: CallerDep):
    return _out(ops, app_id)


@router.post("/api/v1/apps/{app_id}/priority", response_model=AppOut,
             responses=error_responses(400, 404, 409, 422, 503))
async def set_priority(app_id: str, body: PriorityIn, ops: OpsDep, caller: CallerDep,
                       request: Request):
    try:
        priority = parse_priority(body.priority)
    except ValueError as e:
        raise HTTPException(400, str(e)) from None
    return app_out(answer(await ops.set_priority(
        caller, app_id, priority, sender(request), via=f"from {sender(request)}")))


@router.post("/api/v1/apps/{app_id}/kill", response_model=AppOut,
             responses=error_responses(404, 409, 422, 503))
async def kill(app_id: str, ops: OpsDep, caller: CallerDep, request: Request):
    out = app_out(answer(await ops.kill(caller, app_id,
                                        actor=f"{caller.actor} from {sender(request)}")))
    if out.state != AppState.KILLED.value:
        raise HTTPException(409, f"{app_id} ended ({out.state}) before it could be killed")
    return out


@router.get("/api/v1/apps/{app_id}/events", response_model=list[EventOut],
            responses=error_responses(404, 422))
def events(app_id: str, ops: OpsDep, _caller: CallerDep):
    rows = answer(ops.events(app_id))
    return [EventOut(at=iso(e.at), kind=e.kind, detail=e.detail) for e in rows]


@router.get("/api/v1/apps/{app_id}/log", response_class=PlainTextResponse,
            responses=error_responses(404, 422, text=True))
def log_tail(app_id: str, ops: OpsDep, caller: CallerDep,
             tail: Annotated[int, Query(ge=0, le=100000)] = 50):
    return PlainTextResponse(answer(ops.log_tail(caller, app_id, tail)))


# --- notebook sessions ------------------------------------------------------------------------


@router.post("/api/v1/sessions", status_code=201, response_model=AppOut,
             responses=error_responses(400, 422, 429, 503))
async def create_session(body: SessionIn, request: Request, ops: OpsDep, caller: CallerDep):
    conf, _ = strip_token(body.conf)
    stored = answer(await ops.submit_session(caller, sender(request), body.name, body.queue,
                                             body.priority, conf))
    return _out(ops, stored.id)


@router.post("/api/v1/sessions/{app_id}/stop", response_model=AppOut,
             responses=error_responses(404, 409, 422, 503))
async def stop_session(app_id: str, ops: OpsDep, caller: CallerDep,
                       body: StopIn | None = None):
    code = body.exit_code if body is not None else 0
    return app_out(answer(await ops.stop_session(caller, app_id, code)))


# --- the audit trail (admins) ------------------------------------------------------------------


@router.get("/api/v1/audit", response_model=list[AuditOut],
            responses=error_responses(400, 422))
def audit(ops: OpsDep, caller: CallerDep,
          app: Annotated[str | None, Query(max_length=200)] = None,
          user: Annotated[str | None, Query(max_length=200)] = None,
          since: Annotated[str | None, Query(max_length=64)] = None):
    """Submissions, priority changes, kills and expiries, oldest first: who, which app, what."""
    answer(ops.may_read_audit(caller))  # refused before its query is looked at
    start = None
    if since:
        try:
            start = float(since) if since.replace(".", "", 1).isdigit() else \
                datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise HTTPException(400, f"since {since!r} is not a time (ISO 8601 or epoch "
                                     "seconds)") from None
    rows = answer(ops.audit(caller, app, user, start))
    return [AuditOut(at=iso(r.at), app_id=r.app_id, kind=r.kind, who=r.who, detail=r.detail,
                     actor=r.actor, sender=r.sender, old=r.old, new=r.new) for r in rows]


# --- usage -------------------------------------------------------------------------------------


@router.get("/api/v1/usage", response_model=list[UsageOut], response_model_exclude_none=True,
            responses=error_responses(400, 422, 503))
def usage(request: Request, ops: OpsDep, caller: CallerDep,
          by: Annotated[Literal["queue", "user", "app", "cluster"], Query()] = "queue",
          since: Annotated[str | None, Query(max_length=64)] = None,
          until: Annotated[str | None, Query(max_length=64)] = None):
    """What apps used (docs/operator/usage.md): core- and GiB-seconds held, busy, idle and lost to
    reclaim, their drivers', time queued; per app or added up per queue, user or cluster
    (several clusters: each app whole on the cluster it was placed on). ``since`` /
    ``until``: ``7d``, ``12h``, epoch seconds or ISO 8601 (default: all, up to now). A reader
    that sends ``Cache-Control: max-age=N`` may get an answer built for another reader of the
    same query (and the same rights) up to N seconds ago (``Age`` says how old): the
    dashboard's, so that fifty open pages read the store once, not fifty times."""
    age = accepted_age(request)
    if not age:
        return answer(ops.usage(caller, by, since, until))
    found = shared(request).within(
        ("usage", by, since, until, caller.role, caller.user), age,
        lambda: _USAGE.dump_json(_USAGE.validate_python(answer(ops.usage(caller, by, since,
                                                                          until))),
                                 exclude_none=True))
    return respond(request, found)


_USAGE = TypeAdapter(list[UsageOut])


# --- health and metrics -----------------------------------------------------------------------


@router.get("/api/v1/health", response_model=HealthOut)
def health(ops: OpsDep):
    row = ops.health_row()
    row["last_cycle_at"] = iso(row["last_cycle_at"])
    return HealthOut(**row)


@router.get("/api/v1/cluster", response_model=ClusterOut)
async def cluster(ops: OpsDep, _caller: CallerDep):
    """The cluster's workers, cores and memory offered and free, and the scheduler's host as
    room for drivers: from the published view (no call to the cluster)."""
    return ClusterOut(**with_spark_ui(ops, ops.cluster_row()))


@router.get("/metrics", include_in_schema=False)
def metrics(ops: OpsDep):
    text, content_type = ops.metrics()
    return Response(text, media_type=content_type)
