"""The scheduler service: the engine, the store and a cluster backend, wired together.

HTTP handlers and the backend never touch the engine directly. What they observe becomes an
engine event in the *inbox*; every ``server.cycle_ms`` an APScheduler job runs the scheduling
cycle (``cycle``), which steps the engine and carries out its decisions. This module holds
the lifecycle and the operations the HTTP layer calls; ``reads`` and ``agents`` the rest.

All writes go through the store's single writer (group commit). A submission is acknowledged
only after its commit; the in-memory books (``apps``) change only after the commit they
mirror, so whatever a reader sees is on disk. Restart: ``restore``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from ..backends.base import ClusterBackend, Handle
from ..config import ServerConfig
from ..engine.events import (
    DriverExited,
    Event,
    KillRequested,
    PriorityChanged,
    QueuesChanged,
    Submitted,
)
from ..engine.scheduler import Scheduler
from ..model import AppState, Resources
from ..store import AppKind, EventRecord, Store, StoredApp, Writer
from . import plans
from .agents import AgentsMixin
from .books import AgentState, ClusterHealth
from .cycle import CycleMixin, Item
from .metrics import ServiceMetrics, count_states
from .reads import NotFound, ReadsMixin
from .restore import restore
from .retention import RetentionMixin

log = logging.getLogger("sessionsched.service")
audit = logging.getLogger("sessionsched.audit")

__all__ = ["Conflict", "NotFound", "Service"]


class Conflict(Exception):
    """The app is in a state that does not allow the request (e.g. it has ended)."""


class Service(CycleMixin, ReadsMixin, AgentsMixin, RetentionMixin):
    def __init__(
        self,
        config: ServerConfig,
        backend: ClusterBackend,
        *,
        url: str | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.config = config
        self.backend = backend
        self.clock = clock
        self.url = url or f"http://{config.server.host}:{config.server.port}"
        self.log_dir = Path(config.server.state_dir).resolve() / "logs"
        self.heartbeat_s = config.server.heartbeat_s
        self.store = Store(config.database_url())
        self.writer = Writer(self.store)
        self.engine = Scheduler(config.queue_tree(), Resources(), config.cluster.driver_slots)
        # The books, guarded by ``lock``: the committed state of every app, the agents.
        self.lock = threading.RLock()
        self.apps: dict[str, StoredApp] = {}
        self.by_spark_id: dict[str, str] = {}
        # Ended apps in memory, oldest-ended first (``retention``: beyond
        # ``server.retained_ended_apps`` they are forgotten, the store keeps them).
        self.ended: dict[str, None] = {}
        self._forgotten_cache: OrderedDict[str, StoredApp] = OrderedDict()
        self.agents: dict[str, AgentState] = {}
        self.sessions: set[str] = set()  # notebook sessions not yet ended
        self.session_since: dict[str, float] = {}  # sessions adopted at a restart: since when
        self.adopt_retry: dict[str, Handle] = {}  # adopted while the backend could not check
        self.health = ClusterHealth()
        # Bumped after every change a status answer could show (an app's record, queue order,
        # why queues wait, the cluster's health): answers cached under an older one are stale.
        self.version = 0
        self.plan: int | None = None
        self.last_cycle_at: float | None = None
        self.metrics = ServiceMetrics(self._metrics_snapshot)
        self._inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self._next_seq = 1  # only the writer thread touches it
        self._why: dict[str, str] = {}  # app -> reason for its next terminal state
        self._killers: dict[str, str] = {}  # app -> who asked for its kill
        self._capacity_read_at = float("-inf")
        self._cycle_lock = threading.Lock()
        self._scheduler = BackgroundScheduler(daemon=True)

    # --- lifecycle ----------------------------------------------------------------------------

    def check_queues(self) -> None:
        """ValueError if the store holds live apps in queues the configuration no longer has:
        they could neither start nor be shown their place, so the server does not start."""
        leaves = {q.name for q in self.engine.root.leaves()}
        lost = {q: n for q, n in self.store.live_queues().items() if q not in leaves}
        if lost:
            held = ", ".join(f"{q} ({n} app(s))" for q, n in sorted(lost.items()))
            raise ValueError(f"queues missing from the configuration still hold live apps: "
                             f"{held}; put them back (or kill those apps first)")

    def start(self, run_cycles: bool = True) -> None:
        """Load the books and start writing and cycling. ``run_cycles=False``: the caller
        runs ``cycle()`` itself."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.writer.start()
        self._next_seq = self.store.max_seq() + 1
        for event in restore(self, self.clock()):
            self._put(event)
        self._start_plans()
        if run_cycles:
            self._scheduler.add_job(
                self.cycle, IntervalTrigger(seconds=self.config.server.cycle_ms / 1000),
                id="cycle", max_instances=1, coalesce=True, misfire_grace_time=None,
            )
        self._scheduler.start()
        log.info("scheduler service started: %d apps on the books, store %s",
                 len(self.apps), self.store.url)

    def stop(self) -> None:
        """Stop cycling and writing. Drivers keep running: they are adopted at the next start."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)
        with self._cycle_lock:  # a cycle run by hand finishes first
            self.writer.stop()
        try:
            self.backend.close()
        finally:
            self.store.close()

    def _start_plans(self) -> None:
        if not self.config.plans:
            return
        index = plans.current_plan(self.config.plans, datetime.now().astimezone())
        if index is not None:
            self.apply_plan(index)
        for i, plan in enumerate(self.config.plans):
            self._scheduler.add_job(self.apply_plan, plans.trigger(plan), args=[i],
                                    id=f"plan-{i}", coalesce=True, misfire_grace_time=60)

    def apply_plan(self, index: int) -> None:
        """Run the queues with plan ``index`` from the next cycle on."""
        plan = self.config.plans[index]
        self.plan = index
        self._put(QueuesChanged(self.config.queue_tree(plan)))
        log.info("queue %s applied", plans.describe(plan))

    # --- operations (thread-safe; called by the HTTP layer) -----------------------------------

    def submit(self, app: StoredApp, sender: str) -> Future:
        """Store a checked submission; the future resolves to the stored app once committed.
        The writer gives it its sequence number, id (``driver-YYYYMMDDHHMMSS-NNNN``, NNNN the
        sequence, as a Spark master numbers drivers) and submit time."""

        def insert(session) -> StoredApp:
            now = self.clock()
            seq = self._next_seq
            self._next_seq += 1
            app_id = f"driver-{time.strftime('%Y%m%d%H%M%S', time.localtime(now))}-{seq:04d}"
            spec = replace(app.spec, app_id=app_id, seq=seq, submitted_at=now)
            stored = replace(app, id=app_id, seq=seq, submitted_at=now, spec=spec, sender=sender)
            self.store.add_apps(session, [stored])
            rows = [EventRecord(app_id, now, "submitted",
                                f"{app.kind} submission from {sender or 'unknown'} to "
                                f"{app.queue}, priority {app.priority}")]
            rows += [EventRecord(app_id, now, "warning", w) for w in app.warnings]
            self.store.add_events(session, rows)
            return stored

        def after(stored: StoredApp) -> None:
            with self.lock:
                self.apps[stored.id] = stored
                if stored.kind == AppKind.SESSION:
                    self.sessions.add(stored.id)
                self.version += 1
            self._put(Submitted(stored.spec))
            self.metrics.submissions.labels(stored.kind).inc()
            spec = stored.spec
            cap = spec.executor_cap
            audit.info("Registering app %s from sender %s, reserve:%d, priority:%d, limit:%s",
                       stored.name, stored.sender or "unknown",
                       spec.min_executors * spec.executor.cores, stored.priority,
                       "unlimited" if cap is None else cap * spec.executor.cores)
            for w in stored.warnings:
                audit.warning("%s: %s", stored.id, w)

        return self.writer.submit(insert, after)

    def set_priority(self, app_id: str, priority: int, actor: str = "Admin",
                     via: str = "") -> Future:
        """Change an app's priority; resolves once the engine has re-ordered its queue.
        ``actor``: who (with auth off everyone is the admin); ``via``: how, for the trail."""
        self._live_app(app_id)
        done: Future = Future()

        def write(session) -> int:
            # Its state only changes in this thread (after commits); gone from memory: forgotten.
            app = self.stored_app(app_id)
            if app is None or app.state.terminal:
                state = app.state.value if app is not None else "forgotten"
                raise Conflict(f"{app_id} has already ended ({state})")
            old = app.priority
            self.store.update_apps(session, [{"id": app_id, "priority": priority}])
            self.store.add_events(session, [EventRecord(
                app_id, self.clock(), "priority",
                f"{actor} updated the priority from {old} to {priority}"
                + (f" ({via})" if via else ""))])
            return old

        def after(old: int) -> None:
            with self.lock:
                self.apps[app_id].priority = priority
                self.version += 1
            audit.info("%s updated the priority of %s from %d to %d", actor, app_id, old, priority)
            self._put(PriorityChanged(app_id, priority), done)

        _fail_with(self.writer.submit(write, after), done)
        return done

    def kill(self, app_id: str, actor: str = "Admin") -> Future:
        """Kill an app; resolves once the kill is recorded and the driver told to stop."""
        self._live_app(app_id)
        done: Future = Future()
        with self.lock:
            self._killers[app_id] = actor
        self._put(KillRequested(app_id), done)
        return done

    def stop_session(self, app_id: str, exit_code: int) -> Future:
        """A notebook ended its session: its driver is gone with this exit code (a session
        still queued is withdrawn: KILLED)."""
        app = self._live_app(app_id)
        if app.kind != AppKind.SESSION:
            raise Conflict(f"{app_id} is not a notebook session (kind {app.kind})")
        done: Future = Future()
        with self.lock:
            if app.state is AppState.ACCEPTED:
                self._killers[app_id] = "its notebook"
                event: Event = KillRequested(app_id)
            else:
                self._why[app_id] = f"session stopped by its notebook (exit code {exit_code})"
                event = DriverExited(app_id, exit_code)
        self._put(event, done)
        return done

    def _live_app(self, app_id: str) -> StoredApp:
        app = self.stored_app(app_id)  # a forgotten one too: it has ended, say so
        if app is None:
            raise NotFound(f"no app {app_id!r}")
        if app.state.terminal:
            raise Conflict(f"{app_id} has already ended ({app.state.value})")
        return app

    # --- the store ------------------------------------------------------------------------------

    def write(self, changes: list[dict], rows: list[EventRecord],
              after: Callable | None = None) -> Future:
        """Column changes (dicts with ``id``) and audit rows, in one commit of the writer."""

        def job(session) -> None:
            self.store.update_apps(session, changes)
            self.store.add_events(session, rows)

        return self.writer.submit(job, after)

    def _metrics_snapshot(self) -> dict:
        with self.lock:
            usage = self.engine.usage()
            return {
                "apps": count_states((a.queue, a.state) for a in self.apps.values()),
                "pending": {q.name: usage[q.name].pending for q in self.engine.root.leaves()},
                "executor_cores": {name: u.executor_cores for name, u in usage.items()},
                "reachable": bool(self.health.reachable),
            }


def _fail_with(first: Future, done: Future) -> None:
    """Fail ``done`` if ``first`` fails (``first``'s success path resolves ``done`` itself)."""

    def relay(f: Future) -> None:
        if f.exception() is not None and not done.done():
            done.set_exception(f.exception())

    first.add_done_callback(relay)
