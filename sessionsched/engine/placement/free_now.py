"""The room free now on each worker, as admission decides a driver's room on it and grants
place executors on it.

A driver or an executor runs on one worker: 4 cores free as 2 + 2 on two workers hold no
3-core driver, though the cluster's sum (``Room.free``) says 4 are free. The engine does not
place anything itself (a standalone master, the Kubernetes scheduler or the memory cluster
does), so it learns where things sit from its backend: each ``Worker.free`` of the last
``CapacityChanged`` (the standalone master's ``coresfree``/``memoryfree`` per ALIVE worker, a
node's allocatable less every pod on it, the memory cluster's own books). The backends report
it at least every ``service.watch.CAPACITY_EVERY_S`` (2 s); the memory backend with more than
one worker on every change.

What the engine placed since that report may not be in it yet, so ``WorkerReports.rooms`` is
the report less everything placed since, each where its queue's ``node_sort`` would put it
(``sorting``'s order): the in-cluster drivers admitted (``placed``) and the executors granted
(the grants' ``place``, ``Scheduler._placer``). Something that fits no worker is left out (it
waits in the master's queue and holds nothing). Admission asks a copy (``FreeNow``) and spends
what it admits there as it decides. A grant is placed only where a worker has the room: an
executor that fits the sum but no worker is not granted (the app's target stays; its grant
follows when a report shows the room). A reserving gang's room is taken off the grants' copy
of the cycle (a reservation places nothing).

One report's lag: a report read before the backend saw a launch (a driver admitted, an
executor granted, not started yet) counts that room as free until the next report, so
something else may be placed there and wait in the master's queue, as any launch into room
that others still hold. Room freed since the report (an executor released) is not seen until
the next one: a grant into it waits for that report (2 s at most on a real cluster).

Cost: the workers are counted by free room once per report (``Rooms``: counts by room, the
rooms in order); a take or a question then costs O(log distinct free rooms) and a few steps,
not O(workers) (``benchmarks/engine_cycle.py``, ``workers-1000``); admission copies the rooms
once per cycle, only when a head asks (``stateaware`` and ``none`` heads with an in-cluster
driver, ``admission_checks.cluster_driver_room``), and grants copy them only while gangs
reserve. With one worker (or none named) the cluster's sum says it all: no per-worker question
is asked (``WorkerReports.free_now`` gives None, and grants place nothing).
"""

from __future__ import annotations

from collections import Counter

from sortedcontainers import SortedList

from ...model import NodeSort, Resources, Worker
from ...model.custom import Custom, amount, combine, covers


class Rooms:
    """Workers counted by free room (cores, MiB, custom amounts), the rooms kept in order: a
    take finds the room ``sort`` picks by walking from the end of the order it prefers, so it
    costs O(log rooms) and a few steps (more only where memory or a custom resource, not
    cores, rules a room out), not O(rooms): a wave of grants places thousands of executors at
    once."""

    __slots__ = ("count", "order")

    def __init__(self, counts: Counter[Resources] | None = None):
        self.count: Counter[tuple[int, int, Custom]] = Counter()
        counts = counts or Counter()
        for r, n in counts.items():
            self.count[r.cores, r.mem_mib, r.custom] += n
        self.order = SortedList(self.count)

    def copy(self) -> Rooms:
        other = Rooms.__new__(Rooms)
        other.count = Counter(self.count)
        other.order = self.order.copy()
        return other

    def _pick(self, size: Resources, sort: NodeSort) -> tuple[int, int, Custom] | None:
        """``sorting.pick``'s choice, keep-off included: a size asking for no custom resource
        takes a room with custom resources free only when no other room fits it."""
        cores, mem, custom = size.cores, size.mem_mib, size.custom
        kept_off = None
        if sort is NodeSort.BINPACKING:  # the fullest that fits: upwards from the first
            for key in self.order.islice(self.order.bisect_left((cores, mem))):
                if key[1] >= mem and (not custom or covers(custom, key[2])):
                    if custom or not key[2]:
                        return key
                    if kept_off is None:
                        kept_off = key
            return kept_off
        for key in self.order.islice(reverse=True):  # the freest: downwards
            if key[0] < cores:
                return kept_off
            if key[1] >= mem and (not custom or covers(custom, key[2])):
                if custom or not key[2]:
                    return key
                if kept_off is None:
                    kept_off = key
        return kept_off

    def fits(self, size: Resources) -> bool:
        return self._pick(size, NodeSort.FAIR) is not None

    def take(self, size: Resources, sort: NodeSort) -> bool:
        """Take ``size`` off the worker ``sort`` puts it on (``sorting.pick``'s order); False,
        and nothing taken, when no worker holds it (it waits in the master's queue)."""
        at = self._pick(size, sort)
        if at is None:
            return False
        count = self.count
        count[at] -= 1
        if not count[at]:
            del count[at]
            self.order.remove(at)
        custom = size.custom
        left = (at[0] - size.cores, at[1] - size.mem_mib,
                combine(at[2], custom, -1) if custom else at[2])
        if left not in count:
            self.order.add(left)
        count[left] += 1
        return True

    def take_up_to(self, size: Resources, n: int, sort: NodeSort) -> int:
        """Up to ``n`` of ``size`` taken, one at a time; how many found a worker."""
        got = 0
        while got < n and self.take(size, sort):
            got += 1
        return got

    def most(self) -> Resources:
        return Resources(*self.order[-1]) if self.order else Resources()


