"""Step 1 of ``Scheduler.step``: how each kind of event changes the engine's books.

One function per event type, dispatched by ``ON_EVENT``; every event was checked by
``validate`` first, so none of these can fail half-way. Decisions that follow from an event
at once (StopDriver for a killed driver, MarkState for a state change) are appended to ``out``.
Lifecycle (DESIGN.md): ACCEPTED -> STARTING (launch) -> RUNNING (first executor, or the
starting timeout) -> FINISHED | FAILED | KILLED; a queued app can be killed or withdrawn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..model import AppState
from . import admission, agent_terms, reclaim
from .books import AppRecord
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

if TYPE_CHECKING:
    from .scheduler import Scheduler


def submitted(s: Scheduler, now: float, ev: Submitted, out: list[Decision]) -> None:
    rec = AppRecord(spec=ev.spec, priority=ev.spec.priority)
    s.apps[rec.app_id] = rec
    s._pending[rec.spec.queue].add(rec.rank)
    s._views.touch_queue(rec.spec.queue)


def capacity_changed(s: Scheduler, now: float, ev: CapacityChanged, out: list[Decision]) -> None:
    s.capacity = ev.capacity
    if ev.driver_slots is not None:
        s.driver_slots = ev.driver_slots


def queues_changed(s: Scheduler, now: float, ev: QueuesChanged, out: list[Decision]) -> None:
    # A queue's admission mode decides what is promised: the apps of a leaf whose mode now
    # promises otherwise are counted again (the others' totals and claims do not change).
    reserved_before = {name: admission.mode_of(q).reserves for name, q in s._leaves.items()}
    s._set_tree(ev.root)
    changed = {name for name, q in s._leaves.items()
               if reserved_before.get(name) != admission.mode_of(q).reserves}
    s._dirty.update(a for a, rec in s._admitted.items() if rec.spec.queue in changed)


def tick(s: Scheduler, now: float, ev: Tick, out: list[Decision]) -> None:
    pass


def priority_changed(s: Scheduler, now: float, ev: PriorityChanged, out: list[Decision]) -> None:
    set_priority(s, s.apps[ev.app_id], ev.priority)


def kill_requested(s: Scheduler, now: float, ev: KillRequested, out: list[Decision]) -> None:
    kill(s, now, s.apps[ev.app_id], out)


def driver_started(s: Scheduler, now: float, ev: DriverStarted, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    rec.spark_app_id = ev.spark_app_id or rec.spark_app_id
    if rec.driver_up_at is None:
        rec.driver_up_at = now
        s._dirty.add(rec.app_id)  # it stops launching (``launching``)


def demand_changed(s: Scheduler, now: float, ev: DemandChanged, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    rec.demand = ev.demand
    s._dirty.add(rec.app_id)


def adopt(s: Scheduler, now: float, ev: Adopted, out: list[Decision]) -> None:
    """An app launched before a restart: back on the books without launching it again.
    A ``reserve`` app that had no executor yet gets its reservation back."""
    rec = AppRecord(spec=ev.spec, priority=ev.priority, state=ev.state)
    rec.reason = ev.reason
    rec.launched_at = ev.launched_at
    rec.first_executor_at = ev.first_executor_at
    reserve = admission.mode_of(s._leaves[ev.spec.queue]).reserves
    if reserve and ev.first_executor_at is None:
        rec.reserved = admission.reservation(ev.spec)
    s.apps[rec.app_id] = rec
    if rec.state is AppState.STARTING:
        s._now_starting(rec)
    s._dirty.add(rec.app_id)


def forget(s: Scheduler, now: float, ev: Forget, out: list[Decision]) -> None:
    """Drop an ended app without executors (``validate`` made sure) from the books and
    from every running total it may still be in: it may have ended earlier in this very
    batch, before ``_sync`` took it out."""
    app_id = ev.app_id
    rec = s.apps[app_id]
    del s.apps[app_id]
    s._dirty.discard(app_id)
    s._touched.discard(app_id)
    s._ledger.refresh(rec, False)  # not on the books: takes its last contribution out
    s._needs.refresh(rec)
    s._launching.refresh(rec)
    s._admitted.pop(app_id, None)
    s._starting.pop(app_id, None)
    if s._claimed.pop(app_id, None) is not None:
        s._arbiter.drop(app_id)
    s._grants.rebase(rec, 0)
    s._reclaimer.index(rec)
    # Its decommission deadlines stay in the heap; ``_reclaim`` skips unknown apps.


def set_priority(s: Scheduler, rec: AppRecord, priority: int) -> None:
    if rec.state is AppState.ACCEPTED:
        pend = s._pending[rec.spec.queue]
        pend.remove(rec.rank)
        rec.priority = priority
        pend.add(rec.rank)
        s._views.touch_queue(rec.spec.queue)
    else:
        rec.priority = priority
    s._dirty.add(rec.app_id)


def kill(s: Scheduler, now: float, rec: AppRecord, out: list[Decision]) -> None:
    if rec.state.terminal:
        return
    if rec.state is AppState.ACCEPTED:
        s._pending[rec.spec.queue].remove(rec.rank)
        s._views.touch_queue(rec.spec.queue)
    else:
        out.append(StopDriver(rec.app_id))
    s._mark(now, rec, AppState.KILLED, "killed on request", out)


def driver_exited(s: Scheduler, now: float, ev: DriverExited, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    code = rec.exit_code = ev.exit_code
    if rec.state is AppState.ACCEPTED:  # a driver that was never ours to launch
        s._pending[rec.spec.queue].remove(rec.rank)
        s._views.touch_queue(rec.spec.queue)
    # A driver's executors die with it.
    rec.executors = {}
    rec.reclaiming.clear()
    rec.demand = 0
    if not rec.state.terminal:
        state = AppState.FINISHED if code == 0 else AppState.FAILED
        s._mark(now, rec, state, ev.reason or f"driver exited with code {code}", out)
    s._dirty.add(rec.app_id)


def executors_changed(s: Scheduler, now: float, ev: ExecutorsChanged, out: list[Decision]) -> None:
    rec = s.apps[ev.app_id]
    executors = ev.executors
    rec.executors = {e.executor_id: e for e in executors}
    rec.demand = agent_terms.demand_after_report(ev.seen_by, len(executors), rec.demand)
    reclaim.executors_changed(rec, s._leaves[rec.spec.queue])
    if rec.reserved and rec.held >= rec.reserved:
        rec.reserved = 0
    if executors and rec.first_executor_at is None:
        rec.first_executor_at = now
    if executors and rec.state is AppState.STARTING:
        s._mark(now, rec, AppState.RUNNING, "first executor registered", out)
    s._dirty.add(rec.app_id)


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
