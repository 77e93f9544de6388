"""The simulated cluster's workers, their cores and memory handed out as a standalone master does.

The cluster is ``workers`` equal workers (``capacity`` split evenly), or the workers of
``sizes`` (workers not all alike, some with custom resources such as GPUs). A driver or an executor
runs on one worker, chosen by its app's node sorting (``engine.placement.sorting.pick``:
``fair``, the default, the alive one with the most free room that holds it, as the master's
``spreadOut``; ``binpacking``, the fullest that holds it; ties: the first) - so room split
across workers is not room. ``whole()``: how many alive workers have nothing on them.
Whatever does not fit waits in the master's queue and starts as soon as one worker holds it:
waiting in-cluster drivers first, in launch order, then waiting executors, in request order
(the master's ``schedule()`` launches drivers before executors). So no worker is ever
overfilled, whatever the scheduler decides; every take re-checks that (``Overcommit`` would
be a bug here).

A worker can be lost (``lose``): what ran on it is gone (the caller ends it) and it offers
nothing until it is ``back``, as a standalone worker marked DEAD and started again.

Two waits say different things about the scheduler:
- a driver that waits: the engine launched it into cores that executors still hold while they
  are reclaimed (``reserve`` admission counts on that);
- an executor that does not fit beside what is in use and what waiting drivers need
  (``executor_waits``, counted even if it starts at once, ahead of such a driver): a grant the
  cluster could not honour - the engine promised the same cores twice. Tests keep it at 0.
  One that would fit once the executors held above their apps' grants are gone is counted
  apart (``surplus_waits``): those were launched before their grant fell (a standalone
  master's lower limit kills none), and the engine takes them back by reclaim, as a real
  master's next executor waits for it.
Client-mode drivers run on the scheduler host and use a driver slot, not the pool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ...model import NodeSort, Resources, Worker
from .rooms import WorkerIndex

FAIR = NodeSort.FAIR


class Overcommit(AssertionError):
    """The simulated cluster was asked for more than it has: a bug, never a user error."""


@dataclass
class Started:
    """What started because room was found: driver app names, (app, executor id) pairs."""

    drivers: list[str] = field(default_factory=list)
    executors: list[tuple[str, str]] = field(default_factory=list)


class Pool:
    """``capacity``: all workers together; ``workers``: how many equal workers share it;
    ``sizes``: each worker's size instead (``capacity`` and ``workers`` then unused). Things
    placed are named by a key (an app name for its driver, an executor id, an external's key)
    and given back by it."""

    def __init__(self, capacity: Resources, driver_slots: int | None, workers: int = 1,
                 sizes: tuple[Resources, ...] = ()):
        n = len(sizes) or max(workers, 1)
        size = Resources(capacity.cores // n, capacity.mem_mib // n)
        self.names = [f"worker-{i + 1}" for i in range(n)]
        self.sizes = list(sizes) or [size] * n
        self.driver_slots = driver_slots
        self.slots_used = 0
        self.executor_waits = 0
        self.surplus_waits = 0
        self._placed: dict[str, tuple[int, Resources]] = {}  # key -> (worker, size)
        self._drivers: dict[str, tuple[Resources, NodeSort]] = {}  # waiting: app -> (size, sort)
        # waiting: executor id -> (app, size, its app's node sort)
        self._executors: dict[str, tuple[str, Resources, NodeSort]] = {}
        # Kept as they change, so that no placement reads every worker (``rooms``): each
        # worker's free room (None: lost), indexed; the sums; the whole workers; the alive
        # workers' sizes.
        self._index = {name: i for i, name in enumerate(self.names)}
        self._free: list[Resources | None] = list(self.sizes)
        self._rooms = WorkerIndex()
        for i, room in enumerate(self._free):
            self._rooms.add(i, room)
        self._capacity = _sum(self.sizes)
        self._used = Resources()
        self._promised = Resources()  # the waiting drivers' sizes
        self._whole = n
        self._alive_sizes = Counter(self.sizes)

    # --- the workers ----------------------------------------------------------------------

    @property
    def capacity(self) -> Resources:
        """The alive workers' cores and memory together."""
        return self._capacity

    @property
    def used(self) -> Resources:
        return self._used

    @property
    def used_on(self) -> list[Resources]:
        """What each worker has in use (a lost one: nothing)."""
        return [Resources() if free is None else size - free
                for size, free in zip(self.sizes, self._free, strict=True)]

    def workers(self) -> tuple[Worker, ...]:
        """The alive workers, with what is free on each now."""
        return tuple(Worker(name, size, free)
                     for name, size, free in zip(self.names, self.sizes, self._free, strict=True)
                     if free is not None)

    def whole(self) -> int:
        """How many alive workers have nothing on them (``sorting.whole``)."""
        return self._whole

    def fits_one(self, size: Resources) -> bool:
        """Some alive worker is at least ``size``."""
        return any(n and size.fits_in(s) for s, n in self._alive_sizes.items())

    def lose(self, name: str) -> list[str]:
        """The worker ``name`` is gone: the keys of what ran on it (the caller ends them; their
        room is not given back: the worker offers nothing from now on)."""
        i = self._index[name]
        gone = [key for key, (w, _) in self._placed.items() if w == i]
        for key in gone:
            del self._placed[key]
        free = self._free[i]
        if free is not None:
            self._set_free(i, None)
            self._capacity = self._capacity - self.sizes[i]
            self._used = self._used - (self.sizes[i] - free)
            self._alive_sizes[self.sizes[i]] -= 1
        return gone

    def back(self, name: str) -> Started:
        """The worker ``name`` is back (empty, as a restarted worker): what starts on it."""
        i = self._index[name]
        if self._free[i] is None:
            self._set_free(i, self.sizes[i])
            self._capacity = self._capacity + self.sizes[i]
            self._alive_sizes[self.sizes[i]] += 1
        return self._start()

    def _set_free(self, i: int, room: Resources | None) -> None:
        """Worker ``i``'s free room is now ``room`` (None: lost), in the index and the count
        of whole workers."""
        was = self._free[i]
        if was is not None:
            self._rooms.remove(i, was)
            self._whole -= was == self.sizes[i]
        if room is not None:
            self._rooms.add(i, room)
            self._whole += room == self.sizes[i]
        self._free[i] = room

    # --- drivers --------------------------------------------------------------------------

    def request_driver(self, app: str, size: Resources, sort: NodeSort = FAIR) -> Started:
        was = self._drivers.get(app)
        if was is not None:
            self._promised = self._promised - was[0]
        self._drivers[app] = (size, sort)
        self._promised = self._promised + size
        return self._start()

    def take_slot(self, what: str) -> None:
        if self.driver_slots is not None and self.slots_used >= self.driver_slots:
            raise Overcommit(f"{what}: all {self.driver_slots} driver slots are in use")
        self.slots_used += 1

    def give_slot(self) -> None:
        self.slots_used -= 1

    # --- executors ------------------------------------------------------------------------

    def request_executor(self, app: str, executor_id: str, size: Resources,
                         sort: NodeSort = FAIR,
                         surplus: Callable[[], Resources | None] | None = None) -> Started:
        """``surplus``: the room held by executors above their apps' grants, None for none
        (module doc)."""
        promised = self._promised
        if not (self.used + promised + size).fits_in(self.capacity) or self._where(size) is None:
            held = surplus() if surplus is not None else None
            if held is not None and (self.used - held + promised + size).fits_in(self.capacity):
                self.surplus_waits += 1
            else:
                self.executor_waits += 1
        self._executors[executor_id] = (app, size, sort)
        return self._start()

    def hold(self, key: str, size: Resources) -> None:
        """Take room now for something that is not waiting its turn (an external app's
        executor, already running); Overcommit if no worker holds it."""
        self._take(key, size)

    # --- both -----------------------------------------------------------------------------

    def cancel(self, key: str) -> bool:
        """Withdraw a waiting driver (by app) or executor (by id); False if it had started."""
        driver = self._drivers.pop(key, None)
        if driver is not None:
            self._promised = self._promised - driver[0]
            return True
        return self._executors.pop(key, None) is not None

    def worker_of(self, key: str) -> str:
        """The name of the worker a started driver or executor runs on ("" if none)."""
        hit = self._placed.get(key)
        return "" if hit is None else self.names[hit[0]]

    def placed(self, key: str) -> bool:
        return key in self._placed

    def give(self, key: str) -> Started:
        """A started driver or executor ends: its room comes back (nothing if its worker was
        lost); what starts in its place."""
        hit = self._placed.pop(key, None)
        if hit is not None:
            i, size = hit
            self._used = self._used - size
            self._set_free(i, self._free[i] + size)  # type: ignore[operator]  # alive: placed
        return self._start()

    def _start(self) -> Started:
        started = Started()
        for app, (size, sort) in list(self._drivers.items()):
            if self._where(size) is not None:
                self._take(app, size, sort)
                del self._drivers[app]
                self._promised = self._promised - size
                started.drivers.append(app)
        for eid, (app, size, sort) in list(self._executors.items()):
            if self._where(size) is not None:
                self._take(eid, size, sort)
                del self._executors[eid]
                started.executors.append((app, eid))
        return started

    def _where(self, size: Resources, sort: NodeSort = FAIR) -> int | None:
        """The worker ``size`` goes to by ``sort`` (``sorting.pick``), None if none holds it."""
        return self._rooms.pick(size, sort)

    def _take(self, key: str, size: Resources, sort: NodeSort = FAIR) -> None:
        i = self._where(size, sort)
        if i is None:
            raise Overcommit(
                f"{size.cores} cores/{size.mem_mib} MiB fit no worker: {self.used.cores} cores/"
                f"{self.used.mem_mib} MiB of {self.capacity.cores}/{self.capacity.mem_mib} in use"
            )
        self._used = self._used + size
        self._set_free(i, self._free[i] - size)  # type: ignore[operator]  # picked: alive
        self._placed[key] = (i, size)


def _sum(sizes) -> Resources:
    total = Resources()
    for s in sizes:
        total = total + s
    return total