class FreeNow:
    """One cycle's working copy of the workers' free room for admission (module doc): the
    rooms as the engine believes them now (``WorkerReports.rooms``), copied when first asked,
    so what admission spends while it decides is not kept (what it admits is, by
    ``WorkerReports.placed``). A question costs O(log distinct free rooms) (``Rooms``)."""

    def __init__(self, rooms: Rooms):
        self._rooms = rooms
        self._free: Rooms | None = None  # the copy, made when first asked
        self._fits: dict[Resources, bool] = {}  # answers until the next ``spend``

    def _copy(self) -> Rooms:
        if self._free is None:
            self._free = self._rooms.copy()
        return self._free

    def fits(self, size: Resources) -> bool:
        """Some worker has ``size`` free now."""
        hit = self._fits.get(size)
        if hit is None:
            hit = self._fits[size] = self._copy().fits(size)
        return hit

    def spend(self, size: Resources, sort: NodeSort) -> None:
        """A driver of ``size`` admitted this cycle: taken off where ``sort`` puts it."""
        self._copy().take(size, sort)
        self._fits.clear()

    def most(self) -> Resources:
        """The most free room on one worker (cores, then memory), for the reasons' numbers."""
        return self._copy().most()

    def short_of(self, size: Resources) -> tuple[str, int, int, int] | None:
        """The custom resource ``size`` waits for, when no worker has enough of it free: (its
        name, the amount asked, the most free on one worker, free in all), for the reasons'
        words; None when each is there (the cores or memory, or their mix, are short)."""
        if not size.custom:
            return None
        free = self._copy().count
        for name, need in size.custom:
            amounts = [(amount(key[2], name), n) for key, n in free.items()]
            most = max((a for a, _ in amounts), default=0)
            if most < need:
                return name, need, max(most, 0), sum(max(a, 0) * n for a, n in amounts)
        return None


class WorkerReports:
    """The backend's last report of each worker's free room, less what the engine placed
    since (module doc): in-cluster drivers admitted and executors granted, each taken off
    where its queue's ``node_sort`` puts it. What a cycle's ``FreeNow`` and its grants'
    placement start from."""

    def __init__(self) -> None:
        self.count = 0  # workers reported
        self.rooms = Rooms()  # empty with one worker or none named: nothing is asked

    def report(self, workers: tuple[Worker, ...]) -> None:
        """A ``CapacityChanged``: its workers are what is free now; what was launched before
        is in it."""
        self.count = len(workers)
        self.rooms = Rooms(Counter(w.free for w in workers) if self.count > 1 else None)

    def placed(self, driver: Resources, sort: NodeSort) -> None:
        """An in-cluster driver admitted (nothing kept while no per-worker question is asked:
        one worker or none named)."""
        if self.count > 1:
            self.rooms.take(driver, sort)

    def free_now(self) -> FreeNow | None:
        """This cycle's ``FreeNow``; None with one worker or none named (the sum says it)."""
        if self.count <= 1:
            return None
        return FreeNow(self.rooms)
