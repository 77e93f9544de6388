"""Livy interactive sessions (``kind: pyspark``): sparkmagic's, Zeppelin's and pylivy's
``/sessions`` API on the scheduler.

A session is an app in a queue like any other (kind ``session``, as a notebook's): it waits
its turn with its priority (``conf`` ``spark.ego.priority``, ``queue``). Its driver is a small
REPL process (``sessionsched.drivers.livy_repl``) started here at creation: it waits for admission,
builds its SparkSession with dynamic allocation and the agent attached (so an idle session
gives its executors back), then takes statements from this module and posts their outputs
(its routes: ``repl``).

States: the app queued ``not_started``; admitted but the REPL not ready ``starting``; a
statement waiting or running ``busy``, else ``idle``; ended: ``success`` (stopped),
``dead`` (failed), ``killed``. Statements: ``waiting``, ``running``, ``available``,
``cancelling``, ``cancelled``; a running statement cannot be interrupted: a cancel marks it
``cancelling`` and its output is dropped.

A session is deleted (its REPL told to stop, or the queued app killed) by ``DELETE``, when
no client has asked about it for ``heartbeatTimeoutInSecond`` (if > 0), or after
``IDLE_TIMEOUT_S`` without a statement (Livy's ``livy.server.session.timeout``, 1 h). Its queue's
``release_idle_sessions_after`` may stop its driver sooner, while apps wait for the host's
room: it ends ``killed``, and its log's last line and a statement posted then say why.
Statements live in this process's memory: a restarted scheduler does not know them (its
REPLs end when they lose it for a minute).
"""

from __future__ import annotations

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

from sessionsched.doors.common.requests import sender
from sessionsched.doors.common.times import estimate_fields
from sessionsched.doors.livy.answers import caller, json_of, log_page, msg, reason_info, refusal
from sessionsched.doors.livy.repl import now_ms, repl_routes
from sessionsched.doors.livy.schemas import LivySessionIn, StatementIn, ValidationError, first_error
from sessionsched.model import AppState
from sessionsched.model.endings import was_released_idle
from sessionsched.operations import auth
from sessionsched.operations.outcomes import Kind
from sessionsched.operations.port import AppRead, Operations

IDLE_TIMEOUT_S = 3600.0
SWEEP_S = 1.0
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


