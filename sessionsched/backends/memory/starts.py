"""JVM starts that share a host's CPUs: what makes a start slower while others start beside it.

A driver's or an executor's start (``driver_start_s``, ``executor_start_s``) is mostly CPU
work: the JVM loads and compiles Spark's classes, an executor registers and fetches the app's
files. On a host with fewer CPUs than JVMs starting at once, each start gets its share of them
and takes longer: measured on a 2-CPU machine, executors that started beside one or two others
took 5-9 s, those that started in a crowd of four 13-18 s.

So with ``cpus`` set, each start is an amount of work (its start time when it has a CPU to
itself), and the starts in flight progress together at ``min(1, cpus / starting)`` each: when
one begins or ends, the others' ends move. A start's end is a timer the cluster pushes; a timer
whose time is no longer its start's end is stale (``finish`` says so), and the one pushed last
for it stands. Without ``cpus`` (None) every start takes its time, whatever runs beside it:
the cluster's latencies as given (the default).
"""

from __future__ import annotations

from collections.abc import Hashable


class Starts:
    """The starts in flight on one host of ``cpus`` CPUs (module doc), each known by the
    timer event that ends it; ``cpus`` None: each start takes its own time."""

    def __init__(self, cpus: float | None = None) -> None:
        if cpus is not None and not cpus > 0:
            raise ValueError(f"host_cpus must be above 0, not {cpus!r}")
        self.cpus = cpus
        self._left: dict[Hashable, float] = {}  # start -> its work left, in seconds at full speed
        self._due: dict[Hashable, float] = {}  # start -> the time its timer was last pushed for
        self._at = 0.0  # when ``_left`` was last brought up to date

    def begin(self, now: float, start: Hashable, work_s: float) -> dict[Hashable, float]:
        """A start of ``work_s`` begins now; returns the starts whose end moved, with the time
        to push each one's timer for (the new one's among them)."""
        if self.cpus is None:
            return {start: now + work_s}
        self._progress(now)
        self._left[start] = max(work_s, 0.0)
        return self._moved(now)

    def finish(self, now: float, start: Hashable) -> dict[Hashable, float] | None:
        """The timer of ``start`` fired at ``now``: None if it is stale (a later one stands);
        else the start is over, and the starts whose end moved are returned as by ``begin``."""
        if self.cpus is None:
            return {}
        if self._due.get(start) != now:
            return None
        self._progress(now)
        del self._left[start], self._due[start]
        return self._moved(now)

    def _rate(self) -> float:
        return min(1.0, self.cpus / len(self._left)) if self.cpus and self._left else 1.0

    def _progress(self, now: float) -> None:
        done = (now - self._at) * self._rate()
        if done > 0:
            for start in self._left:
                self._left[start] -= done
        self._at = now

    def _moved(self, now: float) -> dict[Hashable, float]:
        rate = self._rate()
        moved = {}
        for start, left in self._left.items():
            due = now + max(left, 0.0) / rate
            if self._due.get(start) != due:
                self._due[start] = moved[start] = due
        return moved
