"""Driver admission: which queued applications may launch their driver now.

Order of pending apps inside a leaf queue (the sort key of ``pending_key``):
  1. priority, highest first (``spark.ego.priority``; an update re-orders at once);
  2. submission sequence, oldest first;
  3. application id (never reached: sequences are unique; it keeps the order total).

A queue is strict first-in-line: if its head cannot start, nothing behind it in that queue does
(a small late driver must not starve a big early one). Queues are independent tenants, so a
blocked queue does not hold back the others.

Across queues the next head is taken from the queue that uses least for its weight, walking the
tree from the root (YuniKorn's parent queues are fair): at each level the child with the lowest
``usage / weight`` first, ties by the head's priority and then its age.

Checks on a head, in order; the first that fails defers the queue with that reason:
  1. ``max_running_apps`` of the leaf and of every parent;
  2. ``stateaware``: fewer than ``starting_limit`` apps of the leaf are STARTING;
  3. driver room: a client-mode driver needs a free driver slot on the scheduler host; an
     in-cluster driver needs its cores and memory free in the cluster right now (drivers wait
     for free cores like a standalone master's waiting drivers) - except under ``reserve``,
     where check 4 covers it;
  4. ``reserve``: the driver (if in-cluster) plus ``max(minExecutors, 1)`` executors fit in what
     is left of the capacity after every admitted app's guaranteed part (its in-cluster driver
     and its floor, see ``arbitration``). Arbitration gives floors first, taking elastic
     executors back, so every admitted app gets its first executors: no deadlock, and no
     StateAware timeout stall behind a driver that pre-processes for long.
``none`` runs checks 1 and 3 only: what stock Spark does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model import Admission, AppSpec, Queue, Resources


def pending_key(priority: int, spec: AppSpec) -> tuple[int, int, str]:
    return (-priority, spec.seq, spec.app_id)


def reservation(spec: AppSpec) -> int:
    """Executors a ``reserve`` queue sets aside for an app until it holds them."""
    return max(spec.min_executors, 1)


@dataclass
class LeafView:
    """One leaf queue as admission sees it this cycle.

    ``pending`` is head first; ``priority_of`` gives the live priority of a pending app.
    """

    queue: Queue
    pending: Sequence[AppSpec]
    priority_of: dict[str, int]
    starting: int = 0


@dataclass
class Room:
    """What is free for new drivers this cycle (working copy: admission spends it)."""

    free: Resources  # capacity - in-cluster drivers - executors held or granted
    uncommitted: Resources  # capacity - in-cluster drivers - floors of admitted apps
    driver_slots_free: int
    admitted_in: dict[str, int] = field(default_factory=dict)  # queue (any level) -> admitted apps
    usage_cores: dict[str, float] = field(default_factory=dict)  # queue (any level) -> cores used


@dataclass(frozen=True)
class Plan:
    admit: tuple[str, ...]  # app ids, in the order they were admitted
    waiting: dict[str, str]  # leaf queue name -> why its head waits


def _ancestry(root: Queue) -> dict[str, tuple[Queue, ...]]:
    """Leaf name -> (root, ..., leaf)."""
    out: dict[str, tuple[Queue, ...]] = {}

    def walk(q: Queue, path: tuple[Queue, ...]) -> None:
        path = path + (q,)
        if q.is_leaf:
            out[q.name] = path
        for c in q.children:
            walk(c, path)

    walk(root, ())
    return out


def _defer_reason(view: LeafView, head: AppSpec, path: tuple[Queue, ...], room: Room) -> str | None:
    q = view.queue
    for node in path:
        limit = node.max_running_apps
        if limit is not None and room.admitted_in.get(node.name, 0) >= limit:
            return f"queue {node.name} runs {limit} apps (max_running_apps {limit})"
    if q.admission is Admission.STATEAWARE and view.starting >= q.starting_limit:
        return f"{view.starting} app(s) starting in {q.name} (starting_limit {q.starting_limit})"
    if not head.driver_in_cluster:
        if room.driver_slots_free < 1:
            return "every driver slot is in use"
    elif q.admission is not Admission.RESERVE and not head.driver.fits_in(room.free):
        return (
            f"no room for the driver in the cluster (needs {head.driver.cores} cores/"
            f"{head.driver.mem_mib} MiB, free {room.free.cores}/{room.free.mem_mib})"
        )
    if q.admission is Admission.RESERVE and not _commitment(head).fits_in(room.uncommitted):
        n = reservation(head)
        return f"no room to reserve the driver and {n} executor(s) beside the admitted apps"
    return None


def _commitment(spec: AppSpec) -> Resources:
    driver = spec.driver if spec.driver_in_cluster else Resources()
    return driver + spec.executor.times(reservation(spec))


def plan_admissions(root: Queue, leaves: Sequence[LeafView], room: Room) -> Plan:
    """Admit heads in fair order until every queue with pending apps is deferred or empty.

    Pure apart from spending ``room`` (the caller's working copy).
    """
    ancestry = _ancestry(root)
    nxt = {v.queue.name: 0 for v in leaves}
    active = {v.queue.name: v for v in leaves if v.pending}
    admitted: list[str] = []
    waiting: dict[str, str] = {}

    def order_key(view: LeafView) -> tuple:
        head = view.pending[nxt[view.queue.name]]
        path = ancestry[view.queue.name]
        shares = tuple(room.usage_cores.get(n.name, 0.0) / n.weight for n in path[1:])
        return (shares, -view.priority_of[head.app_id], head.seq, head.app_id)

    while active:
        view = min(active.values(), key=order_key)
        name = view.queue.name
        head = view.pending[nxt[name]]
        path = ancestry[name]
        reason = _defer_reason(view, head, path, room)
        if reason is not None:
            waiting[name] = reason
            del active[name]
            continue
        admitted.append(head.app_id)
        _spend(room, view, head, path)
        nxt[name] += 1
        if nxt[name] >= len(view.pending):
            del active[name]
    return Plan(tuple(admitted), waiting)


def _spend(room: Room, view: LeafView, head: AppSpec, path: tuple[Queue, ...]) -> None:
    view.starting += 1
    for node in path:
        room.admitted_in[node.name] = room.admitted_in.get(node.name, 0) + 1
    if head.driver_in_cluster:
        room.free = room.free - head.driver
        for node in path:
            room.usage_cores[node.name] = room.usage_cores.get(node.name, 0.0) + head.driver.cores
    else:
        room.driver_slots_free -= 1
    if view.queue.admission is Admission.RESERVE:
        room.uncommitted = room.uncommitted - _commitment(head)
    else:
        floor = head.driver if head.driver_in_cluster else Resources()
        room.uncommitted = room.uncommitted - floor - head.executor.times(head.min_executors)
