"""Driver admission: which queued applications may launch their driver now.

Order of pending apps inside a leaf queue: the engine's one rank (``rank``): 1. priority,
highest first (an update re-orders at once); 2. submission sequence; 3. application id.

A queue is strict head-of-line: if its head cannot start, nothing behind it in that queue does
(a small late driver must not starve a big early one). Queues are independent tenants, so a
blocked queue does not hold back the others.

Across queues the next head is found by walking the tree from the root (YuniKorn's parent
queues are fair). At each parent the child queue is chosen by:
  1. usage / weight, lowest first - usage is the cores of executors its apps hold or were
     granted plus the cores of their drivers (wherever a driver runs: a queue of client-mode
     drivers must not take every driver slot just because its usage in the cluster is zero);
  2. the rank of the head the walk would pick inside that child.

Checks on a head, in order; the first that fails defers the queue with that reason. Which checks
a queue runs is its admission mode's row in ``ADMISSION_MODES``:
  1. ``queue_limits``: ``max_running_apps`` of every queue on its path, root first;
  2. ``starting_limit`` (``stateaware``): fewer than ``starting_limit`` apps of the leaf are
     STARTING (YuniKorn's StateAware: one app starting at a time, the next one only when it
     has an executor or its ``starting_timeout`` passed);
  3. ``driver_slot``: a client-mode driver needs a free driver slot on the scheduler host;
  4. ``driver_share`` (``demand``): the leaf's in-cluster drivers with this one hold at most
     its ``max_driver_fraction`` of the cores (and memory) the leaf reaches - its share of the
     cluster by weight among the leaves that have apps (``weight_shares``: an idle queue's
     share goes to the busy ones), cut by ``max_cores`` on its path - unless the leaf runs no
     in-cluster driver yet: it may always start one. YARN's ``maximum-am-resource-percent``
     (per leaf queue, proportional to its capacity, which grows into idle capacity, and its
     "at least one application master" rule). Drivers admitted while a queue reached more
     stay when a sibling becomes busy; they end with their apps, and ``reserve_room`` keeps
     every admitted app's first executors possible meanwhile. A driver that *works alone*
     (``books.works_alone``: past its starting timeout, it never held an executor and asks for
     none) is not counted: the fraction bounds cores spent on drivers that wait for executors,
     and such a driver waits for nothing - its cores are its app's work, as an executor's are
     (the StateAware fallback's reading of a driver that does not ask). It counts again when
     it asks. Without this, six such drivers on 16 cores kept every ordinary app out until
     they ended (probe ``driver-only-6``: 494 s, now 428 s, ``reserve`` 451 s).
     The fraction may be passed while the leaf's admitted apps and the head, each holding its
     driver and every executor it may hold (``books.whole``: maxExecutors, slots.max), fit
     together in what the leaf reaches: then no executor of theirs can be short of a core
     because of their drivers, which is all the fraction is for. A fixed fraction cannot fit
     every app shape: where apps may use much more than their driver, 0.4 keeps executors
     the room they would use; tiny apps (a 1-core driver per 1-core executor, the JVM apps of
     the real-cluster burst, docs/results.md) are best packed with drivers on half the cores,
     and 0.4 of 6 cores ran 2 of them where 3 fit (``burst-tiny``: 100 s, now 78 s). One app
     without a cap keeps its queue at the fraction;
  5. ``cluster_driver_room`` (``stateaware``, ``none``): an in-cluster driver needs its cores
     and memory free in the cluster now - not held or granted to executors, and not promised
     to a ``reserve`` app (drivers wait for free cores like a standalone master's waiting
     drivers; a reservation must not be eaten by another driver);
  6. ``reserve_room`` (``reserve``, ``demand``): the driver (if in-cluster) plus
     ``reservation()`` executors fit in what is left of the capacity after every admitted
     app's in-cluster driver and floor, and the executors fit under ``max_cores`` of every
     queue on the path beside the floors already there. Under ``reserve`` arbitration gives
     the reservation before anything else, taking elastic executors back, so every admitted
     app gets its first executors: no deadlock, and no StateAware timeout stall behind a
     driver that pre-processes for long;
  7. ``running_demand`` (``demand``): the same driver and first executors also fit beside what
     the leaf's admitted apps of the head's priority or higher still want above their floors
     (``needs``: their reported demand; an app still STARTING without an executor wants its
     first executors). The head is admitted only into room its queue's running apps do not
     need: work-conserving. In a ``fairshare`` leaf their need counts only up to what they
     keep with the head in (``_kept_beside``): arbitration will give the head its weighted
     share anyway, so holding it back while the others want more than theirs would only
     delay it - notebooks of equal priority share at once. In ``fifo`` and ``priority``
     leaves a head of equal priority gets what the running apps leave, so their whole need
     holds it back (its driver would otherwise sit idle beside them). One exception, the
     *driver ahead*: if only its first executors lack room, the head may still start when
     its driver alone fits beside that need and no app of its leaf that started ahead is still
     STARTING without an executor (``AppRecord.ahead``, ``books.Totals.ahead``): at most one
     per leaf. No admission can know which driver will pre-process for minutes before it asks;
     one started ahead does that while the apps before it run, and if it asks at once it
     costs one driver's cores (or slot) idle until room frees - bounded, where holding every
     pre-processor back put its whole pre-processing on the critical path (probe
     ``preprocessing-half-fifo``: 1.15 x the best mode, now 0.98; its long pre-processor
     started 50 s late behind short apps that wanted every core). Its first executors still
     fit beside every driver and floor (``reserve_room``) and the fraction still holds, so
     nothing deadlocks;
  8. ``one_launch`` (``demand``): a *driver-heavy* head (``launching.driver_heavy``: its
     in-cluster driver has at least the cores of every executor it may hold - a tiny app whose
     life is mostly JVM starts) waits while a driver-heavy app of its leaf, of its priority or
     higher, is *launching*: launched, its driver not reported up (``DriverStarted``), no
     executor held (``launching.LaunchBook``). Measured on the real 2-CPU machine
     (docs/results.md, "With apps that fit whole"): ``demand`` admitted 3 such apps in one
     cycle, so 3 driver JVMs and then 3 executor JVMs started together on 2 CPUs and the apps
     ran in waves - 87.2 s against ``stateaware``'s 71.1 s, whose one-at-a-time starts spread
     the JVM starts (each app had its executor 3-6 s after launch). The wait ends when the
     driver is up, not when it has executors, so a driver that pre-processes holds nobody back
     (StateAware's stall); a higher-priority head never waits behind a lower one's launch; a
     start never reported stops counting when the app leaves STARTING at its
     ``starting_timeout``. Only driver-heavy apps: the simulator has no CPU to contend for,
     and spacing every in-cluster driver cost each spaced one a whole driver start (up to 1.21
     x the best mode: ``burst-small``, ``preprocessing-mixed``, ``driver-fails``,
     ``preprocessing-half``), while apps that may use more than their driver are paced by the
     fraction and the running demand already; driver-heavy ones pass both (they fit whole and
     want only what they hold), so a burst of them is where launches pile up.
``none`` runs checks 1, 3 and 5 only: what stock Spark does.

Why ``demand`` is a new mode and the default, not a fix of ``reserve``: the simulator shows
each older mode losing badly on some workload (``benchmarks/admission_table.py``,
docs/admission.md). ``stateaware`` starts one driver at a time and stalls for a whole
``starting_timeout`` behind a driver that pre-processes or never asks for executors;
``reserve`` admits a new driver as soon as the reservations fit - a reservation is met by the
app's first executor, so under a burst drivers pile up until each app crawls on one executor
(issue 14: 15 drivers on 16 cores, 11 % utilisation) - and its reservations sit idle while a
driver pre-processes. ``demand`` keeps what each does well and drops what hurts: it admits as
many drivers at once as the room allows (like ``reserve``), but counts the running apps'
reported demand, not only their floors, so a burst stops at the apps that can use the cores
(like ``stateaware``'s pacing); it sets no cores aside for a starting app (others use them
until it asks), and it needs no reservation to rule out the deadlock: drivers waiting for
executors hold at most ``max_driver_fraction`` (default 0.4) of the cores - more only while
their apps would all fit whole - and a head is admitted only with room for its first
executors beside every driver and floor, so executors always have room and the running apps
finish. A starting app's first executor is counted as a need until it has one or its
``starting_timeout`` passes (the StateAware fallback: a driver that never asks for executors
stops counting then, as a need and toward the fraction). Priorities still jump the queue:
only apps of the head's priority or higher hold it back, lower ones give executors up by
reclaim. Another queue's demand never holds a head back (queues are tenants; arbitration
shares between them).
``reserve`` stays as it was, with ``stateaware`` and ``none``, for comparison.

Every check only gets harder as a cycle admits apps (counts grow, room shrinks), so a queue
whose head fails at the start of the cycle is deferred for the whole cycle with that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ..model import Admission, AppSpec, Policy, Queue, Resources
from .books import AppRecord, whole
from .budget import ADMISSION_SLICE
from .launching import driver_heavy
from .rank import Rank, rank
from .tree import QueueTree


def reservation(spec: AppSpec) -> int:
    """Executors a ``reserve`` queue sets aside for an app until it holds them:
    ``max(minExecutors, 1)``, but never more than the app may hold (maxExecutors, slots.max)."""
    n = max(spec.min_executors, 1)
    cap = spec.executor_cap
    return n if cap is None else min(n, cap)


def admitted_floor(spec: AppSpec, queue: Queue) -> int:
    """The floor an app has right after admission (``AppRecord.floor`` from then on)."""
    n = reservation(spec) if mode_of(queue).reserves else spec.min_executors
    cap = spec.executor_cap
    return n if cap is None else min(n, cap)


@dataclass(slots=True)
class LeafView:
    """One leaf queue as admission sees it this cycle.

    ``pending`` is head first; ``priority_of`` gives the live priority of a pending app.
    """

    queue: Queue
    pending: Sequence[AppSpec]
    priority_of: Mapping[str, int]
    starting: int = 0


def weight_shares(root: Queue, active: Collection[str] | None = None) -> dict[str, float]:
    """Each leaf's fraction of the cluster by weight: the product, from the root down, of its
    weight over the weights of its siblings (YARN's absolute capacity). With ``active`` (the
    leaves that have apps, admitted or queued) only busy siblings share: an idle queue's part
    goes to the busy ones, as YARN's queues grow elastically into idle capacity - otherwise a
    lone busy queue among many idle ones could start one driver at a time on an idle cluster."""
    out: dict[str, float] = {}

    def busy(q: Queue) -> bool:
        return q.name in active if q.is_leaf else any(busy(c) for c in q.children)

    def walk(q: Queue, share: float) -> None:
        if q.is_leaf:
            out[q.name] = share
            return
        sharing = [c for c in q.children if active is None or busy(c)] or q.children
        names = {c.name for c in sharing}
        total = sum(c.weight for c in sharing)
        for c in q.children:
            walk(c, share * c.weight / total if c.name in names else 0.0)

    walk(root, 1.0)
    return out


def _no_need(leaf: str, priority: int) -> Resources:
    return Resources()


def _no_weight(leaf: str, priority: int) -> int:
    return 0


def _none_launching(leaf: str, priority: int) -> str | None:
    return None


@dataclass
class Room:
    """What is free for new drivers this cycle (working copy: admission spends it).

    Per-queue figures are keyed by every queue name (parents included), ``drivers_in``,
    ``whole_in``, ``unbounded_in``, ``need_admitted``, ``weight_admitted`` and
    ``weight_share`` by leaf. ``launching_of(leaf, p)``: a driver-heavy app of the leaf, of
    priority p or higher, launched and its driver not up yet (``launching.LaunchBook``), read
    as the cycle starts; ``launched_in``: the first driver-heavy app admitted into it since.
    ``ahead_in``: the leaf's apps started ahead still without an executor (``running_demand``),
    this cycle's included. ``need_of(leaf, p)``:
    what the leaf's admitted apps of priority p or higher want above their floors
    (``needs.NeedBook.need_at_or_above``), read as the cycle starts; ``weight_of(leaf, p)``:
    those apps' ``fairshare`` weight (``NeedBook.weight_at_or_above``); ``need_admitted`` and
    ``weight_admitted``: the first executors and the weights of the apps admitted since, which
    the book counts from the next cycle on.
    """

    free: Resources  # capacity - in-cluster drivers - executors held, granted or reserved
    uncommitted: Resources  # capacity - in-cluster drivers - floors of admitted apps
    driver_slots_free: int
    admitted_in: dict[str, int] = field(default_factory=dict)  # queue -> admitted apps
    usage_cores: dict[str, float] = field(default_factory=dict)  # queue -> cores used
    floor_cores_in: dict[str, int] = field(default_factory=dict)  # queue -> floors' executor cores
    capacity: Resources = Resources()  # the cluster's, for ``max_driver_fraction``
    drivers_in: dict[str, Resources] = field(default_factory=dict)  # leaf -> in-cluster drivers
    whole_in: dict[str, Resources] = field(default_factory=dict)  # leaf -> ``books.whole`` sum
    unbounded_in: dict[str, int] = field(default_factory=dict)  # leaf -> apps with no cap
    need_of: Callable[[str, int], Resources] = _no_need
    need_admitted: dict[str, Resources] = field(default_factory=dict)  # leaf -> this cycle's
    weight_of: Callable[[str, int], int] = _no_weight
    weight_admitted: dict[str, int] = field(default_factory=dict)  # leaf -> this cycle's
    weight_share: dict[str, float] = field(default_factory=dict)  # leaf -> ``weight_shares``
    launching_of: Callable[[str, int], str | None] = _none_launching
    launched_in: dict[str, str] = field(default_factory=dict)  # leaf -> this cycle's first
    ahead_in: dict[str, int] = field(default_factory=dict)  # leaf -> started ahead, waiting


@dataclass(frozen=True)
class Plan:
    admit: tuple[str, ...]  # app ids, in the order they were admitted
    waiting: dict[str, str]  # leaf queue name -> why its head waits
    ahead: frozenset[str] = frozenset()  # of ``admit``: admitted ahead (``running_demand``)


Check = Callable[["LeafView", AppSpec, tuple[Queue, ...], "Room"], str | None]


def queue_limits(view: LeafView, head: AppSpec, path: tuple[Queue, ...], room: Room) -> str | None:
    for node in path:
        limit = node.max_running_apps
        if limit is not None and room.admitted_in.get(node.name, 0) >= limit:
            return f"queue {node.name} runs {limit} apps (max_running_apps {limit})"
    return None


def starting_limit(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                   room: Room) -> str | None:
    q = view.queue
    if view.starting >= q.starting_limit:
        return f"{view.starting} app(s) starting in {q.name} (starting_limit {q.starting_limit})"
    return None


def driver_slot(view: LeafView, head: AppSpec, path: tuple[Queue, ...], room: Room) -> str | None:
    if not head.driver_in_cluster and room.driver_slots_free < 1:
        return "every driver slot is in use"
    return None


def cluster_driver_room(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                        room: Room) -> str | None:
    if head.driver_in_cluster and not head.driver.fits_in(room.free):
        return (
            f"no room for the driver in the cluster (needs {head.driver.cores} cores/"
            f"{head.driver.mem_mib} MiB, free {room.free.cores}/{room.free.mem_mib})"
        )
    return None


def reserve_room(view: LeafView, head: AppSpec, path: tuple[Queue, ...], room: Room) -> str | None:
    n = reservation(head)
    if not _commitment(head).fits_in(room.uncommitted):
        return f"no room to reserve the driver and {n} executor(s) beside the admitted apps"
    cores = n * head.executor.cores
    for node in path:
        cap = node.max_cores
        if cap is not None and room.floor_cores_in.get(node.name, 0) + cores > cap:
            return f"no room to reserve {n} executor(s) under queue {node.name} (max_cores {cap})"
    return None


def driver_share(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                 room: Room) -> str | None:
    if not head.driver_in_cluster:
        return None
    q = view.queue
    held = room.drivers_in.get(q.name, Resources())
    if held.cores <= 0 and held.mem_mib <= 0:
        return None  # a queue running no in-cluster driver may always start one (YARN's rule)
    share = room.weight_share.get(q.name, 1.0)
    reach = room.capacity.cores * share
    for node in path:
        if node.max_cores is not None:
            reach = min(reach, node.max_cores)
    limit = q.max_driver_fraction
    after = held + head.driver
    mem_reach = room.capacity.mem_mib * share
    if after.cores <= limit * reach and after.mem_mib <= limit * mem_reach:
        return None
    if _all_fit_whole(q.name, head, reach, mem_reach, room):
        return None
    return (
        f"in-cluster drivers of {q.name} hold {held.cores} of the {reach:g} cores it"
        f" reaches (max_driver_fraction {limit:g})"
    )


def _all_fit_whole(leaf: str, head: AppSpec, reach: float, mem_reach: float,
                   room: Room) -> bool:
    """Whether the leaf's admitted apps and the head, each holding its driver and every
    executor it may hold (``books.whole``), fit together in what the leaf reaches."""
    most = whole(head)
    if most is None or room.unbounded_in.get(leaf, 0):
        return False
    held = room.whole_in.get(leaf, Resources())
    return held.cores + most[0] <= reach and held.mem_mib + most[1] <= mem_reach


def running_demand(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                   room: Room) -> str | None:
    need = _need_beside(view, head, room)
    if _demand_fits(head, need, room) or _may_go_ahead(view, head, need, room):
        return None
    q = view.queue.name
    return (
        f"the running apps of {q} want the room (demand of {need.cores} more cores"
        f" beside the floors; {room.uncommitted.cores} uncommitted)"
    )


def _need_beside(view: LeafView, head: AppSpec, room: Room) -> Resources:
    """What the leaf's admitted apps of the head's priority or higher want above their floors
    (in a ``fairshare`` leaf: up to what they keep with the head in)."""
    q = view.queue.name
    priority = view.priority_of[head.app_id]
    need = room.need_of(q, priority) + room.need_admitted.get(q, Resources())
    if view.queue.policy is Policy.FAIRSHARE and need != Resources():
        weight = room.weight_of(q, priority) + room.weight_admitted.get(q, 0)
        need = _kept_beside(head, priority, need, weight, room)
    return need


def _demand_fits(head: AppSpec, need: Resources, room: Room) -> bool:
    """The head's driver and first executors fit beside the running apps' ``need``
    (``_need_beside``)."""
    return (_commitment(head) + need).fits_in(room.uncommitted)


def _may_go_ahead(view: LeafView, head: AppSpec, need: Resources, room: Room) -> bool:
    """The head may start ahead of the room for its first executors: its driver alone fits
    beside the running apps' need, and no app of its leaf started ahead still waits for its
    first executor (one per leaf)."""
    if room.ahead_in.get(view.queue.name, 0):
        return False
    driver = head.driver if head.driver_in_cluster else Resources()
    return (driver + need).fits_in(room.uncommitted)


def _kept_beside(head: AppSpec, priority: int, need: Resources, weight: int,
                 room: Room) -> Resources:
    """In a ``fairshare`` leaf: the part of the running apps' ``need`` they keep with the head
    admitted beside them. Arbitration would give the head its weighted share of the room left
    for executors (weight = priority), taken from theirs, so their need counts only up to their
    part, ``weight / (weight + priority)`` of that room (rounded up); the head is then held
    back only when its own share could not hold its first executors. Each app's real share is
    ``min(its need, its part)``; taking the part of the sum instead is never smaller, so never
    lets in a head that the exact division would keep out."""
    driver = head.driver if head.driver_in_cluster else Resources()
    left = room.uncommitted - driver
    if weight <= 0 or left.cores <= 0:
        return need
    total = weight + priority

    def part(x: int) -> int:
        return -(-max(x, 0) * weight // total)  # ceil, in whole cores and MiB

    return Resources(min(need.cores, part(left.cores)), min(need.mem_mib, part(left.mem_mib)))


def one_launch(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
               room: Room) -> str | None:
    if not driver_heavy(head):
        return None
    q = view.queue.name
    other = room.launched_in.get(q) or room.launching_of(q, view.priority_of[head.app_id])
    if other is None:
        return None
    return f"the driver of {other} is launching (one driver-heavy app of {q} at a time)"


@dataclass(frozen=True)
class AdmissionMode:
    """What a leaf queue's admission mode checks, and what it promises an admitted app.

    ``reserves``: an admitted app holds a reservation of ``reservation()`` executors until it
    has them; arbitration serves it before anything else (its floor is *guaranteed*) and
    ``free`` room for other drivers excludes it.
    """

    checks: tuple[Check, ...]
    reserves: bool = False


ADMISSION_MODES: dict[Admission, AdmissionMode] = {
    Admission.DEMAND: AdmissionMode(
        (queue_limits, driver_slot, driver_share, reserve_room, running_demand, one_launch)),
    Admission.STATEAWARE: AdmissionMode(
        (queue_limits, starting_limit, driver_slot, cluster_driver_room)),
    Admission.RESERVE: AdmissionMode((queue_limits, driver_slot, reserve_room), reserves=True),
    Admission.NONE: AdmissionMode((queue_limits, driver_slot, cluster_driver_room)),
}


def mode_of(queue: Queue) -> AdmissionMode:
    return ADMISSION_MODES[queue.admission]


def _defer_reason(view: LeafView, head: AppSpec, path: tuple[Queue, ...], room: Room) -> str | None:
    for check in mode_of(view.queue).checks:
        reason = check(view, head, path, room)
        if reason is not None:
            return reason
    return None


def _commitment(spec: AppSpec) -> Resources:
    driver = spec.driver if spec.driver_in_cluster else Resources()
    return driver + spec.executor.times(reservation(spec))


def plan_admissions(root: Queue, leaves: Sequence[LeafView], room: Room,
                    slice_apps: int | None = None) -> Plan:
    """Admit heads in fair order until every queue with pending apps is deferred or empty, or
    ``slice_apps`` apps are admitted (``budget``): then every queue still in the walk waits
    with ``budget.ADMISSION_SLICE`` and the next call continues the same walk.

    Pure apart from spending ``room`` and the views' ``starting`` (the caller's working copies).
    Cost: O(queues) to start, then O(depth x fanout) per admitted or deferred head.
    """
    tree = QueueTree.of(root)
    views = {v.queue.name: v for v in leaves if len(v.pending)}
    nxt = dict.fromkeys(views, 0)
    waiting: dict[str, str] = {}
    for name in sorted(views):
        view = views[name]
        reason = _defer_reason(view, view.pending[0], tree.path[name], room)
        if reason is not None:
            waiting[name] = reason
            del views[name]

    best: dict[str, str | None] = {}  # queue -> the leaf the walk picks below it, if any
    heads: dict[str, Rank] = {}  # leaf -> its head's rank, until the head changes

    def head_key(leaf: str) -> Rank:
        key = heads.get(leaf)
        if key is None:
            view = views[leaf]
            head = view.pending[nxt[leaf]]
            key = heads[leaf] = rank(view.priority_of[head.app_id], head.seq, head.app_id)
        return key

    def child_key(name: str) -> tuple:
        share = room.usage_cores.get(name, 0.0) / tree.node[name].weight
        return (share, head_key(best[name]))

    def settle(name: str) -> None:
        kids = tree.children[name]
        if not kids:
            best[name] = name if name in views else None
            return
        live = [c for c in kids if best[c] is not None]
        best[name] = best[min(live, key=child_key)] if live else None

    for name in tree.postorder:
        settle(name)
    admitted: list[str] = []
    ahead: set[str] = set()
    while best[root.name] is not None:
        if slice_apps is not None and len(admitted) >= slice_apps:
            for name in views:
                waiting[name] = ADMISSION_SLICE.format(n=slice_apps)
            break
        name = best[root.name]
        view = views[name]
        head = view.pending[nxt[name]]
        path = tree.path[name]
        reason = _defer_reason(view, head, path, room)
        if reason is not None:
            waiting[name] = reason
            del views[name]
        else:
            admitted.append(head.app_id)
            if (view.queue.admission is Admission.DEMAND
                    and not _demand_fits(head, _need_beside(view, head, room), room)):
                ahead.add(head.app_id)  # ``running_demand`` let it in ahead
                room.ahead_in[name] = room.ahead_in.get(name, 0) + 1
            _spend(room, view, head, path)
            nxt[name] += 1
            heads.pop(name, None)
            if nxt[name] >= len(view.pending):
                del views[name]
        for node in reversed(path):
            settle(node.name)
    return Plan(tuple(admitted), waiting, frozenset(ahead))


def _spend(room: Room, view: LeafView, head: AppSpec, path: tuple[Queue, ...]) -> None:
    view.starting += 1
    floor = admitted_floor(head, view.queue)
    driver = head.driver if head.driver_in_cluster else Resources()
    reserve = mode_of(view.queue).reserves
    for node in path:
        room.admitted_in[node.name] = room.admitted_in.get(node.name, 0) + 1
        room.usage_cores[node.name] = room.usage_cores.get(node.name, 0.0) + head.driver.cores
        room.floor_cores_in[node.name] = (
            room.floor_cores_in.get(node.name, 0) + floor * head.executor.cores
        )
    if not head.driver_in_cluster:
        room.driver_slots_free -= 1
    leaf = view.queue.name
    room.drivers_in[leaf] = room.drivers_in.get(leaf, Resources()) + driver
    if driver_heavy(head):
        room.launched_in.setdefault(leaf, head.app_id)
    most = whole(head)
    if most is None:
        room.unbounded_in[leaf] = room.unbounded_in.get(leaf, 0) + 1
    else:
        room.whole_in[leaf] = room.whole_in.get(leaf, Resources()) + Resources(*most)
    first = head.executor.times(max(reservation(head) - floor, 0))
    room.need_admitted[leaf] = room.need_admitted.get(leaf, Resources()) + first
    if first != Resources():  # an app with a need has a fairshare weight (``NeedBook``)
        room.weight_admitted[leaf] = (room.weight_admitted.get(leaf, 0)
                                      + view.priority_of[head.app_id])
    promised = head.executor.times(floor) if reserve else Resources()
    room.free = room.free - driver - promised
    room.uncommitted = room.uncommitted - driver - head.executor.times(floor)


class PendingSpecs:
    """A read-only sequence of AppSpec over a queue's sorted keys (no copy of 100k entries)."""

    def __init__(self, keys: Sequence[Rank], apps: dict[str, AppRecord]):
        self._keys = keys
        self._apps = apps

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i: int) -> AppSpec:
        return self._apps[self._keys[i][2]].spec


class PriorityOf:
    def __init__(self, apps: dict[str, AppRecord]):
        self._apps = apps

    def __getitem__(self, app_id: str) -> int:
        return self._apps[app_id].priority
