"""An Apache Livy-compatible REST API (batches here, interactive sessions in
``interactive``), so Livy clients — Airflow's ``LivyOperator``,
sparkmagic, Zeppelin — submit into the scheduler's queues, as Livy 0.8's REST API answers them.

A batch is an app like any other: it waits its turn in its queue with its priority, and the
same app is visible through every API. Its Livy id is the app's submission sequence number
(clients call ``int()`` on ids); ``submissionId`` carries the app's own id.

Routes (Livy's shapes; errors ``{"msg": "..."}`` with 400 or 404):

- ``POST /batches`` -> 201, ``Location: /batches/ID``, the batch;
- ``GET /batches?from=&size=`` -> ``{"from", "total", "sessions": [...]}`` (every app
  submitted as a batch or through spark-submit; notebook sessions are not batches);
- ``GET /batches/ID``, ``GET /batches/ID/state`` -> ``{"id", "state"}``;
- ``GET /batches/ID/log?from=&size=`` -> ``{"id", "from", "total", "log"}`` (the driver's log,
  its last 256 KiB; paged as Livy pages it: ``answers.log_page``);
- ``DELETE /batches/ID`` -> ``{"msg": "deleted"}`` (kills it; an ended batch stays in the
  books, unlike Livy, and is answered the same);
- ``GET /version``;
- ``/sessions``: interactive sessions (``interactive``).

States: ACCEPTED (queued) ``not_started``, STARTING ``starting``, RUNNING ``running``,
FINISHED ``success``, FAILED ``dead``, KILLED ``killed``.

The scheduler is reached only through the operations port (``operations.port.Operations``),
as from every door; who may do what is checked once per request by ``auth.guard``.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sessionsched.doors.common.requests import sender
from sessionsched.doors.common.times import estimate_fields
from sessionsched.doors.livy.answers import (
    caller,
    int_param,
    json_of,
    log_page,
    msg,
    reason_info,
    refusal,
)
from sessionsched.doors.livy.interactive import LivySessions
from sessionsched.doors.livy.schemas import LivyBatchIn, ValidationError, first_error
from sessionsched.model import AppState
from sessionsched.operations.outcomes import Kind
from sessionsched.operations.port import CYCLE_WAIT_S, AppRead, Operations
from sessionsched.store.records import AppKind

LIVY_VERSION = "0.8.0-incubating"  # the Livy release whose API this follows
LOG_WINDOW_LINES = 100_000
DEFAULT_LOG_SIZE = 100
BATCH_LOG_LINES = 20  # lines of the driver's log in a batch object (Livy sends its recent log)

LIVY_STATE = {
    AppState.ACCEPTED: "not_started",
    AppState.STARTING: "starting",
    AppState.RUNNING: "running",
    AppState.FINISHED: "success",
    AppState.FAILED: "dead",
    AppState.KILLED: "killed",
}
BATCH_KINDS = (AppKind.SUBMIT, AppKind.REST)


class Livy:
    def __init__(self, ops: Operations):
        self.ops = ops
        self.sessions = LivySessions(ops)

    def routes(self) -> list[Route]:
        return [
            Route("/batches", self.create, methods=["POST"]),
            Route("/batches", self.list, methods=["GET"]),
            Route("/batches/{bid}", self.get, methods=["GET"]),
            Route("/batches/{bid}", self.delete, methods=["DELETE"]),
            Route("/batches/{bid}/state", self.state, methods=["GET"]),
            Route("/batches/{bid}/log", self.log, methods=["GET"]),
            Route("/version", self.version, methods=["GET"]),
            *self.sessions.routes(),
        ]

    # --- shapes -------------------------------------------------------------------------------

    def batches(self) -> list[AppRead]:
        """Every batch-like app in memory, in submission order."""
        apps = [a for a in self.ops.apps() if a.kind in BATCH_KINDS]
        return sorted(apps, key=lambda a: a.seq)

    def batch(self, seq: int) -> AppRead | None:
        """The app with this sequence number. Only apps in memory (ended ones beyond
        ``server.retained_ended_apps`` are not found: the store has no index by number)."""
        return next((a for a in self.batches() if a.seq == seq), None)

    def log_lines(self, app_id: str) -> list[str]:
        out = self.ops.driver_log(app_id, LOG_WINDOW_LINES)
        return out.value.splitlines() if out.ok else []  # not launched yet: no log

    def batch_out(self, app: AppRead, log: list[str]) -> dict[str, Any]:
        out = {
            "id": app.seq, "name": app.name, "owner": app.user, "proxyUser": None,
            "state": LIVY_STATE[app.state], "appId": app.spark_app_id,
            "appInfo": {"driverLogUrl": f"{self.ops.url}/api/v1/apps/{app.id}/log"
                                        if app.log_path else None,
                        "sparkUiUrl": None, **reason_info(app),
                        **estimate_fields(app)},
            "log": log,
            # ours, named as in the Spark REST answers
            "submissionId": app.id, "schedulerState": app.state.value, "queue": app.queue,
            "priority": app.priority, "position": app.position,
            "schedulerReason": app.reason, "schedulerReasonCode": app.reason_code,
        }
        return out

    def _find(self, request: Request) -> AppRead:
        raw = request.path_params["bid"]
        try:
            seq = int(raw)
        except ValueError:
            raise LookupError(f"batch id {raw!r} is not a number") from None
        app = self.batch(seq)
        if app is None:
            raise LookupError(f"batch {seq} not found")
        return app

    # --- handlers -----------------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        try:
            body = await json_of(request)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object (Livy's batch request)")
            batch = LivyBatchIn.model_validate(body)
            argv = batch.argv()
        except ValidationError as e:
            return msg(first_error(e), 400)
        except ValueError as e:
            return msg(str(e), 400)
        out = await self.ops.submit_argv(caller(request), sender(request), argv,
                                         self.ops.workdir, batch.spark_conf(), {}, batch.queue,
                                         None, batch.name)
        if out.kind in (Kind.INVALID, Kind.FORBIDDEN, Kind.REFUSED):
            return refusal(out)
        if not out.ok:
            return msg(f"batch not stored: {out.message}", 503)
        stored = out.value
        answer = self.batch_out(self.ops.app(stored.id), [])
        answer["proxyUser"] = batch.proxyUser
        return JSONResponse(answer, status_code=201,
                            headers={"Location": f"/batches/{stored.seq}"})

    async def list(self, request: Request) -> Response:
        try:
            start = int_param(request, "from", 0)
            size = int_param(request, "size", 100)
        except ValueError as e:
            return msg(str(e), 400)
        apps = self.batches()
        window = apps[max(start, 0):][: max(size, 0)]
        return JSONResponse({"from": start, "total": len(apps),
                             "sessions": [self.batch_out(a, []) for a in window]})

    async def get(self, request: Request) -> Response:
        try:
            app = self._find(request)
        except LookupError as e:
            return msg(str(e), 404)
        return JSONResponse(self.batch_out(app, self.log_lines(app.id)[-BATCH_LOG_LINES:]))

    async def state(self, request: Request) -> Response:
        try:
            app = self._find(request)
        except LookupError as e:
            return msg(str(e), 404)
        return JSONResponse({"id": app.seq, "state": LIVY_STATE[app.state]})

    async def log(self, request: Request) -> Response:
        try:
            app = self._find(request)
        except LookupError as e:
            return msg(str(e), 404)
        lines = self.log_lines(app.id)
        try:
            start, page = log_page(request, lines, DEFAULT_LOG_SIZE)
        except ValueError as e:
            return msg(str(e), 400)
        return JSONResponse({"id": app.seq, "from": start, "total": len(lines), "log": page})

    async def delete(self, request: Request) -> Response:
        try:
            app = self._find(request)
        except LookupError as e:
            return msg(str(e), 404)
        who = caller(request)
        out = await self.ops.kill(who, app.id, actor=f"{who.actor} (Livy from {sender(request)})")
        if out.kind is Kind.OVERLOADED:
            return msg(f"kill of batch {app.seq} not confirmed within {CYCLE_WAIT_S:g}s; the "
                       "scheduler is overloaded, try again", 503)
        if out.ok or out.kind is Kind.CONFLICT:  # killed, or it has ended already
            return JSONResponse({"msg": "deleted"})
        return refusal(out)

    async def version(self, request: Request) -> Response:
        try:
            ours = metadata.version("sessionsched")
        except metadata.PackageNotFoundError:
            ours = "unknown"
        return JSONResponse({"version": LIVY_VERSION, "commitId": "", "user": "",
                             "date": "", "url": "", "branch": "", "sessionsched": ours})
