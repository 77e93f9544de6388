"""Short full garbage-collector passes in a process whose books are large, so no cycle is long.

CPython's collector walks every tracked object of the oldest generation in one pass. At 20,000
apps a process holds ~700,000 of them (the engine's books, the store's records, the read view;
in the simulator the cluster model and timelines too), so a full pass takes 200-300 ms of CPU
and lands in whichever cycle allocates at the time: no slice of the engine's work bounds it,
and in the server it holds the interpreter lock, so reads wait for it too. Python 3.11 has no
incremental collector.

``GcPacer`` keeps every full pass short: when one took longer than ``budget_ms`` of the
thread's CPU, everything that survived it is moved to the permanent generation
(``gc.freeze``), so later passes walk only what was allocated since; the long-lived books are
walked once, not at every pass. ``settle()`` does the same at a moment the caller chooses: one
full collection, then freeze (``benchmarks/simulate_scale.py`` settles the workload it built;
``serve`` does not: after a restore, the first slow pass freezes the books it loaded).

A slow pass is already late, and the pacer alone cannot bound how late: between two full
passes the oldest generation may take in tens of thousands of objects (a burst of admissions
builds records, a cycle replaces large containers), and the first pass after that walks them
all inside whatever step allocates then (79-116 ms at 20,000 apps). So a loop that runs
cycles calls ``between_cycles()`` after each one: when the oldest generation holds more than
``max_old`` objects not frozen yet, it is collected there, between cycles, and its survivors
are frozen. The next automatic pass then finds at most about that many, and the pass the loop
paid for fell outside every step. ``max_old`` (20,000 by default) is a pass of ~5-15 ms here
(40,000: up to 40 ms; in ``serve`` the pass holds the interpreter lock, so reads wait for it).

What it costs: an object frozen alive and later part of a reference cycle that becomes garbage
is never collected (objects freed by reference counting, most of the engine's, are freed as
usual). Freezing right after a full pass - when everything frozen is reachable - and only
after a slow one keeps that small: one freeze per ~50,000 objects the books grew by, each
keeping at most the cyclic objects alive at that moment (requests in flight). A process
concern: ``serve`` and ``simulate`` run under one (``with GcPacer():``), the engine never
installs it.
"""

from __future__ import annotations

import gc
import time

_installed: GcPacer | None = None  # the process's pacer, for ``between_cycles``


def between_cycles() -> None:
    """A loop's moment between two cycles: the installed pacer (if any) collects the oldest
    generation now if it has grown past its ``max_old`` (module doc)."""
    if _installed is not None:
        _installed.between_cycles()


def oldest_count() -> int:
    """The objects in the oldest generation, not frozen. Counted from C alone (``map`` calls
    ``gc.get_objects`` and ``len`` with no bytecode between them): the list references every
    object there, and a thread switch while it is alive would show another thread an object
    it is still building as referenced twice - a tuple filled from a generator, moved to the
    oldest generation by a collection mid-build, then fails to grow ("SystemError:
    Objects/tupleobject.c: bad argument to internal function", seen in a server importing
    pyspark while its cycle thread counted)."""
    return sum(map(len, map(gc.get_objects, (2,))))


class GcPacer:
    """Freeze the survivors of any full collection slower than ``budget_ms``, and collect the
    oldest generation between cycles once it holds ``max_old`` unfrozen objects (module doc)."""

    def __init__(self, budget_ms: float = 10.0, max_old: int = 20_000) -> None:
        self.budget_ms = budget_ms
        self.max_old = max_old
        self.freezes = 0  # how many times the survivors were frozen (metrics, tests)
        self.slowest_ms = 0.0  # the longest full pass seen, thread CPU ms
        self._started: float | None = None
        self._young_passes = -1  # generation-1 collections counted at the last look

    def __enter__(self) -> GcPacer:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        """Uninstall, and unfreeze everything frozen (a command run in-process, as the
        tests run them, leaves the process as it found it)."""
        self.uninstall()
        gc.unfreeze()

    def install(self) -> GcPacer:
        global _installed
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)
        _installed = self
        return self

    def uninstall(self) -> None:
        global _installed
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
        if _installed is self:
            _installed = None

    def between_cycles(self) -> None:
        """Collect and freeze the oldest generation if it holds more than ``max_old``
        unfrozen objects. Only generation-1 passes move objects into it, so while none ran
        since the last look this costs a counter read; else a list of its objects (~1 ms at
        ``max_old``)."""
        young = gc.get_stats()[1]["collections"]
        if young == self._young_passes:
            return
        self._young_passes = young
        if oldest_count() > self.max_old:
            self.settle()

    def settle(self) -> None:
        """Collect everything now, then freeze what is left (after a restore: the books)."""
        gc.collect()
        gc.freeze()
        self.freezes += 1

    def _callback(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.thread_time()
            return
        if self._started is None:
            return
        took_ms = (time.thread_time() - self._started) * 1000.0
        self._started = None
        self.slowest_ms = max(self.slowest_ms, took_ms)
        if took_ms > self.budget_ms:
            # The pass has just ended: everything still tracked is reachable, so freezing now
            # keeps no garbage of today, only (rarely) cycles that become garbage later.
            gc.freeze()
            self.freezes += 1
