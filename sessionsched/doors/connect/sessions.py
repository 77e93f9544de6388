"""The Connect door's sessions: which app serves a Spark Connect session, and when its driver
can take calls.

A session is known by the client's ``session_id`` (a UUID the client makes). Its first call
finds its queue (``connect`` parameters, else the server's default queue) and that queue's
``connect_share_level`` (``Operations.connect_place``):

- ``session`` (the default): it submits an app of kind ``connect``, named ``connect-`` and the
  session id's first 8 characters, through the operations port (``Operations.submit_connect``:
  the caller's rights, queue, priority range, rate limit and audit line, as from every door):
  ``sessionsched.drivers.connect_server`` under spark-submit, with dynamic allocation, which starts
  Spark's Connect service in its driver and writes its address to ``connect/SID.port`` in the
  state directory;
- ``user``: the user's live driver in that queue, if there is one, takes the session at once
  (as a Spark Connect session of its own; queued with it if the driver is not up yet); else
  the session submits one as above, with ``spark.scheduler.mode=FAIR``. Each session of such
  a driver has a fair scheduler pool of its own, ``session-`` and its id's first 8
  characters (``Session.pool``; the door sets it as the session's ``spark.scheduler.pool``
  before its first call: Spark's fair scheduler then shares the driver's executors between
  the sessions' jobs, "scheduling within an application"). Its priority is the driver's
  app's; the second session's ``priority`` is not a second app's.

``connect/SID.json`` records the session's app, user, driver (the session whose ``.port``
file names the driver's address) and pool, so that a restarted scheduler (which adopts the
driver as any app) still routes the session: the files are read back at the door's start.

``ready`` holds a call until the driver's address is known, at most ``hold_s``; then it is
``Waiting`` (the door answers UNAVAILABLE, which the client's retry policy retries, with the
app's position, reason and estimated start) or ``Ended`` (the app has ended: the door
answers FAILED_PRECONDITION, which the client does not retry, naming the app's end).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from sessionsched.model import AppState
from sessionsched.operations import auth
from sessionsched.operations.outcomes import Outcome
from sessionsched.operations.port import AppRead, Operations

POLL_S = 0.1
DRIVER = Path(__file__).resolve().parents[2] / "drivers" / "connect_server.py"
POOL = "spark.scheduler.pool"
LIVE = (AppState.ACCEPTED, AppState.STARTING, AppState.RUNNING)
TAKES_CALLS = (AppState.STARTING, AppState.RUNNING)  # with its address known: its driver's up
audit = logging.getLogger("sessionsched.audit")


class Waiting(Exception):
    """The session's app is not running yet: retry later (``str()`` says why)."""


class Ended(Exception):
    """The session's app has ended (``str()`` says how)."""


@dataclass(frozen=True)
class Session:
    session_id: str
    app_id: str
    user: str
    driver: str = ""  # the session id whose ``.port`` file has the driver's address ("": own)
    pool: str | None = None  # its fair scheduler pool in a driver shared by a user's sessions
    queue: str = ""  # its leaf queue ("": a session a previous version recorded)

    @property
    def driver_key(self) -> str:
        return self.driver or self.session_id


def _when(estimated_start: float | None, now: float) -> str:
    if estimated_start is None:
        return ""
    at = time.strftime("%H:%M:%S UTC", time.gmtime(estimated_start))
    return f", estimated start in {max(0, round(estimated_start - now))} s ({at})"


