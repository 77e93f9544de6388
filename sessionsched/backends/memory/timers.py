"""Timers of the memory cluster and the simulator: entries ``(time, priority, seq, event)``
(SimPy's layout), and the clock's Spark-style stamps.

Ties on time pop by ``priority`` (lower first), then in insertion order (``seq``), so a run
never depends on how events compare and two runs of one workload pop the same sequence.
"""

from __future__ import annotations

import heapq
import itertools
from datetime import datetime, timezone
from typing import Generic, TypeVar

T = TypeVar("T")

# Priorities of things that happen at the same instant. The cluster's facts come first so
# that a scheduler cycle at that instant sees them (the simulator advances the cluster up to
# a cycle's time, inclusive, before stepping); submissions and priority updates come next, for
# the same reason; the scheduler cycle comes last.
CLUSTER = 0
WORKLOAD = 1
CYCLE = 2


class EventHeap(Generic[T]):
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, T]] = []
        self._seq = itertools.count()

    def push(self, time: float, priority: int, event: T) -> None:
        heapq.heappush(self._heap, (time, priority, next(self._seq), event))

    def pop(self) -> tuple[float, int, T]:
        time, priority, _, event = heapq.heappop(self._heap)
        return time, priority, event

    def peek_time(self) -> float:
        return self._heap[0][0]

    def __len__(self) -> int:
        return len(self._heap)


def spark_stamp(t: float) -> str:
    """A Spark-style timestamp (``yyyyMMddHHmmss``, UTC) of clock time ``t``."""
    return datetime.fromtimestamp(max(t, 0.0), tz=timezone.utc).strftime("%Y%m%d%H%M%S")
