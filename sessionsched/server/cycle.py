"""The scheduling cycle, run by APScheduler every ``server.cycle_ms`` (see ``service``).

  1. drain the inbox (submissions, priority changes, kills, agent reports), at most the
     engine's event slice (``engine.budget``): the rest waits, in order, for the next cycle;
  2. observe the cluster (``watch``) and reconcile executor counts with the agents' reports
     (``AgentDesk.reconcile``: a live agent speaks for its app, else the cluster's view does);
     sessions gone silent, adoptions to check again, ended apps beyond retention (``Forget``);
  3. ``Scheduler.step(now, events) -> decisions``;
  4. record (``recording``): every state change, kill, exit code and Spark app id is written
     to the store and committed *before* any driver is launched or stopped, so a crash can
     never leave a launched driver the store does not know was launched;
  5. publish the engine's new view (``ReadModel.publish``) and hand the agents their targets
     and reclaim orders (``AgentDesk.take``): readers only ever see committed cycles;
  6. carry out, as the simulator does (``backends.carry.carry_out``): StopDriver ->
     ``backend.stop``, LaunchDriver -> ``backend.launch`` of ``build_launch(app)`` (sessions:
     nothing, the waiting notebook sees STARTING and starts its own driver), SetTarget and
     Reclaim -> ``backend.steer`` (the memory cluster's drivers; real drivers' agents read
     them from the desk); launch handles are recorded so a restart can adopt the drivers;
  7. answer whoever waits on an inbox item (a kill's HTTP request returns once it is done).

Only this thread steps the engine or reads its books; everyone else reads published views.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from ..backends.base import ClusterBackend, Handle, Launch
from ..backends.carry import carry_out
from ..engine.events import (
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
from ..engine.scheduler import Scheduler
from ..engine.validate import EventError
from ..store import AppKind, EventRecord
from .agents import AgentDesk
from .inbox import Inbox, Item
from .launch import build_launch
from .metrics import ServiceMetrics
from .reads import ReadModel
from .recording import record_step
from .registry import Submissions
from .retention import Retention
from .sessions import SessionWatch
from .watch import ClusterWatch

log = logging.getLogger("sessionsched.service")

COMMIT_TIMEOUT_S = 30.0

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
    registry: Submissions
    reads: ReadModel
    write: Write  # column changes and audit rows, in one commit
    metrics: ServiceMetrics
    clock: Callable[[], float]
    url: str  # the server, as drivers' agents reach it
    log_dir: Path
    secret: Callable[[str], str | None] = lambda _app_id: None  # the app's agent secret


class Cycle:
    def __init__(self, parts: Parts):
        self.p = parts

    @property
    def backend(self) -> ClusterBackend:
        return self.p.watch.backend

    def run(self) -> None:
        """One scheduling cycle (see the module doc). Never raises: a failure is logged and
        reported to whoever waits on this cycle's inbox items."""
        started = time.perf_counter()
        items = self.p.inbox.drain(self.p.engine.budget.events)
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
        self.p.metrics.cycle_seconds.observe(time.perf_counter() - started)

    def _cycle(self, items: list[Item]) -> None:
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
        decisions, events = self._step(now, events)
        record = record_step(now, events, decisions, _Before(before), killers)
        sessions = [(ev.app_id, ev.spark_app_id) for ev in events
                    if isinstance(ev, DriverStarted) and ev.spark_app_id
                    and self._kind(ev.app_id) == AppKind.SESSION]
        try:
            p.write(record.rows_for_store(), record.rows).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - nothing may be launched that is not recorded
            log.error("could not record the cycle's decisions (%s); launches are held back", e)
            for d in decisions:
                if isinstance(d, LaunchDriver):
                    p.inbox.put(DriverExited(d.app_id, -1, f"could not record the launch: {e}"))
            return
        self._publish(now, events, decisions, unbooked)
        for app_id, spark_app_id in sessions:
            # A notebook's driver is not the backend's: tell it the Spark app is ours, so it
            # reports its executors and stops counting them as someone else's usage.
            try:
                self.backend.manage(app_id, spark_app_id)
            except Exception:  # noqa: BLE001 - executors then come from the agent alone
                log.exception("backend could not take %s's executors into account", app_id)
        self._carry_out(now, decisions)

    def _publish(self, now: float, events: list[Event], decisions: list[Decision],
                 unbooked: list[str]) -> None:
        """The committed cycle becomes what everyone reads."""
        p = self.p
        ended = [d.app_id for d in decisions if isinstance(d, MarkState) and d.state.terminal]
        forgotten = unbooked + [ev.app_id for ev in events if isinstance(ev, Forget)]
        p.retention.ended(ended)
        p.retention.forgotten(forgotten)
        p.sessions.ended(ended + forgotten)
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
        # A session's driver is its notebook's: nothing to stop here, its agent hears its
        # terminal state at its next heartbeat.
        ours = [d for d in decisions
                if not (isinstance(d, StopDriver) and self._kind(d.app_id) == AppKind.SESSION)]
        carried = carry_out(ours, self.backend, self._launch_for)
        for app_id, why in carried.failed:
            p.metrics.launches.labels("failed").inc()
            p.inbox.put(DriverExited(app_id, -1, f"launch failed: {why}"))
        launched = carried.launched
        for _ in launched:
            p.metrics.launches.labels("ok").inc()
        if not launched:
            return
        changes = [{"id": app_id, "handle": _handle_json(h), "log_path": log_path}
                   for app_id, h, log_path in launched]
        rows = [EventRecord(app_id, now, "launch", f"driver launched ({h.kind} {h.ref})")
                for app_id, h, _ in launched]
        try:
            p.write(changes, rows).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            # The drivers run; a restart fails them (no handle) rather than launch them again.
            log.error("could not record launch handles: %s", e)
            return
        for app_id, _, log_path in launched:
            p.registry.launched(app_id, log_path)
        p.reads.publish()

    def _launch_for(self, app_id: str) -> Launch | None:
        """What to start for an admitted app (None: a notebook session, which the notebook
        starts itself once it sees STARTING)."""
        p = self.p
        sub = p.registry.get(app_id)
        if sub.kind == AppKind.SESSION:
            p.metrics.launches.labels("session").inc()
            return None
        view = p.reads.view.engine
        queue_conf = next(q for q in view.leaves() if q.name == sub.queue)
        ceiling = view.capacity.cores // max(sub.spec.executor.cores, 1)
        return build_launch(sub, p.url, p.log_dir, token=p.secret(app_id),
                            reclaim_timeout_s=queue_conf.reclaim_timeout_s,
                            max_executors=ceiling or None)


class _Before:
    """The apps as the last published view showed them (``recording.Before``)."""

    def __init__(self, view):
        self._view = view

    def get(self, app_id: str):
        return self._view.app(app_id)


def _handle_json(h: Handle) -> dict:
    return {"app_id": h.app_id, "kind": h.kind, "ref": h.ref, "started_at": h.started_at}
