"""Checking a step's events before any of them is applied.

``Scheduler.step`` refuses a batch with a bad event as a whole, with one ``EventError`` line
naming the event and the problem, and leaves its books untouched: never half a batch.
Events are checked in order against the books as the earlier events of the batch would leave
them (an app submitted earlier in the batch is known; a queue tree replaced earlier in the batch
is the one later submissions are checked against).

Facts from the cluster that merely arrive late are not errors: a kill of an app that already
ended does nothing, executors of an ended app are still booked until they are gone. Facts about
an app the engine was told to ``Forget`` are about an unknown app: refused like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..model import PRIORITY_MAX, PRIORITY_MIN, AppSpec, AppState, Queue, Resources
from .books import AppRecord
from .events import (
    Adopted,
    CapacityChanged,
    DemandChanged,
    DriverExited,
    DriverStarted,
    ExecutorsChanged,
    Forget,
    KillRequested,
    PriorityChanged,
    QueuesChanged,
    Submitted,
    Tick,
)

_APP_EVENTS = (
    PriorityChanged,
    KillRequested,
    DriverStarted,
    DriverExited,
    ExecutorsChanged,
    DemandChanged,
)


class EventError(ValueError):
    """An event the engine cannot take. ``str()`` is one line naming the event and the problem;
    ``index`` is its place in the batch and ``event`` the event itself, so a caller that must
    not lose the rest of the batch can drop that one event and step again."""

    def __init__(self, message: str, index: int, event: object):
        super().__init__(message)
        self.index = index
        self.event = event


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _priority_problem(p: object) -> str | None:
    if not _whole(p) or not PRIORITY_MIN <= p <= PRIORITY_MAX:
        return f"priority {p!r} is not a whole number from {PRIORITY_MIN} to {PRIORITY_MAX}"
    return None


def _resources_problem(what: str, r: object, min_cores: int) -> str | None:
    if not isinstance(r, Resources) or not (_whole(r.cores) and _whole(r.mem_mib)):
        return f"{what} must be Resources of whole cores and MiB"
    if r.cores < min_cores or r.mem_mib < 0:
        return (
            f"{what} {r.cores} cores/{r.mem_mib} MiB: needs at least {min_cores} core(s) "
            "and no negative memory"
        )
    return None


def spec_problem(spec: object, leaves: Iterable[str]) -> str | None:
    """What is wrong with a submission, or None."""
    if not isinstance(spec, AppSpec):
        return "not an AppSpec"
    if not isinstance(spec.app_id, str) or not spec.app_id:
        return "app_id must be a non-empty string"
    if spec.queue not in leaves:
        return f"queue {spec.queue!r} is not a leaf queue"
    if not _whole(spec.seq):
        return f"seq {spec.seq!r} is not a whole number"
    problem = (
        _priority_problem(spec.priority)
        or _resources_problem("executor", spec.executor, 1)
        or _resources_problem("driver", spec.driver, 0)
    )
    if problem:
        return problem
    if not _whole(spec.min_executors) or spec.min_executors < 0:
        return f"minExecutors {spec.min_executors!r} is not a whole number >= 0"
    if spec.max_executors is not None and (
        not _whole(spec.max_executors) or spec.max_executors < spec.min_executors
    ):
        return f"maxExecutors {spec.max_executors!r} is below minExecutors {spec.min_executors}"
    if spec.slots_max is not None and (not _whole(spec.slots_max) or spec.slots_max < 0):
        return f"spark.ego.slots.max {spec.slots_max!r} is not a whole number >= 0"
    return None


def check_events(
    events: Iterable[object],
    apps: Mapping[str, AppRecord],
    leaves: Iterable[str],
    occupied: Callable[[], set[str]],
) -> None:
    """Raise EventError for the first event the engine cannot take.

    ``occupied()`` names the leaf queues that hold apps (queued, running, or ended but still
    holding executors); a new queue tree must keep each of them as a leaf.
    """
    leaf_set = set(leaves)
    state_of: dict[str, AppState | None] = {}  # apps added (None: forgotten) by this batch
    queue_of: dict[str, str] = {}
    # What Forget needs of the batch so far: apps it ended, and whether apps hold executors.
    ended: set[str] = set()
    holds: dict[str, bool] = {}

    def state(app_id: str) -> AppState | None:
        if app_id in state_of:
            return state_of[app_id]
        rec = apps.get(app_id)
        return rec.state if rec is not None else None

    def forget_problem(app_id: str, current: AppState | None) -> str | None:
        if current is None:
            return "unknown app"
        if not current.terminal and app_id not in ended:
            return f"app is {current.value}, not ended: only an ended app may be forgotten"
        rec = apps.get(app_id)
        held = holds[app_id] if app_id in holds else rec is not None and bool(rec.executors)
        if held:
            return "app still holds executors on the books: forget it once they are gone"
        return None

    for i, ev in enumerate(events):
        name = type(ev).__name__
        problem: str | None = None
        subject = ""
        if isinstance(ev, (Submitted, Adopted)):
            subject = getattr(ev.spec, "app_id", "")
            problem = spec_problem(ev.spec, leaf_set)
            if problem is None and state(ev.spec.app_id) is not None:
                problem = "already submitted"
            if problem is None and isinstance(ev, Adopted):
                if ev.state not in (AppState.STARTING, AppState.RUNNING):
                    problem = f"an adopted app must be STARTING or RUNNING, not {ev.state}"
                else:
                    problem = _priority_problem(ev.priority)
            if problem is None:
                adopted = isinstance(ev, Adopted)
                state_of[ev.spec.app_id] = ev.state if adopted else AppState.ACCEPTED
                queue_of[ev.spec.app_id] = ev.spec.queue
                holds[ev.spec.app_id] = False  # a new app (even under a forgotten one's id)
        elif isinstance(ev, _APP_EVENTS):
            subject = ev.app_id
            current = state(ev.app_id)
            if current is None:
                problem = "unknown app"
            elif isinstance(ev, PriorityChanged):
                problem = _priority_problem(ev.priority)
            elif isinstance(ev, DemandChanged) and (not _whole(ev.demand) or ev.demand < 0):
                problem = f"demand {ev.demand!r} is not a whole number >= 0"
            elif isinstance(ev, DriverExited) and not _whole(ev.exit_code):
                problem = f"exit code {ev.exit_code!r} is not a whole number"
            elif isinstance(ev, ExecutorsChanged):
                ids = [getattr(e, "executor_id", None) for e in ev.executors]
                if current is AppState.ACCEPTED and ids:
                    problem = "executors reported for an app whose driver was never launched"
                elif len(set(ids)) != len(ids):
                    problem = "the same executor id is listed twice"
            if isinstance(ev, KillRequested) and current is AppState.ACCEPTED:
                state_of[ev.app_id] = AppState.KILLED
            if problem is None and isinstance(ev, KillRequested | DriverExited):
                ended.add(ev.app_id)
            if problem is None and isinstance(ev, DriverExited):
                holds[ev.app_id] = False  # a driver's executors die with it
            elif problem is None and isinstance(ev, ExecutorsChanged):
                holds[ev.app_id] = bool(ev.executors)
        elif isinstance(ev, Forget):
            subject = ev.app_id
            problem = forget_problem(ev.app_id, state(ev.app_id))
            if problem is None:
                state_of[ev.app_id] = None
                queue_of.pop(ev.app_id, None)
                ended.discard(ev.app_id)
                holds.pop(ev.app_id, None)
        elif isinstance(ev, CapacityChanged):
            problem = _resources_problem("capacity", ev.capacity, 0)
            if problem is None and ev.driver_slots is not None and (
                not _whole(ev.driver_slots) or ev.driver_slots < 0
            ):
                problem = f"driver_slots {ev.driver_slots!r} is not a whole number >= 0"
        elif isinstance(ev, QueuesChanged):
            if not isinstance(ev.root, Queue):
                problem = "root must be a Queue"
            else:
                new = {q.name for q in ev.root.leaves()}
                batch = {queue_of[a] for a, s in state_of.items()
                         if s is not None and not s.terminal}
                lost = sorted((occupied() | batch) - new)
                if lost:
                    problem = f"queues still hold apps and cannot be removed: {', '.join(lost)}"
                else:
                    leaf_set = new
        elif not isinstance(ev, Tick):
            problem = "not an event"
        if problem is not None:
            what = f"{name} {subject}".strip() if subject else name
            raise EventError(f"event {i} ({what}): {problem}", i, ev)

