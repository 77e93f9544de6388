"""Admission's checks on a queue's head, and the admission modes: which checks each runs.

The checks, in order; the first that fails defers the queue with its ``waits.Wait``: a code
from the closed set ``waits.WaitCode``, whose order is this order (its precedence), and a
sentence with the numbers - what the head needs, what is free, who holds the rest
(docs/user/reasons.md). The codes: 1 ``parent_queue_full`` (a parent on the path) or
``queue_limit`` (the leaf), 2 ``starting_limit``, 3 ``driver_slot``, 4 ``driver_share``,
5 ``driver_room``, 6 ``executor_room`` or ``queue_max_cores``, 7 ``running_demand``.
Which checks a queue runs is its admission mode's row in ``ADMISSION_MODES``. What each mode
is for, and what the simulator and the real cluster measured for each rule below, is in
docs/design/admission.md.
  1. ``queue_limits``: ``max_running_apps`` of every queue on its path, root first;
  2. ``starting_limit`` (``stateaware``): fewer than ``starting_limit`` apps of the leaf are
     STARTING (YuniKorn's StateAware: one app starting at a time, the next one only when it
     has an executor or its ``starting_timeout`` passed);
  3. ``driver_slot``: a driver on the scheduler's host needs room there (``host_room``);
  4. ``driver_share`` (``demand``): the leaf's in-cluster drivers with this one hold at most
     its ``max_driver_fraction`` of the cores (and memory) the leaf reaches - its share of the
     cluster by weight among the leaves that have apps (``admission.weight_shares``: an idle
     queue's share goes to the busy ones), cut by ``max_cores`` on its path - unless the leaf
     runs no in-cluster driver yet: it may always start one. YARN's
     ``maximum-am-resource-percent`` (per leaf queue, proportional to its capacity, which grows
     into idle capacity, and its "at least one application master" rule). Drivers admitted
     while a queue reached more stay when a sibling becomes busy; they end with their apps,
     and ``reserve_room`` keeps every admitted app's first executors possible meanwhile.
     A driver that *works alone* (``ledger.works_alone``: RUNNING - past its starting timeout,
     or idle since it came up, ``ledger.starting_deadline`` -, it holds no executor and asks
     for none) is not counted: the fraction bounds cores spent on drivers that wait for
     executors, and such a driver waits for nothing, so drivers pass the fraction while no
     executor wants the cores it guards. It counts again when it asks. The fraction may be
     passed while the leaf's admitted apps and the head, each holding its driver and every
     executor it may hold (``ledger.whole``: maxExecutors, slots.max), fit together in what
     the leaf reaches: then no executor of theirs can be short of a core because of their
     drivers, which is all the fraction is for (tiny apps, a 1-core driver per 1-core
     executor, are best packed with drivers on half the cores).
     One app without a cap keeps its queue at the fraction;
  5. ``cluster_driver_room`` (``stateaware``, ``none``): an in-cluster driver needs its cores
     and memory free in the cluster now - not held or granted to executors, and not promised
     to a ``reserve`` app (drivers wait for free cores like a standalone master's waiting
     drivers; a reservation must not be eaten by another driver) - and free on one worker
     (``placement.free_now``: room split across workers is not room);
  6. ``reserve_room`` (``reserve``, ``demand``): the driver (if in-cluster) plus
     ``reservation()`` executors fit in what is left of the capacity after every admitted
     app's in-cluster driver and floor (custom resources too: ``commitment``; the reason
     names the one short), and the executors fit under ``max_cores`` of every
     queue on the path beside the floors already there. Under ``reserve`` arbitration gives
     the reservation before anything else, taking elastic executors back, so every admitted
     app gets its first executors: no deadlock, and no StateAware timeout stall behind a
     driver that pre-processes for long;
  7. ``running_demand`` (``demand``): the same driver and first executors also fit beside what
     the leaf's admitted apps of the head's priority or higher still want above their floors
     (``needs``: their reported demand; an app still STARTING without an executor wants its
     first executors), custom resources too: a head that asks for a GPU waits while they want
     every GPU left (the reason names it), one that asks for none is not held back by their
     GPUs. The head is admitted only into room its queue's running apps do not need:
     work-conserving. In a ``fairshare`` leaf their need counts only up to what they
     keep with the head in (``room.demand``): arbitration will give the head its weighted
     share anyway, so holding it back while the others want more than theirs would only
     delay it. In ``fifo`` and ``priority`` leaves a head of equal priority gets what the
     running apps leave, so their whole need holds it back. One exception, the *driver
     ahead*: if only its first executors lack room, the head may still start when its driver
     alone fits beside that need and no app of its leaf that started ahead is still STARTING
     without an executor (``AppRecord.ahead``, ``ledger.Totals.ahead``): at most one per leaf.
     No admission can know which driver will pre-process for minutes before it asks; one
     started ahead does that while the apps before it run, and if it asks at once it costs
     one driver's cores (or slot) idle until room frees. Its first executors still fit beside
     every driver and floor (``reserve_room``) and the fraction still holds, so nothing
     deadlocks;
  8. ``free_here`` (every mode; behind several clusters only): an app that a cluster stepping
     after this one in the cycle is offered too (``Room.offered_later``) is admitted here only
     if its driver and first executors are free here now; otherwise it is that cluster's to
     take (so it goes where its executors have room now), as it is while a later cluster
     comes first by its queue's own placement rule and has room for it now.
``none`` runs checks 1, 3, 5 and 8 only: what stock Spark does.

``demand`` paces a burst by room alone: every head that passes checks 1-7 is admitted in the
same cycle, however many that is (up to the cycle's ``budget`` slice). It has no launch pacing
(no "one launch at a time") and no count of starting apps: a cap on apps in flight is a count
of apps, not of cores, so on a large cluster it throttles a burst that fits many times over -
500 tiny apps on 1,200 cores, each a 1-core driver and one 1-core executor, admitted one per
driver start ran 1,024 s where ``reserve`` ran 36 s (simulated: burst-driver-heavy.yaml). No
deadlock without it: checks 4 and 6 keep room for each admitted app's first executors.

Every check only gets harder as a cycle admits apps (counts grow, room shrinks), so a queue
whose head fails at the start of the cycle is deferred for the whole cycle with that reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import Admission, AppSpec, Queue, Resources
from ..model.custom import amount
from .gang.checks import gang_wait
from .host_room import driver_slot, resource_room
from .ledger import whole
from .room.commitment import commitment, reservation
from .room.demand import demand_verdict
from .waits import Wait, WaitCode, first_of, holders, res

if TYPE_CHECKING:
    from .admission import LeafView, Room

_NONE = Resources()  # shared: every check asks for "nothing" many times a cycle


def admitted_floor(spec: AppSpec, queue: Queue) -> int:
    """The floor an app has right after admission (``AppRecord.floor`` from then on)."""
    n = reservation(spec) if mode_of(queue).reserves or spec.gang else spec.min_executors
    cap = spec.executor_cap
    return n if cap is None else min(n, cap)


Check = Callable[["LeafView", AppSpec, tuple[Queue, ...], "Room"], Wait | None]


def queue_limits(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                 room: Room) -> Wait | None:
    for node in path:  # the apps it runs on other clusters too (``Room.elsewhere``)
        n = room.admitted_in.get(node.name, 0) + room.elsewhere.get(node.name, 0)
        if (limit := node.max_running_apps) is not None and n >= limit:
            if node is path[-1]:
                return Wait(WaitCode.QUEUE_LIMIT,
                            f"queue {node.name} runs {n} app(s): its max_running_apps is {limit}")
            return Wait(WaitCode.PARENT_QUEUE_FULL,
                        f"parent queue {node.name} runs {n} app(s): its max_running_apps is"
                        f" {limit}")
    return None


def starting_limit(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                   room: Room) -> Wait | None:
    q = view.queue
    if view.starting >= q.starting_limit:
        return Wait(WaitCode.STARTING_LIMIT, f"{view.starting} app(s) of {q.name} are starting:"
                    f" its starting_limit is {q.starting_limit}")
    return None


def cluster_driver_room(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                        room: Room) -> Wait | None:
    # the sum in cores and memory; custom resources (GPUs) are asked of the workers below
    if head.driver_in_cluster and not head.driver.fits_in_sum(room.free):
        needs = f"no room for its driver in the cluster: it needs {res(head.driver)}"
        if room.free == room.capacity:
            return Wait(WaitCode.DRIVER_ROOM,
                        f"{needs}, the cluster has {res(room.capacity)} and none of it is held")
        return Wait(WaitCode.DRIVER_ROOM,
                    f"{needs}, {res(room.free)} is free of {res(room.capacity)};"
                    f" {holders(room, path)}")
    now = room.free_now
    if head.driver_in_cluster and now is not None and not now.fits(head.driver):
        if (short := now.short_of(head.driver)) is not None:  # a custom resource: named
            name, need, most, free = short
            return Wait(WaitCode.DRIVER_ROOM, f"waiting for {name}: its driver needs {need} {name}"
                        f" on one worker, the most free on one worker is {most} ({free} free in"
                        f" all, {amount(room.capacity.custom, name)} in the cluster)",
                        resource_room(name))
        return Wait(WaitCode.DRIVER_ROOM,
                    f"no room for its driver on any one worker: it needs {res(head.driver)},"
                    f" the most free on one worker is {res(now.most())} ({res(room.free)} free"
                    f" in all, split across workers)")
    return None


def reserve_room(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                 room: Room) -> Wait | None:
    needed, free = commitment(head), room.uncommitted
    if not needed.fits_in(free):
        n = reservation(head)
        admitted = room.admitted_in.get(path[0].name, 0)
        if needed.fits_in_sum(free):  # a custom resource (GPUs) is short: named
            name, need = next((k, v) for k, v in needed.custom if v > amount(free.custom, k))
            return Wait(WaitCode.EXECUTOR_ROOM, f"waiting for {name}: {first_of(head, n)} need"
                        f" {need} {name}; {max(amount(free.custom, name), 0)} of the cluster's"
                        f" {amount(room.capacity.custom, name)} {name} is left beside the"
                        f" in-cluster drivers and executor floors of {admitted} admitted app(s)",
                        resource_room(name))
        left = (f"{res(free)} is left beside the drivers and executor floors of"
                f" {admitted} admitted app(s)" if admitted
                else f"the cluster has {res(room.capacity)} and no app is admitted")
        return Wait(WaitCode.EXECUTOR_ROOM,
                    f"no room for {first_of(head, n)}, {res(needed)} in all: {left}")
    return under_max_cores(view, head, path, room)


def under_max_cores(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                    room: Room) -> Wait | None:
    """The head's first executors fit under ``max_cores`` of every queue on its path beside
    the floors already there - on every cluster: ``Room.max_cores_left`` (``reserve_room``'s
    second half; a gang's own check)."""
    cores = (n := reservation(head)) * head.executor.cores
    for node in path:
        if (cap := node.max_cores) is None:
            continue
        floors = room.floor_cores_in.get(node.name, 0)
        over, there = room.max_cores_left.get(node.name, (cap, 0))  # every cluster's, theirs
        if floors + cores > cap or floors + there + cores > over:
            limit = cap if floors + cores > cap else f"{over} over every cluster"
            held = f"{floors} here and {there} on the others" if there else f"{floors}"
            return Wait(WaitCode.QUEUE_MAX_CORES,
                        f"its first {n} executor(s) need {cores} cores under queue {node.name},"
                        f" whose max_cores is {limit}; the floors of its admitted apps hold"
                        f" {held}")
    return None


def free_here(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
              room: Room) -> Wait | None:
    later = room.offered_later(head.app_id)  # True, or why its queue's rule puts one first
    if later is not True:
        return Wait(WaitCode.EXECUTOR_ROOM, later) if later else None
    needed, now = commitment(head), room.free_now
    if needed.fits_in_sum(room.free) and (now is None or now.fits(head.executor)):
        return None
    return Wait(WaitCode.EXECUTOR_ROOM,
                f"no room free now for {first_of(head, reservation(head))}, {res(needed)} in"
                f" all: {res(room.free)} is free on this cluster; a cluster offered it next may"
                f" have it")


def driver_share(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                 room: Room) -> Wait | None:
    if not head.driver_in_cluster:
        return None
    q = view.queue
    held = room.drivers_in.get(q.name, _NONE)
    if held.cores <= 0 and held.mem_mib <= 0:
        return None  # a queue running no in-cluster driver may always start one (YARN's rule)
    share = room.weight_share.get(q.name, 1.0)
    reach = room.capacity.cores * share
    for node in path:
        if node.max_cores is not None:
            reach = min(reach, node.max_cores)
    limit, d = q.max_driver_fraction, head.driver
    mem_reach = room.capacity.mem_mib * share
    if held.cores + d.cores <= limit * reach and held.mem_mib + d.mem_mib <= limit * mem_reach:
        return None
    if _all_fit_whole(q.name, head, reach, mem_reach, room):
        return None
    return Wait(
        WaitCode.DRIVER_SHARE,
        f"the in-cluster drivers of {q.name} hold {res(held)}; with its driver's"
        f" {res(head.driver)} they would pass max_driver_fraction {limit:g} of the"
        f" {reach:g} cores/{int(mem_reach)} MiB {q.name} reaches"
    )


def _all_fit_whole(leaf: str, head: AppSpec, reach: float, mem_reach: float,
                   room: Room) -> bool:
    """Whether the leaf's admitted apps and the head, each holding its driver and every
    executor it may hold (``ledger.whole``), fit together in what the leaf reaches."""
    most = whole(head)
    if most is None or room.unbounded_in.get(leaf, 0):
        return False
    held = room.whole_in.get(leaf, _NONE)
    return held.cores + most[0] <= reach and held.mem_mib + most[1] <= mem_reach


def running_demand(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                   room: Room) -> Wait | None:
    return demand_verdict(view, head, room)[0]


@dataclass(frozen=True)
class AdmissionMode:
    """What a leaf queue's admission mode checks, and what it promises an admitted app.
    ``reserves``: an admitted app holds a reservation of ``reservation()`` executors until it
    has them; arbitration serves it first (its floor is *guaranteed*) and ``free`` room for
    other drivers excludes it."""

    checks: tuple[Check, ...]
    reserves: bool = False


ADMISSION_MODES: dict[Admission, AdmissionMode] = {
    Admission.DEMAND: AdmissionMode(
        (queue_limits, driver_slot, driver_share, reserve_room, running_demand, free_here)),
    Admission.STATEAWARE: AdmissionMode(
        (queue_limits, starting_limit, driver_slot, cluster_driver_room, free_here)),
    Admission.RESERVE: AdmissionMode((queue_limits, driver_slot, reserve_room, free_here),
                                     reserves=True),
    Admission.NONE: AdmissionMode((queue_limits, driver_slot, cluster_driver_room, free_here)),
}


def mode_of(queue: Queue) -> AdmissionMode:
    return ADMISSION_MODES[queue.admission]


def gang_whole(view: LeafView, head: AppSpec, path: tuple[Queue, ...], room: Room) -> Wait | None:
    return gang_wait(room.gangs.get(head.app_id), head)


# A gang at its queue's head (``gang.checks``): its mode's limits, then its reservation is its
# room (the mode's room checks are not run) under the queues' max_cores.
_GANG_KEEPS = (queue_limits, starting_limit, driver_slot)
GANG_CHECKS: dict[Admission, tuple[Check, ...]] = {
    mode: (*(c for c in m.checks if c in _GANG_KEEPS), under_max_cores, gang_whole)
    for mode, m in ADMISSION_MODES.items()}


def defer_reason(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                 room: Room) -> Wait | None:
    return verdict(view, head, path, room)[0]


def verdict(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
            room: Room) -> tuple[Wait | None, bool]:
    """The first check that fails (``defer_reason``), and for a head that passes them all
    whether ``running_demand`` let it in ahead (``demand_verdict``, asked once)."""
    q = view.queue
    checks = mode_of(q).checks if head.gang is None else GANG_CHECKS[q.admission]
    ahead = False
    for check in checks:
        if check is running_demand:
            reason, ahead = demand_verdict(view, head, room)
        else:
            reason = check(view, head, path, room)
        if reason is not None:
            return reason, False
    return None, ahead