class LivySessions:
    """The ``/sessions`` routes and the REPLs' ``/livy-repl`` routes (``repl``), over the
    operations port."""

    def __init__(self, ops: Operations):
        self.ops = ops
        self.lock = threading.Lock()
        self.sessions: dict[int, LivySession] = {}
        self._sweeper: threading.Thread | None = None
        host = urlparse(ops.master.replace("spark://", "http://", 1)).hostname or ""
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
            *repl_routes(self),
        ]

    # --- shapes -------------------------------------------------------------------------------

    def state_of(self, s: LivySession, app: AppRead) -> str:
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
        app = self.ops.app(s.app_id)
        return {
            "id": s.seq, "name": s.name, "appId": app.spark_app_id, "owner": app.user,
            "proxyUser": s.proxy_user, "state": self.state_of(s, app), "kind": s.kind,
            "appInfo": {"driverLogUrl": None, "sparkUiUrl": None, **reason_info(app),
                        **estimate_fields(app)},
            "log": log,
            "heartbeatTimeoutInSecond": s.heartbeat_s,
            "submissionId": app.id, "schedulerState": app.state.value, "queue": app.queue,
            "priority": app.priority, "position": app.position,
            "schedulerReason": app.reason, "schedulerReasonCode": app.reason_code,
        }

    def find(self, request: Request, touch: bool = True) -> LivySession:
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
        """The REPL's log; for a session released idle, the reason last (what sparkmagic shows
        of a session that ended)."""
        try:
            lines = s.log_path.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        return lines + [f"sessionsched: {why}" for why in _released(self.ops.app(s.app_id))]

    # --- client routes ------------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        try:
            body = await json_of(request)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object (Livy's session request)")
            req = LivySessionIn.model_validate(body)
            if req.kind not in KINDS:
                raise ValueError(f"session kind {req.kind!r} is not served; use pyspark")
            conf = req.spark_conf()
        except ValidationError as e:
            return msg(first_error(e), 400)
        except ValueError as e:
            return msg(str(e), 400)
        out = await self.ops.submit_session(caller(request), sender(request), req.name,
                                            req.queue, None, conf, on_host=True)
        if out.kind in (Kind.INVALID, Kind.FORBIDDEN, Kind.REFUSED):
            return refusal(out)
        if not out.ok:
            return msg(f"session not stored: {out.message}", 503)
        stored = out.value
        try:
            s = self._start_repl(stored, req, conf)
        except OSError as e:
            self.ops.request_kill(auth.NOBODY, stored.id, actor="Livy (its REPL could not start)")
            return msg(f"session's driver could not start: {e}", 503)
        with self.lock:
            self.sessions[s.seq] = s
            self._ensure_sweeper()
        return JSONResponse(self.session_out(s, []), status_code=201,
                            headers={"Location": f"/sessions/{s.seq}"})

    def _start_repl(self, stored, req: LivySessionIn, conf: dict[str, str]) -> LivySession:
        log_path = Path(self.ops.workdir) / "logs" / f"{stored.id}.livy.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
        if self._loopback:
            env["SPARK_LOCAL_IP"] = "127.0.0.1"  # a loopback cluster reaches only loopback
        # With tokens, the REPL speaks for its own app only (livy_auth): the app's secret.
        for name, value in (("SESSIONSCHED_TOKEN", self.ops.secret_for(stored.id)),
                            ("SESSIONSCHED_CA", self.ops.ca)):
            env.pop(name, None)
            if value:
                env[name] = value
        cmd = [sys.executable, "-m", "sessionsched.drivers.livy_repl", "--server", self.ops.url,
               "--app-id", stored.id, "--session", str(stored.seq),
               "--name", stored.name, "--conf", json.dumps(conf)]
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, cwd=self.ops.workdir, env=env,
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
            s = self.find(request)
        except LookupError as e:
            return msg(str(e), 404)
        return JSONResponse(self.session_out(s, self._log(s)[-20:]))

    async def state(self, request: Request) -> Response:
        try:
            s = self.find(request)
        except LookupError as e:
            return msg(str(e), 404)
        return JSONResponse({"id": s.seq, "state": self.state_of(s, self.ops.app(s.app_id))})

    async def log(self, request: Request) -> Response:
        try:
            s = self.find(request)
        except LookupError as e:
            return msg(str(e), 404)
        lines = self._log(s)
        try:
            start, page = log_page(request, lines, 100)
        except ValueError as e:
            return msg(str(e), 400)
        return JSONResponse({"id": s.seq, "from": start, "total": len(lines), "log": page})

    async def delete(self, request: Request) -> Response:
        try:
            s = self.find(request)
        except LookupError as e:
            return msg(str(e), 404)
        self.end(s, f"{caller(request).actor} (Livy DELETE)")
        return JSONResponse({"msg": "deleted"})

    def end(self, s: LivySession, actor: str) -> None:
        """Stop a session: a queued one is killed, a running one's REPL told to stop (it
        stops Spark and ends the app)."""
        s.stopping = True
        app = self.ops.app(s.app_id)
        queued = app is not None and app.state is AppState.ACCEPTED
        if queued or not s.ready:  # no REPL to ask yet; ended already: nothing to do
            self.ops.request_kill(auth.NOBODY, s.app_id, actor=actor)

    async def add_statement(self, request: Request) -> Response:
        try:
            s = self.find(request)
            body = StatementIn.model_validate(await json_of(request))
        except LookupError as e:
            return msg(str(e), 404)
        except ValidationError as e:
            return msg(first_error(e), 400)
        except ValueError as e:
            return msg(str(e), 400)
        app = self.ops.app(s.app_id)
        if s.stopping or app.state.terminal or s.proc.poll() is not None:
            why = "".join(f": {r}" for r in _released(app))
            return msg(f"session {s.seq} has ended ({self.state_of(s, app)}){why}", 400)
        with self.lock:
            st = {"id": len(s.statements), "code": body.code, "state": "waiting",
                  "output": None, "progress": 0.0, "started": 0, "completed": 0}
            s.statements.append(st)
            s.active_at = time.monotonic()
        return JSONResponse(st, status_code=201,
                            headers={"Location": f"/sessions/{s.seq}/statements/{st['id']}"})

    async def statements(self, request: Request) -> Response:
        try:
            s = self.find(request)
        except LookupError as e:
            return msg(str(e), 404)
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
                    st.update(state="error", progress=1.0, completed=now_ms(), output={
                        "status": "error", "execution_count": st["id"],
                        "ename": "SessionEnded", "evalue": "the session's driver has ended",
                        "traceback": []})

    def _statement(self, request: Request) -> tuple[LivySession, dict]:
        s = self.find(request)
        self._orphans(s)
        raw = request.path_params["n"]
        with self.lock:
            if not (raw.isascii() and raw.isdigit()) or int(raw) >= len(s.statements):
                raise LookupError(f"statement {raw} not found in session {s.seq}")
            return s, s.statements[int(raw)]

    async def statement(self, request: Request) -> Response:
        try:
            _s, st = self._statement(request)
        except LookupError as e:
            return msg(str(e), 404)
        with self.lock:
            return JSONResponse(dict(st))

    async def cancel(self, request: Request) -> Response:
        try:
            _s, st = self._statement(request)
        except LookupError as e:
            return msg(str(e), 404)
        with self.lock:
            if st["state"] == "waiting":
                st["state"] = "cancelled"
            elif st["state"] == "running":
                st["state"] = "cancelling"
        return JSONResponse({"msg": "canceled"})

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


def _released(app: AppRead | None) -> list[str]:
    """The reason of a session released idle for apps waiting for the host (none else)."""
    return [app.reason] if app is not None and was_released_idle(app.reason) else []


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
