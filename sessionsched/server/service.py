"""The scheduler service: the engine, the store and a cluster backend, wired together.

HTTP handlers and the backend never touch the engine directly. What they observe becomes an
engine event in the *inbox*; every ``server.cycle_ms`` an APScheduler job runs ``cycle()``:

  1. drain the inbox (submissions, priority changes, kills, agent reports);
  2. observe the cluster (``backend.poll``, capacity); reconcile executor counts: an app's live
     agent speaks for its executors, else the cluster's own view does;
  3. ``Scheduler.step(now, events) -> decisions``;
  4. record: every state change (and kill, exit code, Spark app id) is written to the store
     and committed *before* any driver is launched or stopped, so a crash can never leave a
     launched driver the store does not know was launched;
  5. carry out: LaunchDriver -> ``backend.launch`` (sessions: nothing, the waiting notebook sees
     STARTING and starts its own driver), StopDriver -> ``backend.stop``, Reclaim -> kept for
     the app's agent to pick up once; SetTarget needs nothing (the agent reads the engine's
     target and grant at its next heartbeat);
  6. answer whoever waits on an inbox item (a kill's HTTP request returns once it is done).

Writes go through the store's single writer (group commit). A submission is acknowledged only
after its commit; the in-memory books (``apps``) change only after the commit they mirror, so
whatever a reader sees is on disk.

Restart (``start``): ACCEPTED apps go back to the engine in submission order (same ids, same
positions); STARTING/RUNNING apps are adopted (``backend.adopt``) and never relaunched — an app
whose launch was decided but whose handle was never recorded is failed rather than launched a
second time.
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
    Adopted,
    CapacityChanged,
    Decision,
    DemandChanged,
    DriverExited,
    DriverStarted,
    Event,
    ExecutorsChanged,
    KillRequested,
    LaunchDriver,
    MarkState,
    PriorityChanged,
    QueuesChanged,
    Reclaim,
    StopDriver,
    Submitted,
)
from ..engine.scheduler import Scheduler
from ..model import AppState, Executor, Resources
from ..store import AppKind, EventRecord, Store, StoredApp, Writer
from . import plans
from .books import AgentState, ClusterHealth
from .launch import build_launch
from .metrics import ServiceMetrics, count_states

log = logging.getLogger("sessionsched.service")
audit = logging.getLogger("sessionsched.audit")

COMMIT_TIMEOUT_S = 30.0
CAPACITY_EVERY_S = 2.0  # re-read the cluster's capacity at least this often


class NotFound(LookupError):
    """No such app. ``str()`` is the message for the caller."""


class Conflict(Exception):
    """The app is in a state that does not allow the request (e.g. it has ended)."""


@dataclass
class _Item:
    event: Event
    done: Future | None = None


class Service:
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
        self.state_dir = Path(config.server.state_dir).resolve()
        self.log_dir = self.state_dir / "logs"
        self.heartbeat_s = config.server.heartbeat_s
        self.store = Store(config.database_url())
        self.writer = Writer(self.store)
        self.lock = threading.RLock()
        self.engine = Scheduler(config.queue_tree(), Resources(), config.cluster.driver_slots)
        self.apps: dict[str, StoredApp] = {}
        self.by_spark_id: dict[str, str] = {}
        self.agents: dict[str, AgentState] = {}
        self.health = ClusterHealth()
        self.plan: int | None = None
        self.metrics = ServiceMetrics(self._metrics_snapshot)
        self.last_cycle_at: float | None = None
        self._inbox: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._next_seq = 1
        self._why: dict[str, str] = {}  # app -> reason for its next terminal state
        self._killers: dict[str, str] = {}  # app -> who asked for the kill
        self._adopt_retry: dict[str, Handle] = {}
        self._session_since: dict[str, float] = {}  # restored sessions: restart time
        self._sessions: set[str] = set()  # notebook sessions not yet ended
        self._capacity_read_at = -1e18
        self._cycle_lock = threading.Lock()
        self._scheduler = BackgroundScheduler(daemon=True)

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self, run_cycles: bool = True) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.writer.start()
        self._restore()
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
        with self._cycle_lock:  # a cycle run by hand (tests) finishes first
            pass
        self.writer.stop()
        try:
            self.backend.close()
        finally:
            self.store.close()

    def _restore(self) -> None:
        self._next_seq = self.store.max_seq() + 1
        now = self.clock()
        failed: list[tuple[StoredApp, str]] = []
        adopted: list[str] = []
        for app in self.store.load_apps():
            self.apps[app.id] = app
            if app.spark_app_id:
                self.by_spark_id[app.spark_app_id] = app.id
            if app.kind == AppKind.SESSION and not app.state.terminal:
                self._sessions.add(app.id)
            if app.state is AppState.ACCEPTED:
                self._put(Submitted(replace(app.spec, priority=app.priority)))
            elif app.state.admitted:
                if app.kind == AppKind.SESSION:
                    self._session_since[app.id] = now
                elif not app.handle:
                    failed.append((app, "its launch was decided before a restart but never "
                                        "recorded; not relaunched, so that no driver runs twice"))
                    continue
                else:
                    handle = Handle(**app.handle)
                    try:
                        alive = self.backend.adopt(handle)
                    except BackendError as e:
                        log.warning("cannot check %s's driver now (%s); will retry", app.id, e)
                        self._adopt_retry[app.id] = handle
                        alive = True
                    if not alive:
                        failed.append((app, "its driver was gone when the scheduler restarted"))
                        continue
                adopted.append(app.id)
                self._put(Adopted(
                    spec=replace(app.spec, priority=app.priority), state=app.state,
                    priority=app.priority, launched_at=app.started_at or app.submitted_at,
                    first_executor_at=app.first_executor_at,
                ))
        rows = [EventRecord(i, now, "adopted", "re-adopted after a scheduler restart")
                for i in adopted]
        changes = []
        for app, why in failed:
            changes.append({"id": app.id, "state": AppState.FAILED, "reason": why,
                            "finished_at": now})
            rows.append(EventRecord(app.id, now, "state", f"{app.state.value} -> FAILED: {why}"))

        def after(_):
            for app, why in failed:
                app.state, app.reason, app.finished_at = AppState.FAILED, why, now

        if changes or rows:
            self._write(changes, rows, after).result(COMMIT_TIMEOUT_S)
        if adopted or failed:
            log.info("restart: %d driver(s) adopted, %d failed", len(adopted), len(failed))

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
        plan = self.config.plans[index]
        self.plan = index
        self._put(QueuesChanged(self.config.queue_tree(plan)))
        log.info("queue %s applied", plans.describe(plan))

    # --- operations (thread-safe; called by the HTTP layer) -----------------------------------

    def submit(self, app: StoredApp, sender: str) -> Future:
        """Store a checked submission; the future resolves to the stored app once committed."""

        def insert(session) -> StoredApp:
            now = self.clock()
            seq = self._next_seq
            self._next_seq += 1
            stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
            app_id = f"driver-{stamp}-{seq:04d}"
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
                    self._sessions.add(stored.id)
            self._put(Submitted(stored.spec))
            self.metrics.submissions.labels(stored.kind).inc()
            spec = stored.spec
            reserve = spec.min_executors * spec.executor.cores
            cap = spec.executor_cap
            limit = "unlimited" if cap is None else str(cap * spec.executor.cores)
            audit.info("Registering app %s from sender %s, reserve:%d, priority:%d, limit:%s",
                       stored.name, stored.sender or "unknown", reserve, stored.priority, limit)
            for w in stored.warnings:
                audit.warning("%s: %s", stored.id, w)

        return self.writer.submit(insert, after)

    def set_priority(self, app_id: str, priority: int, actor: str = "Admin") -> Future:
        """Change an app's priority; resolves once the engine has re-ordered its queue."""
        self._live_app(app_id)
        done: Future = Future()

        def write(session) -> int:
            app = self.apps[app_id]
            if app.state.terminal:
                raise Conflict(f"{app_id} has ended ({app.state.value}); its priority is final")
            old = app.priority
            self.store.update_apps(session, [{"id": app_id, "priority": priority}])
            self.store.add_events(session, [EventRecord(
                app_id, self.clock(), "priority",
                f"{actor} updated the priority from {old} to {priority}")])
            return old

        def after(old: int) -> None:
            with self.lock:
                self.apps[app_id].priority = priority
            audit.info("%s updated the priority of %s from %d to %d", actor, app_id, old, priority)
            self._put(PriorityChanged(app_id, priority), done)

        _chain(self.writer.submit(write, after), done)
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
        """A notebook ended its session: its driver is gone with this exit code."""
        app = self._live_app(app_id)
        if app.kind != AppKind.SESSION:
            raise Conflict(f"{app_id} is not a notebook session (kind {app.kind})")
        done: Future = Future()
        if app.state is AppState.ACCEPTED:  # gave up waiting: nothing ran
            with self.lock:
                self._killers[app_id] = "its notebook"
            self._put(KillRequested(app_id), done)
        else:
            with self.lock:
                self._why[app_id] = f"session stopped by its notebook (exit code {exit_code})"
            self._put(DriverExited(app_id, exit_code), done)
        return done

    def _live_app(self, app_id: str) -> StoredApp:
        with self.lock:
            app = self.apps.get(app_id)
            if app is None:
                raise NotFound(f"no app {app_id!r}")
            if app.state.terminal:
                raise Conflict(f"{app_id} has already ended ({app.state.value})")
            return app

    # --- the agent protocol ---------------------------------------------------------------------

    def agent_register(self, app_id: str, spark_app_id: str | None, control: str,
                       reason: str | None, pid: int | None, spark_version: str | None) -> dict:
        now = self.clock()
        with self.lock:
            app = self._agent_app(app_id)
            agent = self.agents.setdefault(app_id, AgentState(seen_at=now))
            agent.seen_at = now
            agent.control, agent.reason, agent.pid = control, reason, pid
            agent.spark_version = spark_version
            reply = self._agent_reply(app, agent)
            agent.orders = []
        if spark_app_id:
            self._put(DriverStarted(app_id, spark_app_id))
        detail = f"agent registered: control {control}, pid {pid}, Spark {spark_version}"
        if control != "full":
            detail += f" ({reason or 'no reason given'})"
            log.warning("%s: agent has %s control: %s", app_id, control, reason)
        self.writer.submit(lambda s: self.store.add_events(
            s, [EventRecord(app_id, now, "agent", detail)]))
        return reply

    def agent_heartbeat(self, app_id: str, demand: int, executors: list[Executor],
                        control: str | None) -> dict:
        now = self.clock()
        events: list[Event] = []
        with self.lock:
            app = self._agent_app(app_id)
            agent = self.agents.setdefault(app_id, AgentState(seen_at=now))
            agent.seen_at = now
            if control:
                agent.control = control
            seen = tuple((e.executor_id, e.idle) for e in executors)
            if seen != agent.executors:
                agent.executors = seen
                events.append(ExecutorsChanged(app_id, tuple(executors)))
            if demand != agent.demand:
                agent.demand = demand
                events.append(DemandChanged(app_id, demand))
            reply = self._agent_reply(app, agent)
            agent.orders = []
        for ev in events:
            self._put(ev)
        return reply

    def _agent_app(self, app_id: str) -> StoredApp:
        app = self.apps.get(app_id)
        if app is None:
            raise NotFound(f"no app {app_id!r}: the agent should stop reporting")
        return app

    def _agent_reply(self, app: StoredApp, agent: AgentState) -> dict:
        rec = self.engine.apps.get(app.id)
        return {
            "heartbeat_s": self.heartbeat_s,
            "target": rec.target if rec else 0,
            "grant": rec.grant if rec else 0,
            "state": app.state.value,
            "reclaim": [
                {"executor_ids": list(o.executor_ids), "mode": o.mode.value,
                 "deadline": o.deadline}
                for o in agent.orders
            ],
        }

    # --- the cycle ----------------------------------------------------------------------------

    def cycle(self) -> None:
        """One scheduling cycle (see the module doc). Never raises: a failure is logged and
        reported to whoever waits on this cycle's inbox items."""
        with self._cycle_lock:
            started = time.perf_counter()
            items = self._drain()
            error: BaseException | None = None
            try:
                self._cycle(items)
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

    def _cycle(self, items: list[_Item]) -> None:
        now = self.clock()
        events = [i.event for i in items]
        events += self._observe(now)
        events += self._housekeeping(now)
        with self.lock:
            events = self._known(events)
            decisions = self.engine.step(now, events)
            changes, rows = self._record(now, events, decisions)
            for d in decisions:
                if isinstance(d, Reclaim):
                    self.agents.setdefault(d.app_id, AgentState(seen_at=0.0)).orders.append(d)
        try:
            self._write(changes, rows, self._apply_changes(changes)).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - nothing may be launched that is not recorded
            log.error("could not record the cycle's decisions (%s); launches are held back", e)
            for d in decisions:
                if isinstance(d, LaunchDriver):
                    self._fail_launch(d.app_id, f"could not record the launch: {e}")
            return
        self._carry_out(now, decisions)

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
        """The backend's news, reconciled with the agents', plus capacity when due."""
        try:
            polled = self.backend.poll(now)
            capacity = next((e for e in polled if isinstance(e, CapacityChanged)), None)
            if capacity is None and (not self.health.reachable
                                     or now - self._capacity_read_at >= CAPACITY_EVERY_S):
                cores_mem, slots = self.backend.capacity()
                polled.append(CapacityChanged(cores_mem, slots))
                self._capacity_read_at = now
            elif capacity is not None:
                self._capacity_read_at = now
        except BackendError as e:
            if self.health.reachable is not False:
                log.warning("cluster unreachable: %s; submissions are queued until it is back", e)
                self.health = ClusterHealth(False, str(e), now)
                # Nothing is admitted while the cluster cannot be reached.
                return [CapacityChanged(Resources(), 0)]
            self.health.message = str(e)
            return []
        if self.health.reachable is not True:
            if self.health.reachable is False:
                log.info("cluster reachable again")
            self.health = ClusterHealth(True, "", now)
        out: list[Event] = []
        with self.lock:
            for ev in polled:
                if isinstance(ev, ExecutorsChanged):
                    agent = self.agents.get(ev.app_id)
                    if agent is not None and agent.executors is not None and agent.live(
                            now, self.heartbeat_s):
                        continue  # a live agent speaks for its app's executors
                    if agent is None or agent.executors is None:
                        # No agent reports demand: the app is taken to want what it holds.
                        out.append(ev)
                        out.append(DemandChanged(ev.app_id, len(ev.executors)))
                        continue
                out.append(ev)
        return out

    def _housekeeping(self, now: float) -> list[Event]:
        """Adoptions to retry after a backend outage; notebook sessions gone silent."""
        events: list[Event] = []
        for app_id, handle in list(self._adopt_retry.items()):
            try:
                alive = self.backend.adopt(handle)
            except BackendError:
                continue
            del self._adopt_retry[app_id]
            if not alive:
                self._why[app_id] = "its driver was gone when the scheduler restarted"
                events.append(DriverExited(app_id, -1))
        limit = self.config.server.session_timeout
        with self.lock:
            for app_id in list(self._sessions):
                app = self.apps[app_id]
                if app.state.terminal:
                    self._sessions.discard(app_id)
                    continue
                if app.state is AppState.ACCEPTED:
                    continue
                agent = self.agents.get(app_id)
                last = max(agent.seen_at if agent else 0.0, app.started_at or 0.0,
                           self._session_since.get(app_id, 0.0))
                if now - last > limit and app_id not in self._why:
                    self._why[app_id] = f"session silent for over {limit:g}s: its notebook is gone"
                    events.append(DriverExited(app_id, -1))
        return events

    def _known(self, events: list[Event]) -> list[Event]:
        """Drop events about apps the engine does not know (it refuses them)."""
        known = self.engine.apps
        fresh: set[str] = set()
        out = []
        for ev in events:
            if isinstance(ev, Submitted | Adopted):
                fresh.add(ev.spec.app_id)
                out.append(ev)
                continue
            app_id = getattr(ev, "app_id", None)
            if app_id is not None and app_id not in known and app_id not in fresh:
                log.debug("dropping %s for an app not on the books", type(ev).__name__)
                continue
            out.append(ev)
        return out

    def _record(self, now: float, events: list[Event], decisions: list[Decision]):
        """Store changes and audit rows for this step: (changes by app, event rows)."""
        changes: dict[str, dict] = {}
        rows: list[EventRecord] = []
        for ev in events:
            if isinstance(ev, DriverStarted) and ev.spark_app_id:
                app = self.apps.get(ev.app_id)
                if app is not None and app.spark_app_id != ev.spark_app_id:
                    changes.setdefault(ev.app_id, {})["spark_app_id"] = ev.spark_app_id
                    rows.append(EventRecord(ev.app_id, now, "driver",
                                            f"Spark application id {ev.spark_app_id}"))
            elif isinstance(ev, DriverExited):
                changes.setdefault(ev.app_id, {})["exit_code"] = ev.exit_code
                rows.append(EventRecord(ev.app_id, now, "exit",
                                        f"driver exited with code {ev.exit_code}"))
            elif isinstance(ev, KillRequested):
                who = self._killers.pop(ev.app_id, "Admin")
                rows.append(EventRecord(ev.app_id, now, "kill", f"kill requested by {who}"))
        for d in decisions:
            if not isinstance(d, MarkState):
                continue
            rec = self.engine.apps[d.app_id]
            change = changes.setdefault(d.app_id, {})
            old = change.get("state", self.apps[d.app_id].state)
            reason = d.reason
            if d.state.terminal and d.app_id in self._why:
                reason = self._why.pop(d.app_id)
            change.update(state=d.state, reason=reason)
            if d.state is AppState.STARTING:
                change["started_at"] = rec.launched_at
            elif d.state is AppState.RUNNING:
                change["first_executor_at"] = rec.first_executor_at
            elif d.state.terminal:
                change["finished_at"] = rec.finished_at
                change["exit_code"] = rec.exit_code
            rows.append(EventRecord(d.app_id, now, "state",
                                    f"{old.value} -> {d.state.value}: {reason}"))
        return changes, rows

    def _apply_changes(self, changes: dict[str, dict]) -> Callable[[object], None]:
        def after(_):
            with self.lock:
                for app_id, change in changes.items():
                    app = self.apps[app_id]
                    for key, value in change.items():
                        setattr(app, key, value)
                    if change.get("spark_app_id"):
                        self.by_spark_id[change["spark_app_id"]] = app_id
                    if app.state.terminal:
                        self._session_since.pop(app_id, None)
                        agent = self.agents.get(app_id)
                        if agent is not None:
                            agent.orders = []
        return after

    def _write(self, changes: dict[str, dict] | list[dict], rows: list[EventRecord],
               after: Callable | None = None) -> Future:
        if isinstance(changes, dict):
            changes = [{"id": k, **v} for k, v in changes.items()]

        def job(session) -> None:
            self.store.update_apps(session, changes)
            self.store.add_events(session, rows)

        return self.writer.submit(job, after)

    def _carry_out(self, now: float, decisions: list[Decision]) -> None:
        handles: list[tuple[str, Handle]] = []
        for d in decisions:
            if isinstance(d, LaunchDriver):
                handle = self._launch(d.app_id)
                if handle is not None:
                    handles.append((d.app_id, handle))
            elif isinstance(d, StopDriver):
                self._stop(d.app_id)
        if not handles:
            return
        changes = [{"id": app_id, "handle": _handle_json(h)} for app_id, h in handles]
        rows = [EventRecord(app_id, now, "launch", f"driver launched ({h.kind} {h.ref})")
                for app_id, h in handles]

        def after(_):
            with self.lock:
                for app_id, h in handles:
                    self.apps[app_id].handle = _handle_json(h)

        try:
            self._write(changes, rows, after).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            # The drivers run; a restart would fail them rather than launch them again.
            log.error("could not record launch handles: %s", e)

    def _launch(self, app_id: str) -> Handle | None:
        with self.lock:
            app = replace(self.apps[app_id])
        if app.kind == AppKind.SESSION:
            self.metrics.launches.labels("session").inc()
            return None  # the notebook, polling its app, sees STARTING and starts its driver
        try:
            queue = self.engine.queue(app.queue)
            ceiling = self.engine.capacity.cores // max(app.spec.executor.cores, 1)
            launch = build_launch(app, self.url, self.log_dir,
                                  reclaim_timeout_s=queue.reclaim_timeout_s,
                                  max_executors=ceiling or None)
            handle = self.backend.launch(launch)
        except (BackendError, OSError, ValueError) as e:
            log.error("launch of %s failed: %s", app_id, e)
            self.metrics.launches.labels("failed").inc()
            self._fail_launch(app_id, f"launch failed: {e}")
            return None
        self.metrics.launches.labels("ok").inc()
        if launch.log_path:
            with self.lock:
                self.apps[app_id].log_path = launch.log_path
        return handle

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
        except BackendError as e:
            log.error("could not stop %s's driver: %s", app_id, e)

    # --- reads ------------------------------------------------------------------------------------

    def resolve(self, any_id: str) -> tuple[str, bool] | None:
        """(our app id, given as a Spark application id?) for a driver id or a Spark app id."""
        with self.lock:
            if any_id in self.apps:
                return any_id, False
            app_id = self.by_spark_id.get(any_id)
            return (app_id, True) if app_id else None

    def snapshot(self, app_id: str) -> dict | None:
        """One app as the views need it, read consistently under the lock."""
        with self.lock:
            app = self.apps.get(app_id)
            if app is None:
                return None
            return self._snapshot(app)

    def _snapshot(self, app: StoredApp) -> dict:
        rec = self.engine.apps.get(app.id)
        position = None
        reason = app.reason
        if app.state is AppState.ACCEPTED:
            if rec is not None and rec.state is not AppState.ACCEPTED:
                reason = rec.reason  # decided this cycle, being recorded
            else:
                position = self.engine.position(app.id) if rec is not None else None
                reason = self._waiting_reason(app.queue, position)
        return {
            "app": app,
            "executors": rec.held if rec else 0,
            "target": rec.target if rec else 0,
            "demand": rec.demand if rec else 0,
            "position": position,
            "reason": reason,
        }

    def _waiting_reason(self, queue_name: str, position: int | None) -> str:
        if self.health.reachable is False:
            return self.health.describe()
        if position is None:
            return "accepted; joins its queue at the next scheduling cycle"
        why = self.engine.waiting.get(queue_name)
        if position == 1:
            return why or "next to start"
        ahead = f"{position - 1} app(s) ahead in {queue_name}"
        return f"{ahead}; {why}" if why else ahead

    def snapshots(self, queue_name: str | None = None,
                  state: AppState | None = None) -> list[dict]:
        """Queued apps in queue order first (leaf queues in tree order), then the rest by
        submission."""
        with self.lock:
            out: list[dict] = []
            listed: set[str] = set()
            for leaf in self.engine.root.leaves():
                if queue_name not in (None, leaf.name):
                    continue
                if state not in (None, AppState.ACCEPTED):
                    continue
                for app_id in self.engine.pending(leaf.name):
                    listed.add(app_id)
                    out.append(self._snapshot(self.apps[app_id]))
            rest = sorted(
                (a for a in self.apps.values()
                 if a.id not in listed and queue_name in (None, a.queue)
                 and state in (None, a.state)),
                key=lambda a: a.seq,
            )
            out.extend(self._snapshot(a) for a in rest)
            return out

    def queue_rows(self) -> list[dict]:
        with self.lock:
            usage = self.engine.usage()
            rows = []
            for q in self.engine.root.walk():
                u = usage.get(q.name)
                waiting = self.engine.waiting.get(q.name) if q.is_leaf else None
                if self.health.reachable is False and u is not None and u.pending:
                    waiting = self.health.describe()
                rows.append({"queue": q, "usage": u, "waiting": waiting})
            return rows

    def events(self, app_id: str) -> list[EventRecord]:
        if self.snapshot(app_id) is None:
            raise NotFound(f"no app {app_id!r}")
        return self.store.events(app_id)

    def log_tail(self, app_id: str, lines: int) -> str:
        with self.lock:
            app = self.apps.get(app_id)
            if app is None:
                raise NotFound(f"no app {app_id!r}")
            path = app.log_path
        if not path:
            raise NotFound(f"{app_id} has no driver log here (kind {app.kind}, state "
                           f"{app.state.value})")
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 256 * 1024))
                text = f.read().decode("utf-8", "replace")
        except OSError as e:
            raise NotFound(f"driver log of {app_id} cannot be read: {e.strerror}") from None
        return "\n".join(text.splitlines()[-lines:]) + "\n" if lines > 0 else ""

    def health_row(self) -> dict:
        with self.lock:
            plan = self.config.plans[self.plan] if self.plan is not None else None
            return {
                "status": "ok" if self.health.reachable else "degraded",
                "cluster_reachable": self.health.reachable,
                "cluster": self.health.describe(),
                "plan": plans.describe(plan) if plan else None,
                "apps": len(self.apps),
                "last_cycle_at": self.last_cycle_at,
            }

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


def _chain(first: Future, done: Future) -> None:
    """Fail ``done`` if ``first`` fails (``first``'s success path resolves ``done`` itself)."""

    def relay(f: Future) -> None:
        if f.exception() is not None and not done.done():
            done.set_exception(f.exception())

    first.add_done_callback(relay)