def waiting_text(s: Session, app: AppRead | None, now: float) -> str:
    if app is None:
        return f"Connect session {s.session_id}: its app {s.app_id} is being stored"
    if app.state is AppState.ACCEPTED:
        where = f"position {app.position}" if app.position is not None else "waiting"
        why = f": {app.reason}" if app.reason else ""
        return (f"Connect session {s.session_id} waits in queue {app.queue} ({where}{why}"
                f"{_when(app.estimated_start, now)}); app {app.id}, priority {app.priority}; "
                "the client retries")
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
        self.released: set[str] = set()
        # (leaf queue, user) -> the session that opened the user's driver (share level user)
        self.hosts: dict[tuple[str, str], Session] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        for path in self.dir.glob("*.json"):  # the sessions a previous process opened
            self.find(path.stem)

    # --- the table ----------------------------------------------------------------------------

    def find(self, session_id: str) -> Session | None:
        s = self.known.get(session_id)
        if s is None:  # a session a previous scheduler process opened
            try:
                data = json.loads((self.dir / f"{session_id}.json").read_text())
                s = Session(session_id, data["app_id"], data["user"], data.get("driver", ""),
                            data.get("pool"), data.get("queue", ""))
            except (OSError, ValueError, KeyError, TypeError):
                return None
            self.known[session_id] = s
            if s.pool is not None and not s.driver:
                self.hosts.setdefault((s.queue, s.user), s)
        return s

    def port_file(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.port"

    def _record(self, s: Session) -> Session:
        path = self.dir / f"{s.session_id}.json"
        path.write_text(json.dumps({k: v for k, v in asdict(s).items() if k != "session_id"}))
        self.known[s.session_id] = s
        return s

    async def open(self, caller: auth.Caller, sender: str, session_id: str, user: str,
                   queue: str | None, priority: str | None, conf: dict[str, str],
                   ) -> tuple[Session | None, Outcome | None]:
        """The session, submitted now if it is new (or, share level ``user``, given to the
        user's live driver); or the port's refusal."""
        place = self.ops.connect_place(queue)
        if not place.ok:
            return None, place
        leaf, level = place.value
        shared = level.value == "user"
        # a client's first calls may race: one app per session (per user, shared)
        lock = self._opening.setdefault(f"{leaf}/{user}" if shared else session_id,
                                        asyncio.Lock())
        async with lock:
            s = self.find(session_id)
            if s is not None:
                return s, None
            pool = f"session-{session_id[:8]}" if shared else None
            host = self.hosts.get((leaf, user)) if shared else None
            if host is not None and self._live(host):
                s = self._record(Session(session_id, host.app_id, user, host.driver_key,
                                         pool, leaf))
                audit.info("Connect session %s of %s joins app %s (queue %s shares a driver "
                           "per user; pool %s)", session_id, user, host.app_id, leaf, pool)
                return s, None
            argv = [str(DRIVER), "--port-file", str(self.port_file(session_id)),
                    "--idle-timeout-s", f"{self.idle_timeout_s:g}"]
            props = {**conf, "spark.dynamicAllocation.enabled": "true",
                     "spark.connect.grpc.binding.address": "127.0.0.1",
                     "spark.connect.grpc.binding.port": "0",
                     "spark.sessionsched.user": user}
            if shared:
                props["spark.scheduler.mode"] = "FAIR"
            out = await self.ops.submit_connect(caller, sender, argv, props, leaf, priority,
                                                f"connect-{session_id[:8]}")
            if not out.ok:
                return None, out
            s = self._record(Session(session_id, out.value.id, user, "", pool, leaf))
            if shared:
                self.hosts[leaf, user] = s
            audit.info("Connect session %s of %s opens app %s in queue %s", session_id, user,
                       s.app_id, leaf)
            return s, None

    def _live(self, s: Session) -> bool:
        app = self.ops.app(s.app_id)
        return app is not None and app.state in LIVE

    def release(self, s: Session) -> bool:
        """The client released the session: True if its app serves no other session."""
        self.released.add(s.session_id)
        audit.info("Connect session %s of %s released (app %s)", s.session_id, s.user,
                   s.app_id)
        return not any(o.app_id == s.app_id and o.session_id not in self.released
                       for o in self.known.values())

    def by_state(self) -> dict[tuple[str, str], int]:
        """Sessions not released whose app is live, by (queue, the app's state)."""
        out: dict[tuple[str, str], int] = {}
        for s in list(self.known.values()):
            if s.session_id in self.released:
                continue
            app = self.ops.app(s.app_id)
            if app is None or app.state not in LIVE:
                self.released.add(s.session_id)  # ended: not counted again
                continue
            key = (app.queue, app.state.value)
            out[key] = out.get(key, 0) + 1
        return out

    # --- waiting for the driver -----------------------------------------------------------------

    def address(self, s: Session) -> str | None:
        """The driver's ``HOST:PORT`` once it has written it (kept: read once per driver)."""
        key = s.driver_key
        known = self.addresses.get(key)
        if known is not None:
            return known
        try:
            address = self.port_file(key).read_text().strip() or None
        except OSError:
            return None
        if address is not None:
            self.addresses[key] = address
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
            running = app is not None and app.state in TAKES_CALLS
            address = self.address(s) if running else None
            if address is not None:
                return address
            if time.monotonic() >= deadline:
                raise Waiting(waiting_text(s, app, time.time()))
            await asyncio.sleep(POLL_S)
