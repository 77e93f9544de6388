"""The Connect door's sessions: which app serves a Spark Connect session, and when its driver
can take calls.

A session is known by the client's ``session_id`` (a UUID the client makes). Its first call
submits an app of kind ``connect``, named ``connect-`` and the session id's first 8
characters, through the operations port (``Operations.submit_connect``:
the caller's rights, queue, priority range, rate limit and audit line, as from every door):
``sessionsched.connect_driver`` under spark-submit, with dynamic allocation, which starts
Spark's Connect service in its driver and writes its address to ``connect/SID.port`` in the
state directory. ``connect/SID.json`` records the session's app and user, so that a restarted
scheduler (which adopts the driver as any app) still routes the session.

``ready`` holds a call until the driver's address is known, at most ``hold_s``; then it is
``Waiting`` (the door answers UNAVAILABLE, which the client's retry policy retries, with the
app's position and reason) or ``Ended`` (the app has ended: the door answers FAILED_PRECONDITION,
which the client does not retry, naming the app's end).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path

from sessionsched.model import AppState
from sessionsched.operations import auth
from sessionsched.operations.outcomes import Outcome
from sessionsched.operations.port import AppRead, Operations

POLL_S = 0.1
DRIVER = Path(__file__).resolve().parents[2] / "connect_driver.py"


class Waiting(Exception):
    """The session's app is not running yet: retry later (``str()`` says why)."""


class Ended(Exception):
    """The session's app has ended (``str()`` says how)."""


@dataclass(frozen=True)
class Session:
    session_id: str
    app_id: str
    user: str


def waiting_text(s: Session, app: AppRead | None) -> str:
    if app is None:
        return f"Connect session {s.session_id}: its app {s.app_id} is being stored"
    if app.state is AppState.ACCEPTED:
        where = f"position {app.position}" if app.position is not None else "waiting"
        why = f": {app.reason}" if app.reason else ""
        return (f"Connect session {s.session_id} waits in queue {app.queue} ({where}{why}); "
                f"app {app.id}, priority {app.priority}; the client retries")
    return (f"Connect session {s.session_id}: its driver ({app.id}, {app.state.value}) is "
            "starting; the client retries")


def ended_text(s: Session, app: AppRead) -> str:
    how = {AppState.KILLED: "was killed", AppState.FAILED: "failed",
           AppState.FINISHED: "has finished"}[app.state]
    why = f" ({app.reason})" if app.reason else ""
    return (f"Connect session {s.session_id} has ended: its app {app.id} {how}{why}; open a "
            "new session")


class Sessions:
    def __init__(self, ops: Operations, hold_s: float, idle_timeout_s: float):
        self.ops = ops
        self.hold_s = hold_s
        self.idle_timeout_s = idle_timeout_s
        self.dir = Path(ops.workdir) / "connect"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.known: dict[str, Session] = {}
        self.addresses: dict[str, str] = {}
        self._opening: dict[str, asyncio.Lock] = {}

    # --- the table ----------------------------------------------------------------------------

    def find(self, session_id: str) -> Session | None:
        s = self.known.get(session_id)
        if s is None:  # a session a previous scheduler process opened
            try:
                data = json.loads((self.dir / f"{session_id}.json").read_text())
                s = Session(session_id, data["app_id"], data["user"])
            except (OSError, ValueError, KeyError):
                return None
            self.known[session_id] = s
        return s

    def port_file(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.port"

    async def open(self, caller: auth.Caller, sender: str, session_id: str, user: str,
                   queue: str | None, priority: str | None, conf: dict[str, str],
                   ) -> tuple[Session | None, Outcome | None]:
        """The session, submitted now if it is new; or the port's refusal."""
        lock = self._opening.setdefault(session_id, asyncio.Lock())
        async with lock:  # a client's first calls may race: one app per session
            s = self.find(session_id)
            if s is not None:
                return s, None
            argv = [str(DRIVER), "--port-file", str(self.port_file(session_id)),
                    "--idle-timeout-s", f"{self.idle_timeout_s:g}"]
            props = {**conf, "spark.dynamicAllocation.enabled": "true",
                     "spark.connect.grpc.binding.address": "127.0.0.1",
                     "spark.connect.grpc.binding.port": "0",
                     "spark.sessionsched.user": user}
            out = await self.ops.submit_connect(caller, sender, argv, props, queue, priority,
                                                f"connect-{session_id[:8]}")
            if not out.ok:
                return None, out
            s = Session(session_id, out.value.id, user)
            path = self.dir / f"{session_id}.json"
            path.write_text(json.dumps({"app_id": s.app_id, "user": user}))
            self.known[session_id] = s
            return s, None

    # --- waiting for the driver -----------------------------------------------------------------

    def address(self, s: Session) -> str | None:
        """The driver's ``HOST:PORT`` once it has written it (kept: read once per session)."""
        known = self.addresses.get(s.session_id)
        if known is not None:
            return known
        try:
            address = self.port_file(s.session_id).read_text().strip() or None
        except OSError:
            return None
        if address is not None:
            self.addresses[s.session_id] = address
        return address

    def check_live(self, s: Session) -> AppRead | None:
        """The app; ``Ended`` if it has ended."""
        app = self.ops.app(s.app_id)
        if app is not None and app.state.terminal:
            raise Ended(ended_text(s, app))
        return app

    async def ready(self, s: Session, hold_s: float | None = None) -> str:
        """The driver's ``HOST:PORT`` once it takes calls; ``Waiting`` after ``hold_s``,
        ``Ended`` when the app ends."""
        deadline = time.monotonic() + (self.hold_s if hold_s is None else hold_s)
        while True:
            app = self.check_live(s)
            running = app is not None and app.state in (AppState.STARTING, AppState.RUNNING)
            address = self.address(s) if running else None
            if address is not None:
                return address
            if time.monotonic() >= deadline:
                raise Waiting(waiting_text(s, app))
            await asyncio.sleep(POLL_S)
