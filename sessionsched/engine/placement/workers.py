"""The cluster's workers as the engine decides on them: fit per worker, cheap at any count.

A driver or an executor runs on one worker, so room split across workers is not room: two
workers of 4 cores hold no 8-core executor, and two 3-core workers hold two 2-core executors,
not three. The questions the engine asks:
  * ``fits_one(size)``: some worker is at least that large (in cores, in memory and in every
    custom resource it asks for: a GPU executor fits only where there are GPUs);
  * ``holds(executor)``: how many such executors the workers hold at most, each worker
    ``min(its cores // executor cores, its memory // executor memory)`` (and its amount of
    each custom resource // the executor's), summed;
  * ``holds_beside(driver, executor)``: the same with the driver placed on the worker where it
    costs the fewest executors (-1 if the driver fits no worker).
They are asked of the workers' sizes (what each offers the scheduler's apps), not of what is
free this moment: they say what the cluster as it is can ever hold.

Cost: workers are grouped by size, and real clusters have few sizes, so a question costs
O(distinct sizes), and each answer is memoised until the workers change: a 1,000-worker
cluster of one size costs what a one-worker cluster does (``benchmarks/engine_cycle.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable

from ...model import Resources, Worker
from ...model.custom import amount, describe

_NONE = Resources()
UNBOUNDED = 1 << 40  # executors of no size: as many as anyone asks
MEMO_SHAPES = 10_000  # answers kept (``memo``); past it they are forgotten and redone


def per_worker(size: Resources, executor: Resources) -> int:
    """Executors of ``executor`` one worker of ``size`` holds."""
    counts = []
    if executor.cores > 0:
        counts.append(max(size.cores, 0) // executor.cores)
    if executor.mem_mib > 0:
        counts.append(max(size.mem_mib, 0) // executor.mem_mib)
    if executor.custom:
        have = dict(size.custom)
        counts.extend(max(have.get(k, 0), 0) // v for k, v in executor.custom if v > 0)
    return min(counts) if counts else UNBOUNDED


class Workers:
    """The workers of one ``CapacityChanged`` (or one worker of ``capacity`` when the backend
    names none; none at all when that is nothing: a cluster out of reach). Immutable; answers
    are memoised."""

    def __init__(self, workers: tuple[Worker, ...] = (), capacity: Resources | None = None):
        self.named = bool(workers)  # False: the cluster taken as one worker of ``capacity``
        if not workers and capacity is not None and capacity != _NONE:
            workers = (Worker("cluster", capacity, capacity),)
        self.workers = workers
        self.count = len(workers)
        # size -> how many workers have it, largest first (a fixed order: messages, ties)
        by_size = Counter(w.size for w in workers)
        self._sizes = sorted(by_size.items(), key=lambda kv: (-kv[0].cores, -kv[0].mem_mib))
        self._holds: dict[Resources, int] = {}
        self._fits: dict[Resources, bool] = {}
        self._beside: dict[tuple[Resources, Resources], int] = {}
        self._shapes: dict[Hashable, tuple] = {}  # an app's shape -> ``memo``'s answer

    @property
    def signature(self) -> tuple[tuple[Resources, int], ...]:
        """(size, how many workers) pairs, largest first: equal signatures, equal answers."""
        return tuple(self._sizes)

    @property
    def sizes(self) -> tuple[Resources, ...]:
        """The distinct worker sizes, largest first."""
        return tuple(s for s, _ in self._sizes)

    def fits_one(self, size: Resources) -> bool:
        hit = self._fits.get(size)
        if hit is None:
            hit = self._fits[size] = any(size.fits_in(s) for s, _ in self._sizes)
        return hit

    def holds(self, executor: Resources) -> int:
        hit = self._holds.get(executor)
        if hit is None:
            hit = sum(n * per_worker(s, executor) for s, n in self._sizes)
            hit = self._holds[executor] = min(hit, UNBOUNDED)
        return hit

    def holds_beside(self, driver: Resources, executor: Resources) -> int:
        key = (driver, executor)
        hit = self._beside.get(key)
        if hit is None:
            total = self.holds(executor)
            hit = max((total - per_worker(s, executor) + per_worker(s - driver, executor)
                       for s, _ in self._sizes if driver.fits_in(s)), default=-1)
            hit = self._beside[key] = min(hit, UNBOUNDED)
        return hit

    def memo(self, shape: Hashable, answer: Callable[[], tuple]) -> tuple:
        """``answer()``, kept per ``shape``: everything of an app the answer depends on besides
        the workers (``never_fits``: its driver, executor, cap and first executors), so every
        app of one shape shares one answer - a burst's new heads pay a look-up, not a check. At
        most ``MEMO_SHAPES`` answers: then they start again."""
        hit = self._shapes.get(shape)
        if hit is None:
            if len(self._shapes) >= MEMO_SHAPES:
                self._shapes.clear()
            hit = self._shapes[shape] = answer()
        return hit

    def most(self, name: str) -> int:
        """The most of custom resource ``name`` one worker has (0: none has any)."""
        return max((amount(s.custom, name) for s, _ in self._sizes), default=0)

    def describe(self) -> str:
        """The workers in a few words: ``2 workers of 4 cores/8192 MiB`` (``/2 gpu`` after a
        size with custom resources)."""
        if not self._sizes:
            return "no alive worker"
        parts = [f"{n} worker{'s' if n != 1 else ''} of {s.cores} cores/{s.mem_mib} MiB"
                 f"{describe(s.custom)}" for s, n in self._sizes[:3]]
        more = len(self._sizes) - 3
        return ", ".join(parts) + (f" and {more} other size(s)" if more > 0 else "")
