"""The room free now on each worker, as admission decides a driver's room on it.

A driver runs on one worker: 4 cores free as 2 + 2 on two workers hold no 3-core driver,
though the cluster's sum (``Room.free``) says 4 are free. The engine does not place anything
itself (a standalone master, the Kubernetes scheduler or the memory cluster does), so it
learns where things sit from its backend: each ``Worker.free`` of the last ``CapacityChanged``
(the standalone master's ``coresfree``/``memoryfree`` per ALIVE worker, a node's allocatable
less every pod on it, the memory cluster's own books). The backends report it at least every
``service.watch.CAPACITY_EVERY_S`` (2 s); the memory backend with more than one worker on
every change.

What the engine launched since that report may not be in it yet, so the in-cluster drivers
admitted since (``WorkerReports.placed_since``, emptied by each report) are taken off again,
each placed where its queue's ``node_sort`` would put it (``sorting``'s order); a driver that
fits no worker is left out (it waits in the master's queue and holds nothing). What this cycle
admits is spent the same way (``spend``). Executors granted since the report are not taken off here:
the cluster's sum (``Room.free``, which counts them) is checked first, and both must hold.
A report read before the backend saw a launch of the cycle before counts that driver's room as
free until the next report: at most one report's lag, and the driver then waits in the
master's queue, as any driver launched into room that executors still hold.

Cost: the workers are counted by free room once per report; nothing more until a head asks
(only ``stateaware`` and ``none`` heads with an in-cluster driver do,
``admission_checks.cluster_driver_room``); then one copy of those counts per cycle and
O(distinct free rooms) per question or driver spent, not O(workers)
(``benchmarks/engine_cycle.py``, ``workers-1000``). With one worker (or none named) the
cluster's sum says it all: no per-worker question is asked (``WorkerReports.free_now`` gives
None).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...model import NodeSort, Resources, Worker


class FreeNow:
    """One cycle's working copy of the workers' free room (module doc), as counts by free
    room: workers with the same room free are alike to a driver, so a question costs
    O(distinct free rooms), not O(workers)."""

    def __init__(self, reported: Counter[Resources],
                 placed_since: Sequence[tuple[Resources, NodeSort]]):
        self._reported = reported
        self._pending = list(placed_since)  # spent before the copy was made
        self._free: Counter[Resources] | None = None  # the copy, made when first asked
        self._fits: dict[Resources, bool] = {}  # answers until the next ``spend``

    def _copy(self) -> Counter[Resources]:
        free = self._free
        if free is None:
            free = self._free = Counter(self._reported)
            for size, sort in self._pending:
                _take(free, size, sort)
            self._pending = []
        return free

    def fits(self, size: Resources) -> bool:
        """Some worker has ``size`` free now."""
        hit = self._fits.get(size)
        if hit is None:
            hit = self._fits[size] = any(size.fits_in(f) for f in self._copy())
        return hit

    def spend(self, size: Resources, sort: NodeSort) -> None:
        """A driver of ``size`` admitted this cycle: taken off where ``sort`` puts it."""
        if self._free is None:
            self._pending.append((size, sort))
            return
        _take(self._free, size, sort)
        self._fits.clear()

    def most(self) -> Resources:
        """The most free room on one worker (cores, then memory), for the reasons' numbers."""
        return max(self._copy(), key=_order, default=Resources())


def _order(r: Resources) -> tuple[int, int]:
    return (r.cores, r.mem_mib)  # more free: cores first, then memory (``sorting``)


def _take(free: Counter[Resources], size: Resources, sort: NodeSort) -> None:
    """Take ``size`` off the worker ``sort`` puts it on (``sorting.pick``'s order); nothing
    when no worker holds it (it waits in the master's queue)."""
    room = [f for f in free if size.fits_in(f)]
    if not room:
        return
    at = (min if sort is NodeSort.BINPACKING else max)(room, key=_order)
    free[at] -= 1
    if not free[at]:
        del free[at]
    free[at - size] += 1


class WorkerReports:
    """The backend's last report of each worker's free room and the in-cluster drivers the
    engine admitted since (module doc): what a cycle's ``FreeNow`` starts from."""

    def __init__(self) -> None:
        self.reported: Counter[Resources] = Counter()  # free room -> workers with it
        self.count = 0  # workers reported
        self.placed_since: list[tuple[Resources, NodeSort]] = []

    def report(self, workers: tuple[Worker, ...]) -> None:
        """A ``CapacityChanged``: its workers are what is free now; what was launched before
        is in it."""
        self.count = len(workers)
        self.reported = Counter(w.free for w in workers) if self.count > 1 else Counter()
        self.placed_since.clear()

    def placed(self, driver: Resources, sort: NodeSort) -> None:
        """An in-cluster driver admitted (nothing kept while no per-worker question is asked:
        one worker or none named)."""
        if self.count > 1:
            self.placed_since.append((driver, sort))

    def free_now(self) -> FreeNow | None:
        """This cycle's ``FreeNow``; None with one worker or none named (the sum says it)."""
        if self.count <= 1:
            return None
        return FreeNow(self.reported, self.placed_since)
