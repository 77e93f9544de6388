"""The simulated cluster's cores and memory, handed out as a Spark standalone master does.

One pool for the whole cluster (no per-worker packing). Whatever does not fit waits in the
master's queue and starts as soon as it fits: waiting in-cluster drivers first, in launch
order, then waiting executors, in request order (the master's ``schedule()`` launches drivers
before executors). So the cluster is never overfilled, whatever the scheduler decides; every
take re-checks that (``Overcommit`` would be a bug here).

Two waits say different things about the scheduler:
- a driver that waits: the engine launched it into cores that executors still hold while they
  are reclaimed (``reserve`` admission counts on that);
- an executor that does not fit beside what is in use and what waiting drivers need
  (``executor_waits``, counted even if it starts at once, ahead of such a driver): a grant the
  cluster could not honour - the engine promised the same cores twice. Tests keep it at 0.
Client-mode drivers run on the scheduler host and use a driver slot, not the pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...model import Resources


class Overcommit(AssertionError):
    """The simulated cluster was asked for more than it has: a bug, never a user error."""


@dataclass
class Started:
    """What started because room was found: driver app names, (app, executor id) pairs."""

    drivers: list[str] = field(default_factory=list)
    executors: list[tuple[str, str]] = field(default_factory=list)


class Pool:
    def __init__(self, capacity: Resources, driver_slots: int):
        self.capacity = capacity
        self.driver_slots = driver_slots
        self.used = Resources()
        self.slots_used = 0
        self.executor_waits = 0
        self._drivers: dict[str, Resources] = {}  # waiting: app -> driver size
        self._executors: dict[str, tuple[str, Resources]] = {}  # waiting: id -> (app, size)

    # --- drivers --------------------------------------------------------------------------

    def request_driver(self, app: str, size: Resources) -> Started:
        self._drivers[app] = size
        return self._start()

    def take_slot(self, what: str) -> None:
        if self.slots_used >= self.driver_slots:
            raise Overcommit(f"{what}: all {self.driver_slots} driver slots are in use")
        self.slots_used += 1

    def give_slot(self) -> None:
        self.slots_used -= 1

    # --- executors ------------------------------------------------------------------------

    def request_executor(self, app: str, executor_id: str, size: Resources) -> Started:
        promised = Resources()
        for driver in self._drivers.values():
            promised = promised + driver
        if not (self.used + promised + size).fits_in(self.capacity):
            self.executor_waits += 1
        self._executors[executor_id] = (app, size)
        return self._start()

    def hold(self, size: Resources) -> None:
        """Take room now for something that is not waiting its turn (an external app's
        executor, already running); Overcommit if it does not fit."""
        self._take(size)

    # --- both -----------------------------------------------------------------------------

    def cancel(self, key: str) -> bool:
        """Withdraw a waiting driver (by app) or executor (by id); False if it had started."""
        return (
            self._drivers.pop(key, None) is not None or self._executors.pop(key, None) is not None
        )

    def give(self, size: Resources) -> Started:
        """Resources of a started driver or executor come back; what starts in their place."""
        self.used = self.used - size
        return self._start()

    def _start(self) -> Started:
        started = Started()
        for app, size in list(self._drivers.items()):
            if self._fits(size):
                self._take(size)
                del self._drivers[app]
                started.drivers.append(app)
        for eid, (app, size) in list(self._executors.items()):
            if self._fits(size):
                self._take(size)
                del self._executors[eid]
                started.executors.append((app, eid))
        return started

    def _fits(self, size: Resources) -> bool:
        return (self.used + size).fits_in(self.capacity)

    def _take(self, size: Resources) -> None:
        after = self.used + size
        if not after.fits_in(self.capacity):
            raise Overcommit(
                f"{size.cores} cores/{size.mem_mib} MiB do not fit: {self.used.cores} cores/"
                f"{self.used.mem_mib} MiB of {self.capacity.cores}/{self.capacity.mem_mib} in use"
            )
        self.used = after
