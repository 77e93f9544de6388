"""Step 1 of ``Scheduler.step``: how each kind of event changes the engine's books.

One function per event type, dispatched by ``ON_EVENT``; every event was checked by
``validate`` first, so none of these can fail half-way. Decisions that follow from an event
at once (StopDriver for a killed driver, MarkState for a state change) are appended to ``out``.
The books change only through their verbs (``app_books.Books``), which keep every index true.
Lifecycle (``model.AppState``): ACCEPTED -> STARTING (launch) -> RUNNING (first executor, or the
starting timeout) -> FINISHED | FAILED | KILLED; a queued app can be killed or withdrawn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..model import AppState
from . import admission, agent_terms, reclaim
from .events import (
    Adopted,
    CapacityChanged,
    Decision,
    DemandChanged,
    DriverExited,
    DriverStarted,
    ExecutorsChanged,
    Forget,
    KillRequested,
    PriorityChanged,
    QueuesChanged,
    StopDriver,
    Submitted,
    Tick,
)
from .ledger import AppRecord, quiet
from .placement import Workers

if TYPE_CHECKING:
    from .scheduler import Scheduler


def submitted(s: Scheduler, now: float, ev: Submitted, out: list[Decision]) -> None:
    s.books.submit(AppRecord(spec=ev.spec, priority=ev.spec.priority))


def capacity_changed(s: Scheduler, now: float, ev: CapacityChanged, out: list[Decision]) -> None:
    s.capacity = ev.capacity
    s.books.set_workers(Workers(ev.workers, ev.capacity))
    s.reports.report(ev.workers)
    if ev.driver_slots is not None:
        s.driver_slots = ev.driver_slots
    if ev.host_room is not None:
        s.host_room = ev.host_room


def queues_changed(s: Scheduler, now: float, ev: QueuesChanged, out: list[Decision]) -> None:
    s.set_tree(ev.root)


def tick(s: Scheduler, now: float, ev: Tick, out: list[Decision]) -> None:
    pass


def priority_changed(s: Scheduler, now: float, ev: PriorityChanged, out: list[Decision]) -> None:
    s.books.requeue(s.apps[ev.app_id], ev.priority)


def kill_requested(s: Scheduler, now: float, ev: KillRequested, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    if rec.state.terminal:
        return
    if rec.state is AppState.ACCEPTED:
        s.books.unqueue(rec)
    else:
        out.append(StopDriver(rec.app_id))
    out.append(s.books.mark(now, rec, AppState.KILLED, "killed on request"))


def driver_started(s: Scheduler, now: float, ev: DriverStarted, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    rec.spark_app_id = ev.spark_app_id or rec.spark_app_id
    if rec.up_at is None:
        rec.up_at = now
        s.books.changed(rec)  # an idle driver's deadline starts (``ledger.starting_deadline``)
    quiet(rec, now)


def demand_changed(s: Scheduler, now: float, ev: DemandChanged, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    rec.demand = ev.demand
    # Only a profile besides the default counts: an app with none is the app it always was.
    rec.profiles = ev.profiles if any(p.profile_id for p in ev.profiles) else ()
    quiet(rec, now)
    s.books.changed(rec)


def adopt(s: Scheduler, now: float, ev: Adopted, out: list[Decision]) -> None:
    """An app launched before a restart: back on the books without launching it again.
    A ``reserve`` app that had no executor yet gets its reservation back."""
    rec = AppRecord(spec=ev.spec, priority=ev.priority, state=ev.state)
    rec.reason = ev.reason
    rec.launched_at = ev.launched_at
    rec.first_executor_at = ev.first_executor_at
    reserve = admission.mode_of(s.books.leaves[ev.spec.queue]).reserves
    if reserve and ev.first_executor_at is None:
        rec.reserved = admission.reservation(ev.spec)
    quiet(rec, now)  # idle, if RUNNING, from the restart on: how long before is not known
    s.books.adopt(rec)


def forget(s: Scheduler, now: float, ev: Forget, out: list[Decision]) -> None:
    """Drop an ended app without executors (``validate`` made sure) from the books."""
    s.books.forget(ev.app_id)


def driver_exited(s: Scheduler, now: float, ev: DriverExited, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    code = rec.exit_code = ev.exit_code
    if rec.state is AppState.ACCEPTED:  # a driver that was never ours to launch
        s.books.unqueue(rec)
    # A driver's executors die with it.
    rec.executors = {}
    rec.reclaiming.clear()
    rec.demand = 0
    if not rec.state.terminal:
        state = AppState.FINISHED if code == 0 else AppState.FAILED
        out.append(s.books.mark(now, rec, state, ev.reason or f"driver exited with code {code}"))
    s.books.changed(rec)


def executors_changed(s: Scheduler, now: float, ev: ExecutorsChanged, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    executors = ev.executors
    was = rec.executors
    rec.executors = {e.executor_id: e for e in executors}
    if was and any(e.worker for e in was.values()):
        # A witness that does not know an executor's worker (the agent) keeps what another
        # said (the cluster's lists): an executor never moves.
        for e in executors:
            old = was.get(e.executor_id)
            if not e.worker and old is not None and old.worker:
                rec.executors[e.executor_id] = replace(e, worker=old.worker)
    rec.demand = agent_terms.demand_after_report(ev.seen_by, len(executors), rec.demand)
    reclaim.executors_changed(rec, s.books.leaves[rec.spec.queue])
    if rec.reserved and rec.held >= rec.reserved:
        rec.reserved = 0
    if executors and rec.first_executor_at is None:
        rec.first_executor_at = now
    if executors and rec.state is AppState.STARTING:
        out.append(s.books.mark(now, rec, AppState.RUNNING, "first executor registered"))
    quiet(rec, now)
    s.books.changed(rec)


# Step 1: how each kind of event changes the books (events were checked by ``validate``).
ON_EVENT: dict[type, Callable[[Scheduler, float, Any, list[Decision]], None]] = {
    Submitted: submitted,
    Adopted: adopt,
    PriorityChanged: priority_changed,
    KillRequested: kill_requested,
    DriverStarted: driver_started,
    DriverExited: driver_exited,
    ExecutorsChanged: executors_changed,
    DemandChanged: demand_changed,
    CapacityChanged: capacity_changed,
    QueuesChanged: queues_changed,
    Forget: forget,
    Tick: tick,
}
