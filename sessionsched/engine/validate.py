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
from typing import Any

from ..model import (
    EXIT_CODE_MAX,
    EXIT_CODE_MIN,
    PRIORITY_MAX,
    PRIORITY_MIN,
    AppSpec,
    AppState,
    Queue,
    Resources,
)
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
from .ledger import AppRecord


class EventError(ValueError):
    """An event the engine cannot take. ``str()`` is one line naming the event and the problem;
    ``index`` is its place in the batch and ``event`` the event itself, so a caller that must
    not lose the rest of the batch can drop that one event and step again."""

    def __init__(self, message: str, index: int, event: object):
        super().__init__(message)
        self.index = index
        self.event = event


def _whole(value: object) -> bool:
    # ``type is int`` first: the common case in one test (a burst's 1,000 submissions a step
    # ask it about ten times each); a subclass of int but bool is still whole.
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


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


class _Batch:
    """The books as the events checked so far would leave them: apps added (None: forgotten)
    and their queues, apps ended, whether apps hold executors, the leaf queues in force."""

    def __init__(self, apps: Mapping[str, AppRecord], leaves: Iterable[str],
                 occupied: Callable[[], set[str]]):
        self.apps = apps
        self.leaves = set(leaves)
        self.occupied = occupied
        self.state_of: dict[str, AppState | None] = {}
        self.queue_of: dict[str, str] = {}
        self.ended: set[str] = set()
        self.holds: dict[str, bool] = {}

    def state(self, app_id: str) -> AppState | None:
        if app_id in self.state_of:
            return self.state_of[app_id]
        rec = self.apps.get(app_id)
        return rec.state if rec is not None else None

    # One checker per event type: the problem (None: fine), and the batch's books updated.

    def submitted(self, ev: Submitted | Adopted) -> str | None:
        problem = spec_problem(ev.spec, self.leaves)
        if problem is None and self.state(ev.spec.app_id) is not None:
            problem = "already submitted"
        if problem is None and isinstance(ev, Adopted):
            if ev.state not in (AppState.STARTING, AppState.RUNNING):
                problem = f"an adopted app must be STARTING or RUNNING, not {ev.state}"
            else:
                problem = _priority_problem(ev.priority)
        if problem is None:
            self.state_of[ev.spec.app_id] = (
                ev.state if isinstance(ev, Adopted) else AppState.ACCEPTED)
            self.queue_of[ev.spec.app_id] = ev.spec.queue
            self.holds[ev.spec.app_id] = False  # a new app (even under a forgotten one's id)
        return problem

    def about_app(self, ev: object) -> str | None:
        """Events about one known app."""
        app_id = ev.app_id  # type: ignore[attr-defined]
        current = self.state(app_id)
        if current is None:
            return "unknown app"
        problem = _APP_EVENT_PROBLEMS[type(ev)](ev, current)
        if problem is not None:
            return problem
        if isinstance(ev, KillRequested | DriverExited):
            if isinstance(ev, KillRequested) and current is AppState.ACCEPTED:
                self.state_of[app_id] = AppState.KILLED
            self.ended.add(app_id)
        if isinstance(ev, DriverExited):
            self.holds[app_id] = False  # a driver's executors die with it
        elif isinstance(ev, ExecutorsChanged):
            self.holds[app_id] = bool(ev.executors)
        return None

    def forget(self, ev: Forget) -> str | None:
        current = self.state(ev.app_id)
        if current is None:
            return "unknown app"
        if not current.terminal and ev.app_id not in self.ended:
            return f"app is {current.value}, not ended: only an ended app may be forgotten"
        rec = self.apps.get(ev.app_id)
        held = (self.holds[ev.app_id] if ev.app_id in self.holds
                else rec is not None and bool(rec.executors))
        if held:
            return "app still holds executors on the books: forget it once they are gone"
        self.state_of[ev.app_id] = None
        self.queue_of.pop(ev.app_id, None)
        self.ended.discard(ev.app_id)
        self.holds.pop(ev.app_id, None)
        return None

    def capacity_changed(self, ev: CapacityChanged) -> str | None:
        problem = _resources_problem("capacity", ev.capacity, 0)
        if problem is None and ev.driver_slots is not None and (
            not _whole(ev.driver_slots) or ev.driver_slots < 0
        ):
            problem = f"driver_slots {ev.driver_slots!r} is not a whole number >= 0"
        if problem is None and ev.host_room is not None:
            problem = _resources_problem("host_room", ev.host_room, 0)
        for w in ev.workers if problem is None else ():
            problem = (_resources_problem(f"worker {w.name!r}", w.size, 0)
                       or _resources_problem(f"worker {w.name!r} free", w.free, 0))
            if problem is not None:
                break
        return problem

    def queues_changed(self, ev: QueuesChanged) -> str | None:
        if not isinstance(ev.root, Queue):
            return "root must be a Queue"
        new = {q.name for q in ev.root.leaves()}
        batch = {self.queue_of[a] for a, s in self.state_of.items()
                 if s is not None and not s.terminal}
        lost = sorted((self.occupied() | batch) - new)
        if lost:
            return f"queues still hold apps and cannot be removed: {', '.join(lost)}"
        self.leaves = new
        return None

    def tick(self, ev: Tick) -> str | None:
        return None


def _executors_problem(ev: ExecutorsChanged, current: AppState) -> str | None:
    ids = [getattr(e, "executor_id", None) for e in ev.executors]
    if current is AppState.ACCEPTED and ids:
        return "executors reported for an app whose driver was never launched"
    if len(set(ids)) != len(ids):
        return "the same executor id is listed twice"
    return None


# A code past the store's column failed every commit after it, each cycle put back and
# stepped again, for ever: refused here, whatever reports it.
def _exit_code_problem(code: object) -> str | None:
    if not _whole(code) or not EXIT_CODE_MIN <= code <= EXIT_CODE_MAX:
        return (f"exit code {code!r} is not a whole number from {EXIT_CODE_MIN} to "
                f"{EXIT_CODE_MAX}")
    return None


def _no_problem(ev: object, current: AppState) -> str | None:
    return None


# What can be wrong with an event about a known app, besides the app (current: its state).
_APP_EVENT_PROBLEMS: dict[type, Callable[[Any, AppState], str | None]] = {
    PriorityChanged: lambda ev, current: _priority_problem(ev.priority),
    KillRequested: _no_problem,
    DriverStarted: _no_problem,
    DriverExited: lambda ev, current: _exit_code_problem(ev.exit_code),
    ExecutorsChanged: _executors_problem,
    DemandChanged: lambda ev, current: (
        None if _whole(ev.demand) and ev.demand >= 0
        else f"demand {ev.demand!r} is not a whole number >= 0"),
}

_CHECKS: dict[type, Callable[[_Batch, Any], str | None]] = {
    Submitted: _Batch.submitted,
    Adopted: _Batch.submitted,
    Forget: _Batch.forget,
    CapacityChanged: _Batch.capacity_changed,
    QueuesChanged: _Batch.queues_changed,
    Tick: _Batch.tick,
    **{t: _Batch.about_app for t in _APP_EVENT_PROBLEMS},
}


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
    batch = _Batch(apps, leaves, occupied)
    for i, ev in enumerate(events):
        check = _CHECKS.get(type(ev))
        problem = "not an event" if check is None else check(batch, ev)
        if problem is not None:
            spec = getattr(ev, "spec", None)
            subject = getattr(ev, "app_id", None) or getattr(spec, "app_id", "")
            name = type(ev).__name__
            what = f"{name} {subject}".strip() if subject else name
            raise EventError(f"event {i} ({what}): {problem}", i, ev)
