"""An Apache Livy-compatible REST API (batches here, interactive sessions in
``livy_sessions``), so Livy clients — Airflow's ``LivyOperator``,
sparkmagic, Zeppelin — submit into the scheduler's queues (reference/livy-and-airflow.md).

A batch is an app like any other: it waits its turn in its queue with its priority, and the
same app is visible through every API. Its Livy id is the app's submission sequence number
(clients call ``int()`` on ids); ``submissionId`` carries the app's own id.

Routes (Livy's shapes; errors ``{"msg": "..."}`` with 400 or 404):

- ``POST /batches`` -> 201, ``Location: /batches/ID``, the batch;
- ``GET /batches?from=&size=`` -> ``{"from", "total", "sessions": [...]}`` (every app
  submitted as a batch or through spark-submit; notebook sessions are not batches);
- ``GET /batches/ID``, ``GET /batches/ID/state`` -> ``{"id", "state"}``;
- ``GET /batches/ID/log?from=&size=`` -> ``{"id", "from", "total", "log"}`` (the driver's log,
  its last 256 KiB; ``from`` defaults to the last ``size`` (100) lines, as Livy's);
- ``DELETE /batches/ID`` -> ``{"msg": "deleted"}`` (kills it; an ended batch stays in the
  books, unlike Livy, and is answered the same);
- ``GET /version``;
- ``/sessions``: interactive sessions (``livy_sessions``).

States: ACCEPTED (queued) ``not_started``, STARTING ``starting``, RUNNING ``running``,
FINISHED ``success``, FAILED ``dead``, KILLED ``killed``.

The service is reached only through ``LivyPort``: one thin adapter over its public operations.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sessionsched.doors.livy.auth import actor, refusal
from sessionsched.doors.livy.interactive import LivySessions
from sessionsched.doors.livy.schemas import LivyBatchIn, ValidationError, first_error
from sessionsched.doors.native.views import one_line
from sessionsched.intake import submissions
from sessionsched.intake.guard import Refused
from sessionsched.model import AppState
from sessionsched.operations.auth import Forbidden
from sessionsched.service.reads import AppRead
from sessionsched.service.service import Conflict, NotFound, Service
from sessionsched.store import StoreUnavailable
from sessionsched.store.records import AppKind

LIVY_VERSION = "0.8.0-incubating"  # the Livy release whose API this follows
SUBMIT_WAIT_S = 30.0
KILL_WAIT_S = 10.0
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


class LivyPort:
    """The service as the Livy door uses it: its public operations only (``submit``,
    ``kill``, ``snapshot``/``snapshots``, ``log_tail``), so this is the one place to change
    when the service changes shape."""

    def __init__(self, service: Service):
        self._service = service
        self.url = service.url
        self.master = service.config.cluster.master
        self.workdir = str(service.log_dir.parent)  # the state directory: drivers run there

    def submit(self, app, sender: str) -> Future:
        return self._service.submit(app, sender)

    def kill(self, app_id: str, actor: str) -> Future:
        return self._service.kill(app_id, actor=actor)

    def snapshot(self, app_id: str) -> dict | None:
        """``{"app": AppRead, "position", "reason"}``, or None for an unknown app."""
        app = self._service.app(app_id)
        return _snap(app) if app is not None else None

    def batches(self) -> list[dict]:
        """Every batch-like app in memory, in submission order."""
        apps = [a for a in self._service.view.apps() if a.kind in BATCH_KINDS]
        return [_snap(a) for a in sorted(apps, key=lambda a: a.seq)]

    def batch(self, seq: int) -> dict | None:
        """The app with this sequence number. Only apps in memory (ended ones beyond
        ``server.retained_ended_apps`` are not found: the store has no index by number)."""
        return next((s for s in self.batches() if s["app"].seq == seq), None)

    def secret_for(self, app_id: str) -> str | None:
        """The app's agent secret (auth mode tokens), for a Livy session's REPL."""
        return self._service.secret_for(app_id)

    @property
    def ca(self) -> str | None:
        """``server.tls.ca``: what a REPL verifies the server with."""
        tls = self._service.config.server.tls
        return str(Path(tls.ca).resolve()) if tls is not None and tls.ca else None

    def log_lines(self, app_id: str) -> list[str]:
        try:
            return self._service.log_tail(app_id, LOG_WINDOW_LINES).splitlines()
        except NotFound:  # not launched yet: no log
            return []


def _snap(app: AppRead) -> dict:
    return {"app": app, "position": app.position, "reason": app.reason}


def _msg(text: str, status: int) -> JSONResponse:
    return JSONResponse({"msg": one_line(text)}, status_code=status)


def _sender(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client else ""


def _int_param(request: Request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"query parameter {name}={raw!r} is not a whole number") from None


Admit = Callable[[Request, Any], Any]


def _as_is(_request: Request, app):
    return app


class Livy:
    def __init__(self, port: LivyPort, defaults: submissions.Defaults, admit: Admit = _as_is):
        """``admit(request, app)``: the submission checked and made the caller's
        (``livy_auth.admit_as_caller``); raises ``auth.Forbidden`` or ``guard.Refused``."""
        self.port = port
        self.defaults = defaults
        self.admit = admit
        self.sessions = LivySessions(port, defaults, port.master, admit)

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

    def batch_out(self, snap: dict, log: list[str]) -> dict[str, Any]:
        app = snap["app"]
        out = {
            "id": app.seq, "name": app.name, "owner": app.user, "proxyUser": None,
            "state": LIVY_STATE[app.state], "appId": app.spark_app_id,
            "appInfo": {"driverLogUrl": f"{self.port.url}/api/v1/apps/{app.id}/log"
                                        if app.log_path else None,
                        "sparkUiUrl": None},
            "log": log,
            # ours, named as in the Spark REST answers
            "submissionId": app.id, "schedulerState": app.state.value, "queue": app.queue,
            "priority": app.priority, "position": snap["position"],
            "schedulerReason": snap["reason"],
        }
        return out

    def _find(self, request: Request) -> dict:
        raw = request.path_params["bid"]
        try:
            seq = int(raw)
        except ValueError:
            raise LookupError(f"batch id {raw!r} is not a number") from None
        snap = self.port.batch(seq)
        if snap is None:
            raise LookupError(f"batch {seq} not found")
        return snap

    # --- handlers -----------------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body() or b"null")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object (Livy's batch request)")
            batch = LivyBatchIn.model_validate(body)
            app = submissions.from_livy(batch, self.port.workdir, self.defaults)
            app = self.admit(request, app)
        except (Forbidden, Refused) as e:
            return refusal(e)
        except ValidationError as e:
            return _msg(first_error(e), 400)
        except (ValueError, RecursionError) as e:  # SubmissionError is a ValueError
            return _msg(str(e) if not isinstance(e, json.JSONDecodeError)
                        else f"request body is not valid JSON: {e}", 400)
        try:
            stored = await asyncio.wait_for(
                asyncio.wrap_future(self.port.submit(app, _sender(request))), SUBMIT_WAIT_S)
        except Exception as e:  # noqa: BLE001 - not stored: say so, never a 500 page
            return _msg(f"batch not stored: {e}", 503)
        snap = self.port.snapshot(stored.id)
        out = self.batch_out(snap, [])
        out["proxyUser"] = batch.proxyUser
        return JSONResponse(out, status_code=201, headers={"Location": f"/batches/{stored.seq}"})

    async def list(self, request: Request) -> Response:
        try:
            start = _int_param(request, "from", 0)
            size = _int_param(request, "size", 100)
        except ValueError as e:
            return _msg(str(e), 400)
        snaps = self.port.batches()
        window = snaps[max(start, 0):][: max(size, 0)]
        return JSONResponse({"from": start, "total": len(snaps),
                             "sessions": [self.batch_out(s, []) for s in window]})

    async def get(self, request: Request) -> Response:
        try:
            snap = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        log = self.port.log_lines(snap["app"].id)[-BATCH_LOG_LINES:]
        return JSONResponse(self.batch_out(snap, log))

    async def state(self, request: Request) -> Response:
        try:
            snap = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        return JSONResponse({"id": snap["app"].seq, "state": LIVY_STATE[snap["app"].state]})

    async def log(self, request: Request) -> Response:
        try:
            snap = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        try:
            start = _int_param(request, "from", None)
            size = _int_param(request, "size", DEFAULT_LOG_SIZE)
        except ValueError as e:
            return _msg(str(e), 400)
        lines = self.port.log_lines(snap["app"].id)
        if size < 0:  # Livy: a negative size means everything
            start, size = 0, len(lines)
        if start is None or start < 0:
            start = max(len(lines) - size, 0)
        return JSONResponse({"id": snap["app"].seq, "from": start, "total": len(lines),
                             "log": lines[start:start + size]})

    async def delete(self, request: Request) -> Response:
        try:
            snap = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        app_id = snap["app"].id
        try:
            future = self.port.kill(app_id, actor=f"{actor(request)} (Livy from "
                                                  f"{_sender(request)})")
        except Conflict:
            return JSONResponse({"msg": "deleted"})  # it has ended already
        except NotFound as e:
            return _msg(str(e), 404)
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), KILL_WAIT_S)
        except asyncio.TimeoutError:
            return _msg(f"kill of batch {snap['app'].seq} not confirmed within "
                        f"{KILL_WAIT_S:g}s; the scheduler is overloaded, try again", 503)
        except (Conflict, NotFound):
            pass  # it ended meanwhile
        except StoreUnavailable as e:  # not applied: the delete can be asked again
            return _msg(str(e), 503)
        return JSONResponse({"msg": "deleted"})

    async def version(self, request: Request) -> Response:
        from importlib import metadata

        try:
            ours = metadata.version("sessionsched")
        except metadata.PackageNotFoundError:
            ours = "unknown"
        return JSONResponse({"version": LIVY_VERSION, "commitId": "", "user": "",
                             "date": "", "url": "", "branch": "", "sessionsched": ours})
