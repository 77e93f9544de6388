"""The scheduling cycle, run by APScheduler every ``server.cycle_ms`` (see ``service``).

  1. drain the inbox (submissions, priority changes, kills, agent reports), at most the
     engine's event slice (``engine.budget``): the rest waits, in order, for the next cycle;
  2. observe the cluster (``watch``) and reconcile executor counts with the agents' reports
     (``AgentDesk.reconcile``: a live agent speaks for its app, else the cluster's view does);
     sessions gone silent, adoptions to check again, ended apps beyond retention (``Forget``);
  3. ``Scheduler.step(now, events) -> decisions``;
  4. record (``recording``): every state change, kill, exit code and Spark app id is written
     to the store and committed *before* any driver is launched or stopped, so a crash can
     never leave a launched driver the store does not know was launched. A commit that fails
     (the store is full or down) is rewound (``rewind``): the engine goes back to the last
     committed cycle, the step's news is stepped again next cycle and its kills are answered
     with the fault; cycles then try again after a back-off (at most ``RETRY_MAX_S``). A
     commit still in doubt after ``COMMIT_TIMEOUT_S`` is waited for: nothing is stepped on
     top of it;
  5. publish the engine's new view (``ReadModel.publish``) and hand the agents their targets
     and reclaim orders (``AgentDesk.take``): readers only ever see committed cycles;
  6. carry out, as the simulator does (``backends.carry.carry_out``): StopDriver ->
     ``backend.stop``, LaunchDriver -> ``backend.launch`` of ``build_launch(app)`` (sessions:
     nothing, the waiting notebook sees STARTING and starts its own driver), SetTarget and
     Reclaim -> ``backend.steer`` (the memory cluster's drivers; real drivers' agents read
     them from the desk); launch handles are recorded so a restart can adopt the drivers (those
     a failed write missed, with the next ones). That write is not waited for (the drivers
     run already; the writer commits in order, so it is on disk before the next cycle's
     commit): the next cycle checks how it went. A launch that fails for a transient reason
     waits in ``carry.Retries`` and is tried again with back-off, still STARTING; the wait is
     on disk (``launch_wait``, a restart resumes it) and cleared on disk before each new
     try (a crash during a try is then an unrecorded launch: never tried a second time);
  7. answer whoever waits on an inbox item (a kill's HTTP request returns once it is done).

Each cycle's phases are timed (``PHASES``; wall and the cycle thread's CPU time, in
``Cycle.last_phases``; wall in the ``sessionsched_cycle_phase_seconds`` histogram), so a slow
cycle says where its time went.

Only this thread steps the engine or reads its books; everyone else reads published views.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

from sessionsched import gcpace
from sessionsched.backends.base import ClusterBackend, Handle, Launch
from sessionsched.backends.carry import LaunchRetry, Retries, Waiting, carry_out, one_line
from sessionsched.engine.events import (
    Decision,
    DriverExited,
    DriverStarted,
    Event,
    Forget,
    KillRequested,
    LaunchDriver,
    MarkState,
    StopDriver,
)
from sessionsched.engine.scheduler import Scheduler
from sessionsched.engine.validate import EventError
from sessionsched.service.agents import AgentDesk
from sessionsched.service.inbox import Inbox, Item
from sessionsched.service.launch import build_launch
from sessionsched.service.metrics import ServiceMetrics
from sessionsched.service.reads import ReadModel
from sessionsched.service.recording import record_step
from sessionsched.service.registry import AcceptedApps
from sessionsched.service.retention import Retention
from sessionsched.service.rewind import rewind
from sessionsched.service.sessions import SessionWatch
from sessionsched.service.watch import ClusterWatch
from sessionsched.store import AppKind, EventRecord

log = logging.getLogger("sessionsched.service")

PHASES = (
    "gather",  # 1-2: the inbox, the cluster's news, sessions, retention
    "step",  # 3: Scheduler.step
    "record",  # 4: what changed, sent to the store's writer
    "commit",  # 4: waiting for that commit
    "publish",  # 5: the new view, the agents' desk
    "carry_out",  # 6: stops, launches, steering; launch handles recorded
    "gc",  # gcpace.between_cycles
)
COMMIT_TIMEOUT_S = 30.0
RETRY_MAX_S = 5.0  # after failed commits, cycles try again at most this far apart

Write = Callable[[list[dict], list[EventRecord]], Future]


@dataclass
class Parts:
    """What a cycle works with (all built by ``Service``)."""

    engine: Scheduler
    inbox: Inbox
    watch: ClusterWatch
    desk: AgentDesk
    sessions: SessionWatch
    retention: Retention
    registry: AcceptedApps
    reads: ReadModel
    write: Write  # column changes and audit rows, in one commit
    metrics: ServiceMetrics
    clock: Callable[[], float]
    url: str  # the server, as drivers' agents reach it
    log_dir: Path
    secret: Callable[[str], str | None] = lambda _app_id: None  # the app's agent secret
    agent_ca: str | None = None  # server.tls.ca: what drivers' agents verify the server with
    cycle_s: float = 0.2  # how often the cycle runs
    fault: Callable[..., None] | None = None  # the tests' fault hook (``faulthook``)
    launch_retry: LaunchRetry = LaunchRetry()  # transient launch failures (``carry``)


@dataclass
class _Step:
    """A stepped cycle whose commit was sent: what carrying it on (or back) needs."""

    now: float
    items: list[Item]
    events: list[Event]  # the events the engine took
    decisions: list[Decision]
    unbooked: list[str]
    committed: Future  # the commit of what the step changed


class _Laps:
    """Wall and thread CPU seconds per phase of one cycle: ``lap(phase)`` charges the time
    since the last lap to ``phase``."""

    def __init__(self) -> None:
        self.times: dict[str, tuple[float, float]] = {}
        self._at = (time.perf_counter(), time.thread_time())

    def lap(self, phase: str) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        was_wall, was_cpu = self.times.get(phase, (0.0, 0.0))
        self.times[phase] = (was_wall + wall - self._at[0], was_cpu + cpu - self._at[1])
        self._at = (wall, cpu)


class Cycle:
    def __init__(self, parts: Parts):
        self.p = parts
        self._laps = _Laps()
        self.last_phases: dict[str, tuple[float, float]] = {}  # the last full cycle's (PHASES)
        self._redo: list[Item] = []  # a rewound step's news, stepped again first
        self._unsettled: _Step | None = None  # a step whose commit is still in doubt
        self._failures = 0  # commits failed in a row
        self._retry_at = float("-inf")
        self._unrecorded: list[tuple[str, Handle, str | None]] = []  # launch handles to write
        self._recording: _Recording | None = None  # the last launch handles sent, in flight
        self._retries = Retries(parts.launch_retry)  # launches to try again

    @property
    def backend(self) -> ClusterBackend:
        return self.p.watch.backend

    def resume(self, waiting: dict[str, Waiting]) -> None:
        """Launches that waited to be tried again before a restart (``restore``)."""
        for app_id, wait in waiting.items():
            self._retries.resume(app_id, wait)

    def run(self) -> None:
        """One scheduling cycle (see the module doc). Never raises: a failure is logged and
        reported to whoever waits on this cycle's inbox items."""
        started = time.perf_counter()
        self._laps = laps = _Laps()
        if self._unsettled is not None:
            step, self._unsettled = self._unsettled, None
            if not step.committed.done():
                self._unsettled = step  # nothing is stepped on top of a commit in doubt
                return
            self._settle(step)
            return
        if self.p.clock() < self._retry_at:
            return  # the store failed the last commit: wait a little before trying again
        items, self._redo = self._redo + self.p.inbox.drain(self.p.engine.budget.events), []
        try:
            step = self._prepare(items)
        except Exception as e:  # noqa: BLE001 - the loop must go on
            log.exception("scheduling cycle failed")
            _answer(items, e)
            return
        laps.lap("record")
        try:
            step.committed.result(COMMIT_TIMEOUT_S)
        except FutureTimeout:
            # Neither committed nor failed yet (the writer settles a commit in doubt once the
            # store answers): wait for its outcome, without stepping on top of it.
            log.error("the cycle's commit is not confirmed after %gs; cycles wait for it",
                      COMMIT_TIMEOUT_S)
            self._unsettled = step
            return
        except Exception:  # noqa: BLE001, S110 - read from the future by ``_settle``
            pass
        laps.lap("commit")
        self._settle(step)
        metrics = self.p.metrics
        metrics.cycle_seconds.observe(time.perf_counter() - started)
        gcpace.between_cycles()  # a long GC pass here, not inside the next cycle
        laps.lap("gc")
        self.last_phases = laps.times
        for phase, (wall, cpu) in laps.times.items():
            metrics.cycle_phase_seconds.labels(phase).observe(wall)
            metrics.cycle_phase_cpu_seconds.labels(phase).observe(cpu)

    def _prepare(self, items: list[Item]) -> _Step:
        """Steps 1-4: gather the news, step the engine, send what changed to the store."""
        p = self.p
        now = p.clock()
        killers = {i.event.app_id: i.note for i in items
                   if i.note is not None and isinstance(i.event, KillRequested)}
        before = p.reads.view
        events = [i.event for i in items]
        events += p.desk.reconcile(p.watch.observe(now), now)
        events += p.watch.retry_adoptions()
        events += p.sessions.silent(now, before, p.desk.last_seen)
        forgets, unbooked = p.retention.due(before.engine)
        events = self._known(events) + forgets
        self._laps.lap("gather")
        decisions, events = self._step(now, events)
        self._laps.lap("step")
        try:
            record = record_step(now, events, decisions, _Before(before), killers)
            committed = p.write(record.rows_for_store(), record.rows)
        except Exception as e:  # noqa: BLE001 - the engine has stepped: it must be put back
            log.exception("could not send the cycle's changes to the store")
            committed = Future()
            committed.set_exception(e)
        return _Step(now, items, events, decisions, unbooked, committed)

    def _settle(self, step: _Step) -> None:
        """The step's commit is done: carry the step on, or put the engine back."""
        error = step.committed.exception()
        if error is not None:
            self._rewind(step, error)
            return
        self._failures = 0
        try:
            self._finish(step)
        except Exception as e:  # noqa: BLE001 - the loop must go on
            log.exception("scheduling cycle failed")
            _answer(step.items, e)
            return
        _answer(step.items, None)

    def _finish(self, step: _Step) -> None:
        """Steps 5-6 of a committed step: publish, then carry out."""
        p = self.p
        now, events, decisions = step.now, step.events, step.decisions
        self._publish(now, events, decisions, step.unbooked)
        self._laps.lap("publish")
        sessions = [(ev.app_id, ev.spark_app_id) for ev in events
                    if isinstance(ev, DriverStarted) and ev.spark_app_id
                    and self._kind(ev.app_id) == AppKind.SESSION]
        for app_id, spark_app_id in sessions:
            # A notebook's driver is not the backend's: tell it the Spark app is ours, so it
            # reports its executors and stops counting them as someone else's usage.
            try:
                self.backend.manage(app_id, spark_app_id)
            except Exception:  # noqa: BLE001 - executors then come from the agent alone
                log.exception("backend could not take %s's executors into account", app_id)
        launches = [d.app_id for d in decisions if isinstance(d, LaunchDriver)]
        if p.fault is not None and launches:
            p.fault("cycle-committed", *launches)
        self._carry_out(now, decisions)
        self._laps.lap("carry_out")

    def _rewind(self, step: _Step, error: BaseException) -> None:
        """The commit failed: nothing of the step was published or carried out. The engine
        goes back to the last committed cycle (``rewind``), the step's news is stepped again
        next cycle, and its requests (kills) are answered with the fault."""
        p = self.p
        back = rewind(p.reads.view, p.engine, p.registry, step.items, step.events)
        p.engine = back.engine
        if back.final:
            p.reads.publish(final={**p.reads.view.final, **back.final})
            p.registry.drop(list(back.final))
        self._redo = [Item(ev) for ev in back.events] + back.redo
        for item in back.refused:
            if item.done is not None and not item.done.done():
                item.done.set_exception(error)
        self._failures += 1
        delay_s = min(RETRY_MAX_S, p.cycle_s * 2 ** (self._failures - 1))
        self._retry_at = step.now + delay_s
        log.error("could not record the cycle's decisions (%s): the engine is put back to the "
                  "last committed cycle, %d request(s) refused, %d item(s) stepped again in "
                  "%.1fs", one_line(error), len(back.refused), len(self._redo), delay_s)

    def _publish(self, now: float, events: list[Event], decisions: list[Decision],
                 unbooked: list[str]) -> None:
        """The committed cycle becomes what everyone reads."""
        p = self.p
        ended = [d.app_id for d in decisions if isinstance(d, MarkState) and d.state.terminal]
        forgotten = unbooked + [ev.app_id for ev in events if isinstance(ev, Forget)]
        p.retention.ended(ended)
        p.retention.forgotten(forgotten)
        p.sessions.ended(ended + forgotten)
        self._retries.drop(ended + forgotten)
        p.desk.take(decisions)
        p.desk.forget(forgotten)
        # Dropped first: the view still showing a forgotten app's facts then falls back to the
        # store (its final record), never to "accepted, not stepped yet".
        p.registry.drop(forgotten)
        view = p.reads.view
        changes: dict = {"engine": p.engine.view(), "health": p.watch.health,
                         "last_cycle_at": now}
        if unbooked:
            changes["final"] = {a: r for a, r in view.final.items() if a not in unbooked}
        p.reads.publish(**changes)
        if forgotten:
            log.debug("forgot %d ended app(s) beyond server.retained_ended_apps", len(forgotten))

    def _known(self, events: list[Event]) -> list[Event]:
        """The events about apps in memory. News of a forgotten app (its driver's exit code
        arriving after it was forgotten, an agent's last word) is dropped here quietly: the
        engine would refuse it as unknown, and its record in the store is final."""
        registry = self.p.registry
        known = [ev for ev in events
                 if (app_id := getattr(ev, "app_id", None)) is None or app_id in registry]
        if len(known) < len(events):
            log.debug("dropped %d event(s) about forgotten apps", len(events) - len(known))
        return known

    def _step(self, now: float, events: list[Event]) -> tuple[list[Decision], list[Event]]:
        """Step the engine: (decisions, the events it took). An event it refuses (it names it
        and changes nothing) is dropped with a warning and the rest stepped again - late facts
        about unknown apps and the like must not hold up everyone else's submissions."""
        while True:
            try:
                return self.p.engine.step(now, events), events
            except EventError as e:
                log.warning("engine refused %s; dropped", e)
                events = events[:e.index] + events[e.index + 1:]

    def _kind(self, app_id: str) -> str | None:
        sub = self.p.registry.get(app_id)
        return sub.kind if sub is not None else None

    # --- carrying out -------------------------------------------------------------------------

    def _carry_out(self, now: float, decisions: list[Decision]) -> None:
        """The decisions, through ``carry.carry_out`` as the simulator does them; then the
        launch handles recorded (a restart adopts those drivers) and failed launches ended."""
        p = self.p
        self._check_recording()
        # A session's driver is its notebook's: nothing to stop here, its agent hears its
        # terminal state at its next heartbeat.
        ours = [d for d in decisions
                if not (isinstance(d, StopDriver) and self._kind(d.app_id) == AppKind.SESSION)]
        carried = carry_out(ours + self._due(now), self.backend, self._launch_for,
                            self._retries, now)
        for app_id, why in carried.failed:
            p.metrics.launches.labels("failed").inc()
            p.inbox.put(DriverExited(app_id, -1, f"launch failed: {why}"))
        for _ in carried.retrying:
            p.metrics.launches.labels("retried").inc()
        for _ in carried.launched:
            p.metrics.launches.labels("ok").inc()
        if p.fault is not None and carried.launched:
            p.fault("launched", *(app_id for app_id, _, _ in carried.launched))
        # Handles a failed write could not record are tried again with the next launches.
        launched, self._unrecorded = self._unrecorded + carried.launched, []
        retried = [EventRecord(app_id, now, "retry", f"launch failed, tried again: {why}")
                   for app_id, why in carried.retrying]
        if not launched and not retried:
            return
        changes = [{"id": app_id, "handle": _handle_json(h), "log_path": log_path}
                   for app_id, h, log_path in launched]
        changes += [{"id": app_id, "launch_wait": self._retries.waiting(app_id).to_json()}
                    for app_id, _ in carried.retrying]
        rows = retried + [EventRecord(app_id, now, "launch", f"driver launched ({h.kind} {h.ref})")
                          for app_id, h, _ in launched]
        self._recording = _Recording(p.write(changes, rows), launched)
        self._recording.committed.add_done_callback(lambda f: self._recorded(f, launched))
        if not carried.retrying:
            # Not waited for: the drivers run already, and the writer commits in order, so
            # this cycle's handles are on disk before anything the next cycle decides. The
            # next cycle looks at how the write went (``_check_recording``).
            return
        # A launch waits for its next try: its wait is on disk before the cycle ends (a
        # restart resumes it, ``launch_wait``).
        if self._check_recording() and p.fault is not None:
            p.fault("launch-waiting", *(app_id for app_id, _ in carried.retrying))

    def _recorded(self, committed: Future, launched: list[tuple[str, Handle, str | None]]
                  ) -> None:
        """A launch-handle write is done: once committed, readers see where each driver's log
        is. Run by the writer's thread as soon as it commits, and again by the next cycle
        (``_check_recording``), which may wake before that callback ran: whichever comes
        first shows it, the other finds nothing to change."""
        if committed.exception() is not None:
            return
        changed = [self.p.registry.launched(app_id, log_path)
                   for app_id, _, log_path in launched]
        if any(changed):
            self.p.reads.publish()

    def _check_recording(self) -> bool:
        """How the last launch-handle write went, waiting for it if it is still in flight
        (it rarely is: the cycle's own commit came after it). True if it committed; if it
        failed, its handles are written again with the next launches (the drivers run; a
        restart before they are recorded fails those apps rather than launch them again)."""
        recording, self._recording = self._recording, None
        if recording is None:
            return True
        try:
            recording.committed.result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            log.error("could not record %d launch handle(s), tried again next cycle: %s",
                      len(recording.launched), one_line(e))
            self._unrecorded = recording.launched + self._unrecorded
            return False
        self._recorded(recording.committed, recording.launched)
        return True

    def _due(self, now: float) -> list[LaunchDriver]:
        """The launches to try again now, their waits first cleared on disk: a crash during
        the try then finds no wait and takes the launch as unrecorded (the driver may run)
        instead of trying it again. If that write fails they wait for a later cycle."""
        due = self._retries.due(now)
        if not due:
            return []
        try:
            self.p.write([{"id": d.app_id, "launch_wait": None} for d in due],
                         []).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            log.error("could not clear %d launch wait(s), tried again next cycle: %s",
                      len(due), one_line(e))
            return []
        return due

    def _launch_for(self, app_id: str) -> Launch | None:
        """What to start for an admitted app (None: a notebook session, which the notebook
        starts itself once it sees STARTING)."""
        p = self.p
        sub = p.registry.get(app_id)
        if sub.kind == AppKind.SESSION:
            p.metrics.launches.labels("session").inc()
            return None
        view = p.reads.view.engine
        # The engine's leaf by name (this thread's to read): a walk of the whole queue tree
        # per launch was a tenth of a cycle that launches 200 drivers.
        queue_conf = p.engine.queue(sub.queue)
        ceiling = view.capacity.cores // max(sub.spec.executor.cores, 1)
        return build_launch(sub, p.url, p.log_dir, token=p.secret(app_id),
                            reclaim_timeout_s=queue_conf.reclaim_timeout_s,
                            max_executors=ceiling or None, ca=p.agent_ca)


@dataclass
class _Recording:
    """Launch handles sent to the store, and the write's future."""

    committed: Future
    launched: list[tuple[str, Handle, str | None]]


class _Before:
    """The apps as the last published view showed them (``recording.Before``): the engine's
    facts of the app, which carry its state and Spark app id. Only an app the engine does
    not hold (not stepped yet, or final) is read whole (``ReadView.app``): building every
    changed app's full answer (its queue position, its reason) cost a launching cycle at
    10,000 apps ~10 ms of CPU for two fields."""

    def __init__(self, view):
        self._view = view
        self._facts = view.engine.apps

    def get(self, app_id: str):
        facts = self._facts.get(app_id)
        return facts if facts is not None else self._view.app(app_id)


def _answer(items: list[Item], error: BaseException | None) -> None:
    """Tell whoever waits on these items how their cycle went."""
    for item in items:
        if item.done is not None and not item.done.done():
            if error is None:
                item.done.set_result(None)
            else:
                item.done.set_exception(error)


def _handle_json(h: Handle) -> dict:
    return {"app_id": h.app_id, "kind": h.kind, "ref": h.ref, "started_at": h.started_at}
