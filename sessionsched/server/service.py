"""The scheduler service: the engine, the store and a cluster backend, wired together.

HTTP handlers and the backend never touch the engine directly. What they observe becomes an
engine event in the *inbox*; every ``server.cycle_ms`` an APScheduler job runs ``cycle()``:

  1. drain the inbox (submissions, priority changes, kills, agent reports);
  2. observe the cluster (``backend.poll``, capacity) and reconcile executor counts
     (``reconcile``: a live agent speaks for its app, else the cluster's own view does);
  3. ``Scheduler.step(now, events) -> decisions``;
  4. record (``recording``): every state change, kill, exit code and Spark app id is written
     to the store and committed *before* any driver is launched or stopped, so a crash can
     never leave a launched driver the store does not know was launched;
  5. carry out: LaunchDriver -> ``backend.launch`` of ``build_launch(app)`` (sessions: nothing,
     the waiting notebook sees STARTING and starts its own driver), StopDriver ->
     ``backend.stop``, Reclaim -> kept for the app's agent to pick up once; SetTarget needs
     nothing (the agent reads the engine's target and grant at its next heartbeat);
  6. answer whoever waits on an inbox item (a kill's HTTP request returns once it is done).

All writes go through the store's single writer (group commit). A submission is acknowledged
only after its commit; the in-memory books (``apps``) change only after the commit they
mirror, so whatever a reader sees is on disk. Restart: ``restore``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from ..backends.base import BackendError, ClusterBackend, Handle
from ..config import ServerConfig
from ..engine.events import (
    CapacityChanged,
    Decision,
    DriverExited,
    DriverStarted,
    Event,
    KillRequested,
    LaunchDriver,
    PriorityChanged,
    QueuesChanged,
    Reclaim,
    StopDriver,
    Submitted,
)
from ..engine.scheduler import Scheduler
from ..engine.validate import EventError
from ..model import AppState, Resources
from ..store import AppKind, EventRecord, Store, StoredApp, Writer
from . import plans
from .agents import AgentsMixin
from .books import AgentState, ClusterHealth
from .launch import build_launch
from .metrics import ServiceMetrics, count_states
from .reads import NotFound, ReadsMixin
from .reconcile import reconcile
from .recording import record_step
from .restore import restore

log = logging.getLogger("sessionsched.service")
audit = logging.getLogger("sessionsched.audit")

COMMIT_TIMEOUT_S = 30.0
CAPACITY_EVERY_S = 2.0  # re-read the cluster's capacity at least this often

__all__ = ["Conflict", "NotFound", "Service"]


class Conflict(Exception):
    """The app is in a state that does not allow the request (e.g. it has ended)."""


@dataclass
class _Item:
    event: Event
    done: Future | None = None


class Service(ReadsMixin, AgentsMixin):
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
        self.agents: dict[str, AgentState] = {}
        self.sessions: set[str] = set()  # notebook sessions not yet ended
        self.session_since: dict[str, float] = {}  # sessions adopted at a restart: since when
        self.adopt_retry: dict[str, Handle] = {}  # adopted while the backend could not check
        self.health = ClusterHealth()
        self.plan: int | None = None
        self.last_cycle_at: float | None = None
        self.metrics = ServiceMetrics(self._metrics_snapshot)
        self._inbox: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._next_seq = 1  # only the writer thread touches it
        self._why: dict[str, str] = {}  # app -> reason for its next terminal state
        self._killers: dict[str, str] = {}  # app -> who asked for its kill
        self._capacity_read_at = float("-inf")
        self._cycle_lock = threading.Lock()
        self._scheduler = BackgroundScheduler(daemon=True)

    # --- lifecycle ----------------------------------------------------------------------------

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
            app = self.apps[app_id]  # its state only changes in this thread (after commits)
            if app.state.terminal:
                raise Conflict(f"{app_id} has already ended ({app.state.value})")
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
        with self.lock:
            app = self.apps.get(app_id)
            if app is None:
                raise NotFound(f"no app {app_id!r}")
            if app.state.terminal:
                raise Conflict(f"{app_id} has already ended ({app.state.value})")
            return app

    # --- the cycle ----------------------------------------------------------------------------

    def cycle(self) -> None:
        """One scheduling cycle (see the module doc). Never raises: a failure is logged and
        reported to whoever waits on this cycle's inbox items."""
        with self._cycle_lock:
            started = time.perf_counter()
            items = self._drain()
            error: BaseException | None = None
            try:
                self._cycle([i.event for i in items])
            except Exception as e:  # noqa: BLE001 - the loop must go on
                log.exception("scheduling cycle failed")
                error = e
            for item in items:
                if item.done is not None and not item.done.done():
                    if error is None:
                        item.done.set_result(None)
                    else:
                        item.done.set_exception(error)
            self.last_cycle_at = self.clock()
            self.metrics.cycle_seconds.observe(time.perf_counter() - started)

    def _cycle(self, events: list[Event]) -> None:
        now = self.clock()
        events = events + self._observe(now) + self._housekeeping(now)
        with self.lock:
            decisions = self._step(now, events)
            record = record_step(now, events, decisions, self.apps, self.engine.apps,
                                 self._why, self._killers)
            # A notebook's driver is not the backend's: tell it the Spark app is ours, so it
            # reports its executors and stops counting them as someone else's usage.
            sessions = [(ev.app_id, ev.spark_app_id) for ev in events
                        if isinstance(ev, DriverStarted) and ev.spark_app_id
                        and self.apps[ev.app_id].kind == AppKind.SESSION]
            for d in decisions:
                if isinstance(d, Reclaim):
                    self.agents.setdefault(d.app_id, AgentState(seen_at=0.0)).orders.append(d)
        try:
            self.write(record.rows_for_store(), record.rows,
                       self._apply(record.changes)).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - nothing may be launched that is not recorded
            log.error("could not record the cycle's decisions (%s); launches are held back", e)
            for d in decisions:
                if isinstance(d, LaunchDriver):
                    self._fail_launch(d.app_id, f"could not record the launch: {e}")
            return
        for app_id, spark_app_id in sessions:
            try:
                self.backend.manage(app_id, spark_app_id)
            except Exception:  # noqa: BLE001 - executors then come from the agent alone
                log.exception("backend could not take %s's executors into account", app_id)
        self._carry_out(now, decisions)

    def _step(self, now: float, events: list[Event]) -> list[Decision]:
        """Step the engine; an event it refuses (it names it and changes nothing) is dropped
        with a warning and the rest stepped again — late facts about ended apps and the like
        must not hold up everyone else's submissions."""
        while True:
            try:
                return self.engine.step(now, events)
            except EventError as e:
                log.warning("engine refused %s; dropped", e)
                events = events[:e.index] + events[e.index + 1:]

    def _drain(self) -> list[_Item]:
        items = []
        while True:
            try:
                items.append(self._inbox.get_nowait())
            except queue.Empty:
                return items

    def _put(self, event: Event, done: Future | None = None) -> None:
        self._inbox.put(_Item(event, done))

    def _observe(self, now: float) -> list[Event]:
        """The backend's news, reconciled with the agents', plus capacity when due. While the
        cluster cannot be reached, capacity is nil: nothing is admitted, everything queues.
        A backend failure of any kind is taken as "unreachable": the cycle goes on with the
        inbox's events, so no submission waits on a broken backend."""
        try:
            polled = list(self.backend.poll(now))
        except Exception as e:  # noqa: BLE001 - BackendError, or a backend bug: same answer
            return self._unreachable(now, e)
        if any(isinstance(e, CapacityChanged) for e in polled):
            self._capacity_read_at = now
        elif not self.health.reachable or now - self._capacity_read_at >= CAPACITY_EVERY_S:
            try:
                cores_mem, slots = self.backend.capacity()
            except Exception as e:  # noqa: BLE001
                with self.lock:
                    return reconcile(polled, self.agents, now, self.heartbeat_s) + \
                        self._unreachable(now, e)
            polled.append(CapacityChanged(cores_mem, slots))
            self._capacity_read_at = now
        if self.health.reachable is not True:
            if self.health.reachable is False:
                log.info("cluster reachable again")
            self.health = ClusterHealth(True, "", now)
        with self.lock:
            return reconcile(polled, self.agents, now, self.heartbeat_s)

    def _unreachable(self, now: float, error: Exception) -> list[Event]:
        if not isinstance(error, BackendError):
            log.exception("cluster backend failed", exc_info=error)
        message = str(error) or type(error).__name__
        if self.health.reachable is False:
            self.health.message = message
            return []
        log.warning("cluster unreachable: %s; submissions are queued until it is back", message)
        self.health = ClusterHealth(False, message, now)
        return [CapacityChanged(Resources(), 0)]

    def _housekeeping(self, now: float) -> list[Event]:
        """Adoptions to check again after a backend outage; notebook sessions gone silent."""
        events: list[Event] = []
        for app_id, handle in list(self.adopt_retry.items()):
            try:
                alive = self.backend.adopt(handle)
            except Exception:  # noqa: BLE001 - try again next cycle
                continue
            del self.adopt_retry[app_id]
            if not alive:
                with self.lock:
                    self._why[app_id] = "its driver was gone when the scheduler restarted"
                events.append(DriverExited(app_id, -1))
        limit = self.config.server.session_timeout
        with self.lock:
            for app_id in list(self.sessions):
                app = self.apps[app_id]
                if app.state.terminal:
                    self.sessions.discard(app_id)
                    continue
                if app.state is AppState.ACCEPTED or app_id in self._why:
                    continue
                agent = self.agents.get(app_id)
                last = max(agent.seen_at if agent else 0.0, app.started_at or 0.0,
                           self.session_since.get(app_id, 0.0))
                if now - last > limit:
                    self._why[app_id] = f"session silent for over {limit:g}s: its notebook is gone"
                    events.append(DriverExited(app_id, -1))
        return events

    def _apply(self, changes: dict[str, dict]) -> Callable[[object], None]:
        """The after-commit step: the books take the committed changes."""

        def after(_):
            with self.lock:
                for app_id, change in changes.items():
                    app = self.apps[app_id]
                    for key, value in change.items():
                        setattr(app, key, value)
                    if change.get("spark_app_id"):
                        self.by_spark_id[change["spark_app_id"]] = app_id
                    if app.state.terminal:
                        self.sessions.discard(app_id)
                        self.session_since.pop(app_id, None)
                        agent = self.agents.get(app_id)
                        if agent is not None:
                            agent.orders = []

        return after

    def write(self, changes: list[dict], rows: list[EventRecord],
              after: Callable | None = None) -> Future:
        """Column changes (dicts with ``id``) and audit rows, in one commit of the writer."""

        def job(session) -> None:
            self.store.update_apps(session, changes)
            self.store.add_events(session, rows)

        return self.writer.submit(job, after)

    def _carry_out(self, now: float, decisions: list[Decision]) -> None:
        launched: list[tuple[str, Handle, str | None]] = []
        for d in decisions:
            if isinstance(d, LaunchDriver):
                result = self._launch(d.app_id)
                if result is not None:
                    launched.append((d.app_id, *result))
            elif isinstance(d, StopDriver):
                self._stop(d.app_id)
        if not launched:
            return
        changes = [{"id": app_id, "handle": _handle_json(h), "log_path": log_path}
                   for app_id, h, log_path in launched]
        rows = [EventRecord(app_id, now, "launch", f"driver launched ({h.kind} {h.ref})")
                for app_id, h, _ in launched]

        def after(_):
            with self.lock:
                for change in changes:
                    app = self.apps[change["id"]]
                    app.handle, app.log_path = change["handle"], change["log_path"]

        try:
            self.write(changes, rows, after).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            # The drivers run; a restart fails them (no handle) rather than launch them again.
            log.error("could not record launch handles: %s", e)

    def _launch(self, app_id: str) -> tuple[Handle, str | None] | None:
        with self.lock:
            app = replace(self.apps[app_id])
            queue_conf = self.engine.queue(app.queue)
            ceiling = self.engine.capacity.cores // max(app.spec.executor.cores, 1)
        if app.kind == AppKind.SESSION:
            self.metrics.launches.labels("session").inc()
            return None  # the notebook, polling its app, sees STARTING and starts its driver
        try:
            launch = build_launch(app, self.url, self.log_dir,
                                  reclaim_timeout_s=queue_conf.reclaim_timeout_s,
                                  max_executors=ceiling or None)
            handle = self.backend.launch(launch)
        except Exception as e:  # noqa: BLE001 - whatever went wrong, the app must not hang
            if not isinstance(e, BackendError | OSError | ValueError):
                log.exception("backend failed to launch %s", app_id)
            log.error("launch of %s failed: %s", app_id, e)
            self.metrics.launches.labels("failed").inc()
            self._fail_launch(app_id, f"launch failed: {e}")
            return None
        self.metrics.launches.labels("ok").inc()
        return handle, launch.log_path

    def _fail_launch(self, app_id: str, why: str) -> None:
        with self.lock:
            self._why[app_id] = why
        self._put(DriverExited(app_id, -1))

    def _stop(self, app_id: str) -> None:
        with self.lock:
            kind = self.apps[app_id].kind
        if kind == AppKind.SESSION:
            return  # the notebook's agent hears the terminal state at its next heartbeat
        try:
            self.backend.stop(app_id)
        except Exception as e:  # noqa: BLE001 - the kill is recorded; the cluster view follows
            log.error("could not stop %s's driver: %s", app_id, e)

    def _metrics_snapshot(self) -> dict:
        with self.lock:
            usage = self.engine.usage()
            return {
                "apps": count_states((a.queue, a.state) for a in self.apps.values()),
                "pending": {q.name: usage[q.name].pending for q in self.engine.root.leaves()},
                "executor_cores": {name: u.executor_cores for name, u in usage.items()},
                "reachable": bool(self.health.reachable),
            }


def _handle_json(h: Handle) -> dict:
    return {"app_id": h.app_id, "kind": h.kind, "ref": h.ref, "started_at": h.started_at}


def _fail_with(first: Future, done: Future) -> None:
    """Fail ``done`` if ``first`` fails (``first``'s success path resolves ``done`` itself)."""

    def relay(f: Future) -> None:
        if f.exception() is not None and not done.done():
            done.set_exception(f.exception())

    first.add_done_callback(relay)
