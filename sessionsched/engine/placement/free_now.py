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
admitted since (``Books.placed_since``, emptied by each report) are taken off again, each
placed where its queue's ``node_sort`` would put it (``sorting.pick``); a driver that fits no
worker is left out (it waits in the master's queue and holds nothing). What this cycle admits
is spent the same way (``spend``). Executors granted since the report are not taken off here:
the cluster's sum (``Room.free``, which counts them) is checked first, and both must hold.
A report read before the backend saw a launch of the cycle before counts that driver's room as
free until the next report: at most one report's lag, and the driver then waits in the
master's queue, as any driver launched into room that executors still hold.

Cost: nothing until a head asks (only ``stateaware`` and ``none`` heads with an in-cluster
driver do, ``admission_checks.cluster_driver_room``); then one copy of the workers' free room
per cycle and O(workers) per question: a 1,000-worker cluster costs tens of microseconds a
cycle where it is asked (``benchmarks/engine_cycle.py``, ``workers-1000``). With one worker
(or none named) the cluster's sum says it all: no per-worker question is asked
(``Books.free_now`` gives None).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model import NodeSort, Resources, Worker
from .sorting import pick


class FreeNow:
    """One cycle's working copy of each worker's free room (module doc)."""

    def __init__(self, reported: Sequence[Worker],
                 placed_since: Sequence[tuple[Resources, NodeSort]]):
        self._reported = reported
        self._pending = list(placed_since)  # spent before the copy was made
        self._free: list[Resources | None] | None = None  # the copy, made when first asked
        self._fits: dict[Resources, bool] = {}  # answers until the next ``spend``

    def _copy(self) -> list[Resources | None]:
        free = self._free
        if free is None:
            free = self._free = [w.free for w in self._reported]
            for size, sort in self._pending:
                _take(free, size, sort)
            self._pending = []
        return free

    def fits(self, size: Resources) -> bool:
        """Some worker has ``size`` free now."""
        hit = self._fits.get(size)
        if hit is None:
            hit = self._fits[size] = pick(self._copy(), size, NodeSort.FAIR) is not None
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
        best = Resources()
        for f in self._copy():
            if f is not None and (f.cores, f.mem_mib) > (best.cores, best.mem_mib):
                best = f
        return best


def _take(free: list[Resources | None], size: Resources, sort: NodeSort) -> None:
    i = pick(free, size, sort)
    if i is not None:
        free[i] = free[i] - size


class WorkerReports:
    """The backend's last report of each worker's free room and the in-cluster drivers the
    engine admitted since (module doc): what a cycle's ``FreeNow`` starts from."""

    def __init__(self) -> None:
        self.reported: tuple[Worker, ...] = ()
        self.placed_since: list[tuple[Resources, NodeSort]] = []

    def report(self, workers: tuple[Worker, ...]) -> None:
        """A ``CapacityChanged``: its workers are what is free now; what was launched before
        is in it."""
        self.reported = workers
        self.placed_since.clear()

    def placed(self, driver: Resources, sort: NodeSort) -> None:
        """An in-cluster driver admitted (nothing kept while no per-worker question is asked:
        one worker or none named)."""
        if len(self.reported) > 1:
            self.placed_since.append((driver, sort))

    def free_now(self) -> FreeNow | None:
        """This cycle's ``FreeNow``; None with one worker or none named (the sum says it)."""
        if len(self.reported) <= 1:
            return None
        return FreeNow(self.reported, self.placed_since)
