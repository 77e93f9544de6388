"""The scheduling cycle, run by APScheduler every ``server.cycle_ms`` (see ``service``).

  1. drain the inbox (submissions, priority changes, kills, agent reports), at most the
     engine's event slice (``engine.budget``): the rest waits, in order, for the next cycle;
  2. observe the cluster (``watch``) and reconcile executor counts with the agents' reports
     (``AgentDesk.reconcile``: a live agent speaks for its app, else the cluster's view does);
     sessions gone silent, adoptions to check again, ended apps beyond retention (``Forget``);
  3. ``Scheduler.step(now, events) -> decisions``;
  4. record (``recording``): every state change, kill, exit code and Spark app id (and the
     decayed fair-share entries that changed, ``engine.arbitration.decay``) is written to the
     store and committed *before* any driver is launched or stopped, so a crash can
     never leave a launched driver the store does not know was launched. A commit that fails
     (the store is full or down) is rewound (``rewind``): the engine goes back to the last
     committed cycle, the step's news is stepped again next cycle and its kills are answered
     with the fault; cycles then try again after a back-off (at most ``RETRY_MAX_S``). A
     commit still in doubt after ``COMMIT_TIMEOUT_S`` is waited for: nothing is stepped on
     top of it;
  5. hand the committed step's facts to the usage meter's thread (``usage_meter``), publish
     the engine's new view (``ReadModel.publish``) and hand the agents their targets
     and reclaim orders (``AgentDesk.take``): readers only ever see committed cycles;
  6. carry out (``carrying.Carrier``), as the simulator does (``backends.carry.carry_out``):
     stops, launches on the engine's launch terms, steering; launch handles recorded so a
     restart can adopt the drivers; launches that failed for a transient reason tried again
     with back-off;
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

from sessionsched.backends.base import ClusterBackend
from sessionsched.backends.carry import LaunchRetry, Waiting, error_line
from sessionsched.engine.events import (
    Decision,
    DriverStarted,
    Event,
    Forget,
    KillRequested,
    LaunchDriver,
    MarkState,
)
from sessionsched.engine.scheduler import Scheduler
from sessionsched.engine.validate import EventError
from sessionsched.runtime import gc_pacer
from sessionsched.service.agents import AgentDesk
from sessionsched.service.carrying import Carrier
from sessionsched.service.clusters import attempt_of
from sessionsched.service.inbox import Inbox, Item
from sessionsched.service.metrics import ServiceMetrics
from sessionsched.service.reads import ReadModel
from sessionsched.service.recording import record_step
from sessionsched.service.registry import Submissions
from sessionsched.service.restore import decayed_rows
from sessionsched.service.retention import Retention
from sessionsched.service.rewind import rewind
from sessionsched.service.sessions import SessionWatch
from sessionsched.service.usage_meter import MeterThread
from sessionsched.service.watch import ClusterWatch
from sessionsched.store import AppKind, EventRecord
from sessionsched.store.decayed import DecayedRecord

log = logging.getLogger("sessionsched.service")
audit = logging.getLogger("sessionsched.audit")

PHASES = (
    "gather",  # 1-2: the inbox, the cluster's news, sessions, retention
    "step",  # 3: Scheduler.step
    "record",  # 4: what changed, sent to the store's writer
    "commit",  # 4: waiting for that commit
    "publish",  # 5: the new view, the agents' desk
    "carry_out",  # 6: stops, launches, steering; launch handles recorded
    "gc",  # gc_pacer.between_cycles
)
COMMIT_TIMEOUT_S = 30.0
RETRY_MAX_S = 5.0  # after failed commits, cycles try again at most this far apart

Write = Callable[[list[dict], list[EventRecord], list[DecayedRecord]], Future]


@dataclass
class Parts:
    """What a cycle works with (all built by ``Service``)."""

    engine: Scheduler
    inbox: Inbox
    watch: ClusterWatch
    desk: AgentDesk
    sessions: SessionWatch
    retention: Retention
    registry: Submissions
    reads: ReadModel
    write: Write  # column changes, audit rows and decayed usage, in one commit
    metrics: ServiceMetrics
    clock: Callable[[], float]
    url: str  # the server, as drivers' agents reach it
    log_dir: Path
    secret: Callable[[str], str | None] = lambda _app_id: None  # the app's agent secret
    agent_ca: str | None = None  # server.tls.ca: what drivers' agents verify the server with
    cycle_s: float = 0.2  # how often the cycle runs
    fault: Callable[..., None] | None = None  # the tests' fault hook (``faulthook``)
    launch_retry: LaunchRetry = LaunchRetry()  # transient launch failures (``carry``)
    usage: MeterThread | None = None  # counts what apps use (``usage_meter``)


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
        self._carrier = Carrier(parts)  # step 6
        # Agents are checked against the attempt their app's driver runs as (several
        # clusters); the engine is the cycle's, a fresh one after a failed commit.
        parts.desk.attempt_of = lambda app_id: attempt_of(self.p.engine, app_id)

    @property
    def backend(self) -> ClusterBackend:
        return self.p.watch.backend

    def resume(self, waiting: dict[str, Waiting]) -> None:
        """Launches that waited to be tried again before a restart (``restore``)."""
        self._carrier.resume(waiting)

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
        gc_pacer.between_cycles()  # a long GC pass here, not inside the next cycle
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
            committed = p.write(record.rows_for_store(), record.rows,
                                decayed_rows(p.engine.decayed_changes()))
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
        if p.usage is not None:  # counted beside the cycle, on committed steps only
            p.usage.feed(now, events, decisions)
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
        self._carrier.carry_out(now, decisions)
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
                  "%.1fs", error_line(error), len(back.refused), len(self._redo), delay_s)

    def _publish(self, now: float, events: list[Event], decisions: list[Decision],
                 unbooked: list[str]) -> None:
        """The committed cycle becomes what everyone reads."""
        p = self.p
        ended = [d.app_id for d in decisions if isinstance(d, MarkState) and d.state.terminal]
        for d in decisions:
            if isinstance(d, MarkState) and d.expired:
                audit.warning("Scheduler expired %s: %s", d.app_id, d.reason)
        forgotten = unbooked + [ev.app_id for ev in events if isinstance(ev, Forget)]
        p.retention.ended(ended)
        p.retention.forgotten(forgotten)
        p.sessions.ended(ended + forgotten)
        self._carrier.ended(ended + forgotten)
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

