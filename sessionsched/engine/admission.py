"""Driver admission: which queued applications may launch their driver now.

Order of pending apps inside a leaf queue: the engine's one rank (``rank``): 1. priority,
highest first (an update re-orders at once); 2. submission sequence; 3. application id.

A queue is strict head-of-line for the room its head waits for: if its head cannot start,
nothing behind it in that queue that needs that room does (a small late driver must not starve
a big early one); an app that needs none of it - a notebook behind a driver waiting for the
scheduler's host - is looked at as if the head were not there (``host_room``). Queues are
independent tenants, so a blocked queue does not hold back the others. One exception: an app
the cluster as it is now cannot hold at all (``placement.held_now``: its driver or an executor
larger than any worker left, its first executors more than the workers hold or above a
``max_cores`` now in force) is held aside with ``does_not_fit_now`` and the apps behind it are
looked at as if it were not there - head-of-line is for an app that will fit once room frees,
and no room freeing makes this one fit. It is looked at again every cycle and starts in its
turn once the cluster can hold it (a worker back); a kill, or its ``max_wait``, ends it first.

Across queues the next head is found by walking the tree from the root (YuniKorn's parent
queues are fair). At each parent the child queue is chosen by:
  1. usage / weight, lowest first - usage is the cores of executors its apps hold or were
     granted plus the cores of their drivers (wherever a driver runs: a queue of client-mode
     drivers must not take every driver slot just because its usage in the cluster is zero),
     plus, for a queue with ``usage_half_life``, its decayed past usage (``Room.past_cores``,
     ``arbitration.decay``);
  2. the rank of the head the walk would pick inside that child.

A head is admitted when it passes every check of its queue's admission mode
(``admission_checks``: the checks in order, and the modes ``demand`` - the default -,
``stateaware``, ``reserve`` and ``none``); the first check that fails defers its queue for the
cycle with that reason. Each admission spends the cycle's ``Room`` (``room.spend``), so the next
heads see it. At most ``slice_apps`` apps are admitted per call (``budget``). What each mode is
for and what it measured: docs/design/admission.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from ..model import AppSpec, Queue, Resources
from .admission_checks import (  # noqa: F401 - mode_of, reservation, ADMISSION_MODES: re-exported
    ADMISSION_MODES,
    admitted_floor,
    defer_reason,
    mode_of,
    reservation,
    verdict,
)
from .budget import admission_slice
from .gang.book import Hold
from .host_room import CLUSTER, room_of, rooms_needed
from .ledger import AppRecord
from .placement import FreeNow, Workers, held_now
from .rank import Rank, rank
from .room.spend import spend
from .tree import QueueTree
from .waits import Wait, WaitCode

if TYPE_CHECKING:
    from .room.limit_waits import LimitWaits
    from .room.shut_out import ShutOut


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


_NONE = Resources()


@dataclass
class Room:
    """What is free for new drivers this cycle (working copy: admission spends it).

    Per-queue figures are keyed by every queue name (parents included), ``drivers_in``,
    ``whole_in``, ``unbounded_in``, ``need_admitted``, ``weight_admitted`` and
    ``weight_share`` by leaf. ``ahead_in``: the leaf's apps started ahead still without an
    executor (``running_demand``), this cycle's included; ``offered_later(app)``: whether a
    cluster stepping after this one holds a copy of it (``free_here``; never with one
    cluster), or the reason it is that cluster's by its queue's own placement rule (a
    ``str``). ``need_of(leaf, p)``: what the
    leaf's admitted apps of priority p or higher want above their floors
    (``needs.NeedBook.need_at_or_above``), read as the cycle starts; ``weight_of(leaf, p)``:
    those apps' ``fairshare`` weight (``NeedBook.weight_at_or_above``); ``need_admitted`` and
    ``weight_admitted``: the first executors and the weights of the apps admitted since, which
    the book counts from the next cycle on.
    """

    free: Resources  # capacity - in-cluster drivers - executors held, granted or reserved
    uncommitted: Resources  # capacity - in-cluster drivers - floors of admitted apps
    driver_slots_free: int
    driver_slots: int | None = 0  # the scheduler host's cap (None: none), for the reasons
    # The host's memory for its drivers (``host_room``; None: not measured), what they leave.
    host_room: Resources | None = None
    host_free: Resources | None = None
    host_drivers: int = 0  # drivers on the scheduler's host
    admitted_in: dict[str, int] = field(default_factory=dict)  # queue -> admitted apps
    elsewhere: Mapping[str, int] = field(default_factory=dict)  # ... on other clusters (theirs)
    offered_later: Callable[[str], bool | str] = lambda app_id: False
    # capped queue -> (its max_cores, the floors on the other clusters): ``clusters.cores``
    max_cores_left: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    usage_cores: dict[str, float] = field(default_factory=dict)  # queue -> cores used
    floor_cores_in: dict[str, int] = field(default_factory=dict)  # queue -> floors' executor cores
    capacity: Resources = Resources()  # the cluster's, for ``max_driver_fraction``
    drivers_in: dict[str, Resources] = field(default_factory=dict)  # leaf -> in-cluster drivers
    whole_in: dict[str, Resources] = field(default_factory=dict)  # leaf -> ``ledger.whole`` sum
    unbounded_in: dict[str, int] = field(default_factory=dict)  # leaf -> apps with no cap
    need_of: Callable[[str, int], Resources] = lambda leaf, priority: _NONE
    need_admitted: dict[str, Resources] = field(default_factory=dict)  # leaf -> this cycle's
    weight_of: Callable[[str, int], int] = lambda leaf, priority: 0
    weight_admitted: dict[str, int] = field(default_factory=dict)  # leaf -> this cycle's
    weight_share: dict[str, float] = field(default_factory=dict)  # leaf -> ``weight_shares``
    ahead_in: dict[str, int] = field(default_factory=dict)  # leaf -> started ahead, waiting
    workers: Workers | None = None  # the cluster's (``placement``); None: no held_now check
    free_now: FreeNow | None = None  # each worker's free room (``placement.free_now``)
    past_cores: Mapping[str, float] = field(default_factory=dict)  # queue -> decayed usage
    # Reserving gangs (``gang.book``): app id -> its hold. ``free`` is net of every hold,
    # ``uncommitted`` of every gang's whole need; a gang admitted gets its own back (``spend``).
    gangs: Mapping[str, Hold] = field(default_factory=dict)
    limit_waits: LimitWaits | None = None  # heads kept waiting for a count (``room``)
    shut_out: ShutOut | None = None  # queues whose apps all need a room waited for (``room``)
    # leaf -> queued apps needing no cluster room (``room.heads``; None: not counted)
    off_cluster_in: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Plan:
    admit: tuple[str, ...]  # app ids, in the order they were admitted
    waiting: dict[str, Wait]  # leaf queue name -> why its head waits
    ahead: frozenset[str] = frozenset()  # of ``admit``: admitted ahead (``running_demand``)
    held: dict[str, Wait] = field(default_factory=dict)  # app id -> ``does_not_fit_now``


def plan_admissions(root: Queue, leaves: Sequence[LeafView], room: Room,
                    slice_apps: int | None = None,
                    kept: Mapping[str, tuple[AppSpec, Wait]] | None = None,
                    view_of: Callable[[str], LeafView] | None = None,
                    slice_of: int | None = None) -> Plan:
    """Admit heads in fair order until every queue with pending apps is deferred or empty, or
    ``slice_apps`` apps are admitted (``budget``): then every queue still in the walk waits
    with ``budget.ADMISSION_SLICE`` (of ``slice_of`` apps: the whole slice, of which
    ``slice_apps`` may be what is left) and the next call continues the same walk.

    A deferred queue's wait is the one its head has once the walk is over: if apps were
    admitted after it was deferred, its checks run again on the room they left (the checks
    only get harder as a cycle admits, so it still waits; the reason's numbers are then those
    of the room readers see, and an earlier check may now be the first to fail).

    ``kept``: leaves without a view whose head waits for a count, as ``room.limit_waits`` kept
    it (their head and wait); ``view_of`` gives one's view should its checks run again.

    Pure apart from spending ``room`` and the views' ``starting`` (the caller's working copies).
    Cost: O(queues) to start, then O(depth x fanout) per admitted or deferred head, then once
    more per queue deferred before an admission that may change its wait (``_said_again``);
    plus one memoised ``held_now`` per head looked at (apps held aside are looked at every
    cycle).
    """
    tree = QueueTree.of(root)
    views = {v.queue.name: v for v in leaves if len(v.pending)}
    nxt = dict.fromkeys(views, 0)
    waiting: dict[str, Wait] = {}
    held: dict[str, Wait] = {}
    at: dict[str, AppSpec] = {}  # leaf -> its head, as ``pass_held`` last found it
    shut: dict[str, frozenset[str]] = {}  # leaf -> the rooms apps ahead in it wait for

    def pass_held(name: str) -> bool:
        """Move the leaf's head past the apps the cluster cannot hold now, and past those that
        need a room an app ahead of them waits for (``host_room``); False if none is left."""
        view, path, rooms, off = views[name], tree.path[name], shut.get(name), room.off_cluster_in
        if rooms and CLUSTER in rooms and off is not None and not off.get(name, 0):
            nxt[name] = len(view.pending)  # all need the cluster's room: none is read
            return False
        i = nxt[name]
        # Read in one pass from the leaf's place: past a head waiting for the cluster's room a
        # busy cycle may go through its whole queue here, in every cluster's engine; and what
        # it found is kept (``room.shut_out``), so the next cycles need not read it again.
        first, known = None, room.shut_out
        for head in _specs_from(view.pending, i):
            if rooms and first is None and known is not None:
                first = rank(view.priority_of[head.app_id], head.seq, head.app_id)
                if known.all_need(name, first, rooms):
                    nxt[name] = len(view.pending)
                    return False
            if rooms and rooms & rooms_needed(head):
                i += 1  # behind an app waiting for a room it needs too
                continue
            first = known = None  # one that needs none of them: nothing to keep
            wait = None if room.workers is None else held_now(head, path, room.workers)
            if wait is None:
                nxt[name] = i
                at[name] = head
                return True
            held[head.app_id] = wait
            i += 1
        if first is not None and known is not None:
            known.found(name, first, rooms)  # type: ignore[arg-type]
        nxt[name] = i
        return False

    deferred: dict[str, tuple[LeafView, AppSpec, int]] = {}  # leaf -> (view, head, ...)

    def defer(name: str, head: AppSpec, reason: Wait, before: int) -> bool:
        """The leaf's app ``head`` waits: the leaf's first such app gives the leaf its wait.
        True if an app behind it that needs none of the rooms waited for is left to look at."""
        if name not in waiting:
            waiting[name] = reason
            deferred[name] = (views[name], head, before)
        for_room = room_of(reason)
        if for_room is None:
            return False
        shut[name] = shut.get(name, frozenset()) | {for_room}
        nxt[name] += 1
        heads.pop(name, None)
        return pass_held(name)

    heads: dict[str, Rank] = {}  # leaf -> its head's rank, until the head changes
    limits, kept = room.limit_waits, kept or {}
    # The kept waits as ``defer`` would have them (their entries in ``deferred``: if needed).
    waiting.update({name: k[1] for name, k in kept.items()})
    for name in sorted(views):
        view, path = views[name], tree.path[name]
        if not pass_held(name):
            del views[name]
            continue
        while (reason := defer_reason(view, at[name], path, room)) is not None:
            if limits is not None and nxt[name] == 0 and name not in waiting:
                limits.keep(name, at[name], reason)
            if not defer(name, at[name], reason, 0):
                del views[name]
                break

    # queue -> the leaf the walk picks below it, if any: none below a queue with no leaf left
    # in the walk (most queues, when most heads wait for a count), so only the paths of those
    # leaves are settled.
    best: dict[str, str | None] = dict.fromkeys(tree.postorder)

    def head_key(leaf: str) -> Rank:
        key = heads.get(leaf)
        if key is None:
            head = at[leaf]
            key = heads[leaf] = rank(views[leaf].priority_of[head.app_id], head.seq, head.app_id)
        return key

    past = room.past_cores

    def child_key(name: str) -> tuple:
        used = room.usage_cores.get(name, 0.0)
        if past:
            used += past.get(name, 0.0)
        share = used / tree.node[name].weight
        return (share, head_key(best[name]))

    # queue -> its ``child_key``, taken when it is settled: an admission changes the usage and
    # the head of the queues on its path only, which are settled again, so a parent compares
    # its children's kept keys instead of computing ten of them at every step of the walk.
    keys: dict[str, tuple] = {}
    key_of = keys.__getitem__

    def settle(name: str) -> None:
        kids = tree.children[name]
        if not kids:
            leaf = best[name] = name if name in views else None
        else:
            live = [c for c in kids if best[c] is not None]
            leaf = best[name] = best[min(live, key=key_of)] if live else None
        if leaf is not None and name != root.name:  # the root is nobody's child
            keys[name] = child_key(name)

    walked = {q.name for name in views for q in tree.path[name]}
    for name in tree.postorder:
        if name in walked:
            settle(name)
    admitted: list[str] = []
    ahead: set[str] = set()
    limited_at: dict[str, int] = {}  # parent with max_running_apps -> admissions after its last
    while best[root.name] is not None:
        if slice_apps is not None and len(admitted) >= slice_apps:
            sliced = admission_slice(slice_apps if slice_of is None else slice_of)  # one Wait
            waiting.update({name: sliced for name in views if name not in waiting})
            break
        name = best[root.name]
        view = views[name]
        head = at[name]
        path = tree.path[name]
        reason, goes_ahead = verdict(view, head, path, room)
        if reason is not None:
            if not defer(name, head, reason, len(admitted)):
                del views[name]
        else:
            admitted.append(head.app_id)
            for node in path[:-1]:  # for ``_said_again``: parents that may fill up
                if node.max_running_apps is not None:
                    limited_at[node.name] = len(admitted)
            if goes_ahead:
                ahead.add(head.app_id)  # ``running_demand`` let it in ahead
                room.ahead_in[name] = room.ahead_in.get(name, 0) + 1
            spend(room, view, head, path)
            nxt[name] += 1
            heads.pop(name, None)
            if not pass_held(name):
                del views[name]
        for node in reversed(path):
            settle(node.name)
    if admitted:
        n = len(admitted)
        for name, (view, head, before) in deferred.items():
            if before < n and _said_again(waiting[name], before, tree.path[name], limited_at):
                waiting[name] = defer_reason(view, head, tree.path[name], room) or waiting[name]
        for name, (head, wait) in kept.items():  # deferred before the first admission
            if wait.code not in _LEAF_WAITS or limited_at and _said_again(
                    wait, 0, tree.path[name], limited_at):
                waiting[name] = defer_reason(view_of(name), head,  # type: ignore[misc]
                                             tree.path[name], room) or waiting[name]
    return Plan(tuple(admitted), waiting, frozenset(ahead), held)


# Waits whose figures are the leaf's own (its running apps, its starting apps, its drivers):
# apps admitted elsewhere change neither them nor any check before them but a parent's limit.
_LEAF_WAITS = frozenset({WaitCode.QUEUE_LIMIT, WaitCode.STARTING_LIMIT, WaitCode.DRIVER_SHARE})


def _said_again(wait: Wait, before: int, path: tuple[Queue, ...],
                limited_at: dict[str, int]) -> bool:
    """Whether a queue deferred when ``before`` apps were admitted, and more were admitted
    since, must run its checks again at the end of the walk: they may have changed its wait -
    for a leaf's own wait only if they filled a parent with ``max_running_apps`` on its path.
    (Running them again for every deferred queue cost 1 ms of a 10 ms cycle at 100 queues.)"""
    if wait.code not in _LEAF_WAITS:
        return True
    return bool(limited_at) and any(limited_at.get(n.name, 0) > before for n in path[:-1])


def _specs_from(pending: Sequence[AppSpec], i: int) -> Iterator[AppSpec]:
    """The queued apps from place ``i`` on, in order."""
    if isinstance(pending, PendingSpecs):
        return pending.specs_from(i)
    return islice(pending, i, None)


class PendingSpecs:
    """A read-only sequence of AppSpec over a queue's sorted keys (no copy of 100k entries)."""

    def __init__(self, keys: Sequence[Rank], apps: dict[str, AppRecord]):
        self._keys = keys
        self._apps = apps

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i: int) -> AppSpec:
        return self._apps[self._keys[i][2]].spec

    def specs_from(self, i: int) -> Iterator[AppSpec]:
        apps = self._apps
        return (apps[key[2]].spec for key in islice(self._keys, i, None))


class PriorityOf:
    def __init__(self, apps: dict[str, AppRecord]):
        self._apps = apps

    def __getitem__(self, app_id: str) -> int:
        return self._apps[app_id].priority
