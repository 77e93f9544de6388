"""Livy interactive sessions (``kind: pyspark``): sparkmagic's, Zeppelin's and pylivy's
``/sessions`` API on the scheduler.

A session is an app in a queue like any other (kind ``session``, as a notebook's): it waits
its turn with its priority (``conf`` ``spark.ego.priority``, ``queue``). Its driver is a small
REPL process (``sessionsched.livy_repl``) started here at creation: it waits for admission,
builds its SparkSession with dynamic allocation and the agent attached (so an idle session
gives its executors back), then takes statements from this module and posts their outputs.

States: the app queued ``not_started``; admitted but the REPL not ready ``starting``; a
statement waiting or running ``busy``, else ``idle``; ended: ``success`` (stopped),
``dead`` (failed), ``killed``. Statements: ``waiting``, ``running``, ``available``,
``cancelling``, ``cancelled``; a running statement cannot be interrupted: a cancel marks it
``cancelling`` and its output is dropped.

A session is deleted (its REPL told to stop, or the queued app killed) by ``DELETE``, when
no client has asked about it for ``heartbeatTimeoutInSecond`` (if > 0), or after
``IDLE_TIMEOUT_S`` without a statement (Livy's ``livy.server.session.timeout``, 1 h).
Statements live in this process's memory: a restarted scheduler does not know them (its
REPLs end when they lose it for a minute).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sessionsched.doors.livy.auth import actor, refusal
from sessionsched.doors.livy.schemas import LivySessionIn, StatementIn, ValidationError, first_error
from sessionsched.doors.native.views import one_line
from sessionsched.intake import submissions
from sessionsched.intake.guard import Refused
from sessionsched.model import AppState
from sessionsched.operations.auth import Forbidden
from sessionsched.service.service import Conflict, NotFound

IDLE_TIMEOUT_S = 3600.0
SWEEP_S = 1.0
SUBMIT_WAIT_S = 30.0
KINDS = ("pyspark", "python")
ENDED = {AppState.FINISHED: "success", AppState.FAILED: "dead", AppState.KILLED: "killed"}


@dataclass
class LivySession:
    seq: int
    app_id: str
    kind: str
    name: str
    proxy_user: str | None
    heartbeat_s: int
    proc: subprocess.Popen
    log_path: Path
    ready: bool = False
    stopping: bool = False
    statements: list[dict[str, Any]] = field(default_factory=list)
    seen_at: float = field(default_factory=time.monotonic)
    active_at: float = field(default_factory=time.monotonic)


def _ms() -> int:
    return int(time.time() * 1000)


def _msg(text: str, status: int) -> JSONResponse:
    return JSONResponse({"msg": one_line(text)}, status_code=status)


class LivySessions:
    """The ``/sessions`` routes and the REPLs' ``/livy-repl`` routes. ``port``: the Livy
    door's adapter to the service (``livy.LivyPort``)."""

    def __init__(self, port, defaults: submissions.Defaults, master: str,
                 admit=lambda _request, app: app):
        """``admit(request, app)``: as ``livy.Livy``'s."""
        self.port = port
        self.defaults = defaults
        self.admit = admit
        self.lock = threading.Lock()
        self.sessions: dict[int, LivySession] = {}
        self._sweeper: threading.Thread | None = None
        host = urlparse(master.replace("spark://", "http://", 1)).hostname or ""
        self._loopback = host == "localhost" or _is_loopback(host)

    def routes(self) -> list[Route]:
        return [
            Route("/sessions", self.create, methods=["POST"]),
            Route("/sessions", self.list, methods=["GET"]),
            Route("/sessions/{sid}", self.get, methods=["GET"]),
            Route("/sessions/{sid}", self.delete, methods=["DELETE"]),
            Route("/sessions/{sid}/state", self.state, methods=["GET"]),
            Route("/sessions/{sid}/log", self.log, methods=["GET"]),
            Route("/sessions/{sid}/statements", self.add_statement, methods=["POST"]),
            Route("/sessions/{sid}/statements", self.statements, methods=["GET"]),
            Route("/sessions/{sid}/statements/{n}", self.statement, methods=["GET"]),
            Route("/sessions/{sid}/statements/{n}/cancel", self.cancel, methods=["POST"]),
            Route("/livy-repl/{sid}/ready", self.repl_ready, methods=["POST"]),
            Route("/livy-repl/{sid}/next", self.repl_next, methods=["GET"]),
            Route("/livy-repl/{sid}/result", self.repl_result, methods=["POST"]),
        ]

    # --- shapes -------------------------------------------------------------------------------

    def state_of(self, s: LivySession, snap: dict) -> str:
        app = snap["app"]
        if app.state.terminal:
            return ENDED[app.state]
        if app.state is AppState.ACCEPTED:
            return "not_started"
        if s.stopping:
            return "shutting_down"
        if not s.ready:
            return "starting"
        busy = any(st["state"] in ("waiting", "running", "cancelling") for st in s.statements)
        return "busy" if busy else "idle"

    def session_out(self, s: LivySession, log: list[str]) -> dict[str, Any]:
        snap = self.port.snapshot(s.app_id)
        app = snap["app"]
        return {
            "id": s.seq, "name": s.name, "appId": app.spark_app_id, "owner": app.user,
            "proxyUser": s.proxy_user, "state": self.state_of(s, snap), "kind": s.kind,
            "appInfo": {"driverLogUrl": None, "sparkUiUrl": None}, "log": log,
            "heartbeatTimeoutInSecond": s.heartbeat_s,
            "submissionId": app.id, "schedulerState": app.state.value, "queue": app.queue,
            "priority": app.priority, "position": snap["position"],
            "schedulerReason": snap["reason"],
        }

    def _find(self, request: Request, touch: bool = True) -> LivySession:
        raw = request.path_params["sid"]
        try:
            seq = int(raw)
        except ValueError:
            raise LookupError(f"session id {raw!r} is not a number") from None
        with self.lock:
            s = self.sessions.get(seq)
        if s is None:
            raise LookupError(f"session {seq} not found")
        if touch:
            s.seen_at = time.monotonic()
        return s

    def _log(self, s: LivySession) -> list[str]:
        try:
            return s.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []

    # --- client routes ------------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body() or b"null")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object (Livy's session request)")
            req = LivySessionIn.model_validate(body)
            if req.kind not in KINDS:
                raise ValueError(f"session kind {req.kind!r} is not served; use pyspark")
            conf = req.spark_conf()
            app = submissions.from_session(req.name, req.queue, None, conf, self.defaults)
            app = self.admit(request, app)
        except (Forbidden, Refused) as e:
            return refusal(e)
        except ValidationError as e:
            return _msg(first_error(e), 400)
        except (ValueError, RecursionError) as e:
            return _msg(str(e), 400)
        sender = f"{request.client.host}:{request.client.port}" if request.client else ""
        try:
            stored = await asyncio.wait_for(
                asyncio.wrap_future(self.port.submit(app, sender)), SUBMIT_WAIT_S)
        except Exception as e:  # noqa: BLE001 - not stored: say so, never a 500 page
            return _msg(f"session not stored: {e}", 503)
        try:
            s = self._start_repl(stored, req, conf)
        except OSError as e:
            self.port.kill(stored.id, actor="Livy (its REPL could not start)")
            return _msg(f"session's driver could not start: {e}", 503)
        with self.lock:
            self.sessions[s.seq] = s
            self._ensure_sweeper()
        return JSONResponse(self.session_out(s, []), status_code=201,
                            headers={"Location": f"/sessions/{s.seq}"})

    def _start_repl(self, stored, req: LivySessionIn, conf: dict[str, str]) -> LivySession:
        log_path = Path(self.port.workdir) / "logs" / f"{stored.id}.livy.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
        if self._loopback:
            env["SPARK_LOCAL_IP"] = "127.0.0.1"  # a loopback cluster reaches only loopback
        # With tokens, the REPL speaks for its own app only (livy_auth): the app's secret.
        for name, value in (("SESSIONSCHED_TOKEN", self.port.secret_for(stored.id)),
                            ("SESSIONSCHED_CA", self.port.ca)):
            env.pop(name, None)
            if value:
                env[name] = value
        cmd = [sys.executable, "-m", "sessionsched.livy_repl", "--server", self.port.url,
               "--app-id", stored.id, "--session", str(stored.seq),
               "--name", stored.name, "--conf", json.dumps(conf)]
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, cwd=self.port.workdir, env=env,
                                    start_new_session=True)
        return LivySession(stored.seq, stored.id, req.kind, stored.name, req.proxyUser,
                           req.heartbeatTimeoutInSecond, proc, log_path)

    async def list(self, request: Request) -> Response:
        with self.lock:
            live = sorted(self.sessions.values(), key=lambda s: s.seq)
        return JSONResponse({"from": 0, "total": len(live),
                             "sessions": [self.session_out(s, []) for s in live]})

    async def get(self, request: Request) -> Response:
        try:
            s = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        return JSONResponse(self.session_out(s, self._log(s)[-20:]))

    async def state(self, request: Request) -> Response:
        try:
            s = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        return JSONResponse({"id": s.seq, "state": self.state_of(s, self.port.snapshot(s.app_id))})

    async def log(self, request: Request) -> Response:
        try:
            s = self._find(request)
            start = int(request.query_params.get("from") or -1)
            size = int(request.query_params.get("size") or 100)
        except LookupError as e:
            return _msg(str(e), 404)
        except ValueError:
            return _msg("from and size must be whole numbers", 400)
        lines = self._log(s)
        if start < 0:
            start = max(len(lines) - size, 0)
        return JSONResponse({"id": s.seq, "from": start, "total": len(lines),
                             "log": lines[start:start + size]})

    async def delete(self, request: Request) -> Response:
        try:
            s = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        self.end(s, f"{actor(request)} (Livy DELETE)")
        return JSONResponse({"msg": "deleted"})

    def end(self, s: LivySession, actor: str) -> None:
        """Stop a session: a queued one is killed, a running one's REPL told to stop (it
        stops Spark and ends the app)."""
        s.stopping = True
        snap = self.port.snapshot(s.app_id)
        queued = snap is not None and snap["app"].state is AppState.ACCEPTED
        if queued or not s.ready:  # no REPL to ask yet
            try:
                self.port.kill(s.app_id, actor=actor)
            except (NotFound, Conflict):
                pass  # ended already

    async def add_statement(self, request: Request) -> Response:
        try:
            s = self._find(request)
            body = StatementIn.model_validate(json.loads(await request.body() or b"null"))
        except LookupError as e:
            return _msg(str(e), 404)
        except ValidationError as e:
            return _msg(first_error(e), 400)
        except ValueError as e:
            return _msg(f"request body is not valid JSON: {e}", 400)
        snap = self.port.snapshot(s.app_id)
        if s.stopping or snap["app"].state.terminal or s.proc.poll() is not None:
            return _msg(f"session {s.seq} has ended ({self.state_of(s, snap)})", 400)
        with self.lock:
            st = {"id": len(s.statements), "code": body.code, "state": "waiting",
                  "output": None, "progress": 0.0, "started": 0, "completed": 0}
            s.statements.append(st)
            s.active_at = time.monotonic()
        return JSONResponse(st, status_code=201,
                            headers={"Location": f"/sessions/{s.seq}/statements/{st['id']}"})

    async def statements(self, request: Request) -> Response:
        try:
            s = self._find(request)
        except LookupError as e:
            return _msg(str(e), 404)
        self._orphans(s)
        with self.lock:
            listed = [dict(st) for st in s.statements]
        return JSONResponse({"total_statements": len(listed), "statements": listed})

    def _orphans(self, s: LivySession) -> None:
        """Statements that can no longer run, because the REPL has ended, end in ``error``
        (instead of waiting for ever)."""
        if s.proc.poll() is None:
            return
        with self.lock:
            for st in s.statements:
                if st["state"] in ("waiting", "running", "cancelling"):
                    st.update(state="error", progress=1.0, completed=_ms(), output={
                        "status": "error", "execution_count": st["id"],
                        "ename": "SessionEnded", "evalue": "the session's driver has ended",
                        "traceback": []})

    def _statement(self, request: Request) -> tuple[LivySession, dict]:
        s = self._find(request)
        self._orphans(s)
        raw = request.path_params["n"]
        with self.lock:
            if not raw.isdigit() or int(raw) >= len(s.statements):
                raise LookupError(f"statement {raw} not found in session {s.seq}")
            return s, s.statements[int(raw)]

    async def statement(self, request: Request) -> Response:
        try:
            _s, st = self._statement(request)
        except LookupError as e:
            return _msg(str(e), 404)
        with self.lock:
            return JSONResponse(dict(st))

    async def cancel(self, request: Request) -> Response:
        try:
            _s, st = self._statement(request)
        except LookupError as e:
            return _msg(str(e), 404)
        with self.lock:
            if st["state"] == "waiting":
                st["state"] = "cancelled"
            elif st["state"] == "running":
                st["state"] = "cancelling"
        return JSONResponse({"msg": "canceled"})

    # --- the REPL's routes --------------------------------------------------------------------

    async def repl_ready(self, request: Request) -> Response:
        try:
            s = self._find(request, touch=False)
        except LookupError as e:
            return _msg(str(e), 404)
        s.ready = True
        return JSONResponse({"msg": "ok"})

    async def repl_next(self, request: Request) -> Response:
        try:
            s = self._find(request, touch=False)
        except LookupError:
            return JSONResponse({"stop": True})
        snap = self.port.snapshot(s.app_id)
        if s.stopping or snap is None or snap["app"].state.terminal:  # killed elsewhere too
            return JSONResponse({"stop": True})
        with self.lock:
            for st in s.statements:
                if st["state"] == "waiting":
                    st["state"], st["started"] = "running", _ms()
                    return JSONResponse({"id": st["id"], "code": st["code"]})
        return JSONResponse({"id": None})

    async def repl_result(self, request: Request) -> Response:
        try:
            s = self._find(request, touch=False)
            body = json.loads(await request.body())
            n, output = int(body["id"]), body["output"]
        except LookupError as e:
            return _msg(str(e), 404)
        except (ValueError, KeyError, TypeError) as e:
            return _msg(f"bad result: {e}", 400)
        with self.lock:
            if 0 <= n < len(s.statements):
                st = s.statements[n]
                cancelled = st["state"] == "cancelling"
                st.update(state="cancelled" if cancelled else "available",
                          output=None if cancelled else output, progress=1.0,
                          completed=_ms())
                s.active_at = time.monotonic()
        return JSONResponse({"msg": "ok"})

    # --- timeouts -----------------------------------------------------------------------------

    def _ensure_sweeper(self) -> None:
        if self._sweeper is None or not self._sweeper.is_alive():
            self._sweeper = threading.Thread(target=self._sweep, name="livy-sessions",
                                             daemon=True)
            self._sweeper.start()

    def _sweep(self) -> None:
        """Every SWEEP_S while sessions live: end sessions past their heartbeat or idle
        timeout, and reap ended REPL processes. Ends itself when no session lives."""
        while True:
            time.sleep(SWEEP_S)
            now = time.monotonic()
            with self.lock:
                live = [s for s in self.sessions.values() if s.proc.poll() is None]
            for s in live:
                if s.stopping:
                    continue
                if s.heartbeat_s and now - s.seen_at > s.heartbeat_s:
                    self.end(s, f"Livy (no heartbeat for {s.heartbeat_s}s)")
                elif now - s.active_at > IDLE_TIMEOUT_S:
                    self.end(s, f"Livy (idle for {IDLE_TIMEOUT_S:g}s)")
            if not live:
                return


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
