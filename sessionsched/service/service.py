"""The scheduler service: the engine, the store and a cluster backend, wired together.

Composed of small parts, each with one job and a constructor that says what it needs:

- ``Inbox``: what happened between two cycles, as engine events (HTTP handlers, agents);
- ``Cycle``: every ``server.cycle_ms`` (an APScheduler job) steps the engine with the inbox's
  and the cluster's news (``ClusterWatch``), commits what changed, publishes the new view and
  carries out the decisions through the backend; a submission or a new demand wakes one (``Waker``);
- ``ReadModel``: the one frozen ``ReadView`` every reader answers from (``reads``);
- ``AgentDesk``: the driver agents' register/heartbeat, answered without waiting for a cycle;
- ``Submissions`` (what each app was submitted with), ``Retention`` (ended apps kept in
  memory), ``SessionWatch`` (notebooks gone silent); the store, its one ``Writer`` (group commit).

One book per fact: an app's scheduling state (state, priority, times, executors, target) is
the engine's in memory and the store's on disk; the registry holds only what never changes.
A submission is acknowledged only after its commit; a cycle publishes only after its commit,
so whatever a reader sees is on disk. Restart: ``restore``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from sessionsched.backends.base import ClusterBackend
from sessionsched.config import ServerConfig
from sessionsched.engine.events import (
    DriverExited,
    KillRequested,
    PriorityChanged,
    Submitted,
)
from sessionsched.model import AppState
from sessionsched.model.submission import AppKind, Submission
from sessionsched.model.text import one_line
from sessionsched.runtime.host_room import measure as measure_host
from sessionsched.service import faulthook
from sessionsched.service.agents import AgentDesk
from sessionsched.service.clusters import Engine, engine_for, recorded_clusters
from sessionsched.service.cycle import Cycle, Parts
from sessionsched.service.estimating import Estimator, ProgressBook
from sessionsched.service.inbox import Inbox, Waker, stop_cycles
from sessionsched.service.metrics import ServiceMetrics, snapshot
from sessionsched.service.plans import Plans
from sessionsched.service.reads import AppRead, NotFound, ReadModel, ReadView
from sessionsched.service.registry import Submissions
from sessionsched.service.restore import restore, restore_decayed
from sessionsched.service.retention import Retention
from sessionsched.service.sessions import SessionWatch
from sessionsched.service.usage_meter import HourKey, MeterThread, UsageMeter
from sessionsched.service.watch import ClusterWatch
from sessionsched.store import EventRecord, Store, StoredApp, Writer
from sessionsched.store.decayed import DecayedRecord, save_decayed
from sessionsched.store.usage_hours import add_hours

log = logging.getLogger("sessionsched.service")
audit = logging.getLogger("sessionsched.audit")

__all__ = ["Conflict", "NotFound", "Service"]


class Conflict(Exception):
    """The app is in a state that does not allow the request (e.g. it has ended)."""


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
        self.clock = clock
        server = config.server
        self.url = url or f"http://{server.host}:{server.port}"
        self.log_dir = Path(server.state_dir).resolve() / "logs"
        self.store = Store(config.database_url())
        self.writer = Writer(self.store)
        engine = engine_for(config, backend, measure_host().for_drivers)  # one or several
        self._fault = faulthook.from_env()  # the crash tests' hook; None in service
        self.inbox = Inbox()
        self.registry = Submissions()
        self.reads = ReadModel(ReadView(
            version=0, engine=engine.view(), submissions=self.registry, final={},
            master=backend.master or config.cluster_registry()[0].master))
        self.plans = Plans(config, self.reads, self.inbox.put)
        self.usage = UsageMeter(lambda app_id: (a := self.registry.get(app_id)) and a.spec)
        self.metrics = ServiceMetrics(lambda: snapshot(self.reads.view, self.watch.workers),
                                      self.usage)
        self.usage_thread = MeterThread(self.usage, lambda rows, h: self.write(rows, [], hours=h))
        self.estimator = Estimator(self.reads, self.store, clock, server.estimate_default_run_s,
                                   progress=ProgressBook(self.write), config=config)
        self.watch = ClusterWatch(backend, self.estimator.progress)
        self.desk = AgentDesk(self.reads, self.inbox.put, self._note, server.heartbeat_s, clock,
                              server.agent_keepalive_s, self.estimator.progress)
        self.sessions = SessionWatch(server.session_timeout)
        self.retention = Retention(server.retained_ended_apps, self.store)
        self._cycle = Cycle(Parts(
            engine=engine, inbox=self.inbox, watch=self.watch, desk=self.desk,
            sessions=self.sessions, retention=self.retention, registry=self.registry,
            reads=self.reads, write=self.write, metrics=self.metrics, clock=clock,
            # Driver agents report here, else to the peers (whoever leads after a takeover).
            url=",".join([self.url, *server.peers]), log_dir=self.log_dir,
            secret=lambda app_id: self.secret_for(app_id),
            agent_ca=str(Path(server.tls.ca).resolve()) if server.tls and server.tls.ca else None,
            cycle_s=server.cycle_ms / 1000, fault=self._fault, usage=self.usage_thread,
        ))
        # The agent secret a launched driver gets (``auth.Gate.secret_for``; none with auth off).
        self.secret_for: Callable[[str], str | None] = lambda _app_id: None
        self._cycle_lock = threading.Lock()
        self._scheduler = BackgroundScheduler(daemon=True)
        self.inbox.waker = Waker(self._scheduler, self.cycle, server.cycle_ms / 1000)
        # Among schedulers sharing a PostgreSQL store (``leader.ActiveStandby`` sets them):
        # "single", "leader", "standby" or "taking over", and the leader's URL once known.
        self.role = "single"
        self.leader_url: str | None = None

    @property
    def backend(self) -> ClusterBackend:
        return self.watch.backend

    @property
    def engine(self) -> Engine:
        """The engine (the cycle's: it puts a fresh one in after a failed commit)."""
        return self._cycle.p.engine

    # --- lifecycle ----------------------------------------------------------------------------

    def check_queues(self) -> None:
        """ValueError if the store holds live apps in queues the configuration no longer has:
        they could neither start nor be shown their place, so the server does not start."""
        leaves = {q.name for q in self.config.queue_tree().leaves()}
        if lost := {q: n for q, n in self.store.live_queues().items() if q not in leaves}:
            held = ", ".join(f"{q} ({n} app(s))" for q, n in sorted(lost.items()))
            raise ValueError(f"queues missing from the configuration still hold live apps: "
                             f"{held}; put them back (or kill those apps first)")

    def start(self, run_cycles: bool = True) -> None:
        """Load the books, start writing and cycling (``run_cycles=False``: by the caller)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.writer.start()
        recorded_clusters(self.store, self.engine)  # several clusters: where each app runs
        restored = restore(self.store, self.watch, self.registry, self.retention,
                           self.sessions, lambda c, r, h: self.write(c, r, hours=h).result(60),
                           self.clock())
        restore_decayed(self.store, self.engine)
        self.reads.publish(final=restored.final)
        for app_id, column in restored.usage.items():
            self.usage.restore(app_id, column)
        self.usage_thread.start()
        self._cycle.resume(restored.waiting)
        for event in restored.events:
            self.inbox.put(event)
        self.plans.start(self._scheduler)
        if run_cycles:
            # The restored apps enter the engine before the first request is answered: a
            # reader never sees an adopted RUNNING app as waiting.
            self.cycle()
            self._scheduler.add_job(
                self.cycle, IntervalTrigger(seconds=self.config.server.cycle_ms / 1000),
                id="cycle", max_instances=1, coalesce=True, misfire_grace_time=None,
            )
            self.inbox.waker.arm()
            if self.config.server.estimate_s > 0:  # in a process of its own: ``estimating``
                self.estimator.start_process()
                self._scheduler.add_job(
                    self.estimator.refresh, IntervalTrigger(seconds=self.config.server.estimate_s),
                    id="estimate", max_instances=1, coalesce=True, misfire_grace_time=None)
        self._scheduler.start()
        log.info("scheduler service started: %d apps on the books, store %s",
                 len(self.registry) + len(restored.final), self.store.url)

    def stop(self) -> None:
        """Stop cycling and writing. Drivers keep running: they are adopted at the next start."""
        stop_cycles(self._scheduler, self.inbox.waker)
        self.estimator.stop()
        with self._cycle_lock:  # a cycle run by hand finishes first
            self.usage_thread.stop()  # its last writes go before the writer stops
            self.writer.stop()
        try:
            self.backend.close()
        finally:
            self.store.close()

    def cycle(self) -> None:
        """One scheduling cycle (``cycle.Cycle``); never two at once."""
        with self._cycle_lock:
            self._cycle.run()

    # --- reads ------------------------------------------------------------------------------

    @property
    def view(self) -> ReadView:
        return self.reads.view

    @property
    def version(self) -> int:
        """Bumped with every published view: answers cached under an older one are stale."""
        return self.reads.view.version

    def app(self, app_id: str) -> AppRead | None:
        """The app from the current view, else (forgotten: ended) from the store."""
        return self.reads.view.app(app_id) or self.retention.stored(app_id)

    def resolve(self, any_id: str) -> tuple[str, bool] | None:
        """(our app id, given as a Spark application id?) for a driver id or a Spark app id."""
        found = self.reads.view.resolve(any_id)
        if found is not None:
            return found
        if self.retention.stored(any_id) is not None:
            return any_id, False
        app_id = self.retention.spark_app(any_id)
        return (app_id, True) if app_id else None

    def events(self, app_id: str) -> list[EventRecord]:
        if self.app(app_id) is None:
            raise NotFound(f"no app {app_id!r}")
        return self.store.events(app_id)

    def log_tail(self, app_id: str, lines: int) -> str:
        """The last ``lines`` lines of the driver's log (read from its last 256 KiB)."""
        app = self.app(app_id)
        if app is None:
            raise NotFound(f"no app {app_id!r}")
        if not app.log_path:
            raise NotFound(f"{app_id} has no driver log here (kind {app.kind}, state "
                           f"{app.state.value})")
        try:
            with open(app.log_path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 256 * 1024))
                text = f.read().decode("utf-8", "replace")
        except OSError as e:
            raise NotFound(f"driver log of {app_id} cannot be read: {e.strerror}") from None
        tail = text.splitlines()[-lines:] if lines > 0 else []
        return "".join(line + "\n" for line in tail)

    # --- operations (thread-safe; called by the HTTP layer) -----------------------------------

    def submit(self, app: Submission, sender: str) -> Future:
        """Store a checked submission; the future resolves to the stored app once committed.
        The writer gives it its sequence number, id (``driver-YYYYMMDDHHMMSS-NNNN``, NNNN the
        sequence, as a Spark master numbers drivers) and submit time."""

        def insert(session) -> StoredApp:
            now = self.clock()
            seq = self.store.next_seq(session)
            app_id = f"driver-{time.strftime('%Y%m%d%H%M%S', time.localtime(now))}-{seq:04d}"
            spec = replace(app.spec, app_id=app_id, seq=seq, submitted_at=now)
            stored = StoredApp(replace(app, spec=spec, sender=sender))
            self.store.add_apps(session, [stored])
            rows = [EventRecord(app_id, now, "submitted",
                                f"{app.kind} submission by {spec.user} from "
                                f"{sender or 'unknown'} to "
                                f"{spec.queue}, priority {spec.priority}",
                                actor=spec.user, sender=sender, new=str(spec.priority))]
            rows += [EventRecord(app_id, now, "warning", w) for w in app.warnings]
            self.store.add_events(session, rows)
            return stored

        def after(stored: StoredApp) -> None:
            if self._fault is not None:
                self._fault("submit-committed", stored.id)
            self.registry.put(stored.submission)
            if stored.kind == AppKind.SESSION:
                self.sessions.watch(stored.id)
            self.reads.publish()
            self.inbox.put(Submitted(stored.spec))
            self.metrics.submissions.labels(stored.kind).inc()
            spec = stored.spec
            cap = spec.executor_cap
            # One fact, one line: a newline in a name must not forge a line (text.one_line).
            audit.info("Registering app %s from sender %s, reserve:%d, priority:%d, limit:%s",
                       one_line(stored.name), one_line(stored.submission.sender or "unknown"),
                       spec.min_executors * spec.executor.cores, spec.priority,
                       "unlimited" if cap is None else cap * spec.executor.cores)
            audit.info("Registered app %s with ID %s", one_line(stored.name), stored.id)
            for w in stored.submission.warnings:
                audit.warning("%s: %s", stored.id, one_line(w))

        return self.writer.submit(insert, after)

    def set_priority(self, app_id: str, priority: int, actor: str = "Admin",
                     via: str = "", sender: str = "", seen: AppRead | None = None) -> Future:
        """Change an app's priority; resolves once the engine has re-ordered its queue.
        ``actor``: who (with auth off everyone is the admin); ``via``: how, for the trail;
        ``seen``: the app as the caller has just read it (``app``), not read again."""
        seen = self._live_app(app_id, seen)
        done: Future = Future()

        def write(session) -> int:
            # The store is the book the old value comes from: the change lands on what is on
            # disk, whatever the view showed (``Store.set_priority``).
            old = self.store.set_priority(session, app_id, priority, was=seen.priority)
            if old is None:  # ended since it was seen
                stored = self.store.get_app(app_id, session)
                state = stored.state.value if stored is not None else "forgotten"
                raise Conflict(f"{app_id} has already ended ({state})")
            self.store.add_events(session, [EventRecord(
                app_id, self.clock(), "priority",
                f"{actor} updated the priority from {old} to {priority}"
                + (f" ({via})" if via else ""),
                actor=actor, sender=sender or None, old=str(old), new=str(priority))])
            return old

        def after(old: int) -> None:
            audit.warning("%s updated the priority of %s from %d to %d", one_line(actor), app_id,
                          old, priority)
            self.inbox.put(PriorityChanged(app_id, priority), done)

        _fail_with(self.writer.submit(write, after), done)
        return done

    def kill(self, app_id: str, actor: str = "Admin") -> Future:
        """Kill an app; resolves once the kill is recorded and the driver told to stop."""
        self._live_app(app_id)
        done: Future = Future()
        self.inbox.put(KillRequested(app_id), done, note=actor)
        audit.warning("%s requested a kill of %s", one_line(actor), app_id)
        return done

    def stop_session(self, app_id: str, exit_code: int) -> Future:
        """A notebook ended its session: its driver is gone with this exit code (a session
        still queued is withdrawn: KILLED)."""
        app = self._live_app(app_id)
        if app.kind != AppKind.SESSION:
            raise Conflict(f"{app_id} is not a notebook session (kind {app.kind})")
        done: Future = Future()
        if app.state is AppState.ACCEPTED:
            self.inbox.put(KillRequested(app_id), done, note="its notebook")
        else:
            why = f"session stopped by its notebook (exit code {exit_code})"
            self.inbox.put(DriverExited(app_id, exit_code, why), done)
        return done

    def _live_app(self, app_id: str, seen: AppRead | None = None) -> AppRead:
        app = self.app(app_id) if seen is None else seen  # a forgotten one too: ended, say so
        if app is None:
            raise NotFound(f"no app {app_id!r}")
        if app.state.terminal:
            raise Conflict(f"{app_id} has already ended ({app.state.value})")
        return app

    # --- the store ------------------------------------------------------------------------------

    def write(self, changes: list[dict], rows: list[EventRecord],
              decayed: Sequence[DecayedRecord] = (),
              hours: Mapping[HourKey, list[float]] | None = None) -> Future:
        """Column changes (dicts with ``id``), audit rows, decayed fair-share entries and what
        to add to the hourly usage rollup, in one commit of the writer."""

        def job(session) -> None:
            self.store.update_apps(session, changes)
            self.store.add_events(session, rows)
            save_decayed(session, decayed)
            add_hours(session, hours or {})

        return self.writer.submit(job)

    def _note(self, app_id: str, at: float, detail: str) -> None:
        self.writer.submit(lambda s: self.store.add_events(
            s, [EventRecord(app_id, at, "agent", detail)]))


def _fail_with(first: Future, done: Future) -> None:
    """Fail ``done`` if ``first`` fails (``first``'s success path resolves ``done`` itself)."""

    def relay(f: Future) -> None:
        if f.exception() is not None and not done.done():
            done.set_exception(f.exception())

    first.add_done_callback(relay)
