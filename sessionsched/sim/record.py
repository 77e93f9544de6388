"""What a run records: each app's milestones, a timeline for the plot, busy core-seconds for
utilization, each app's usage, the executors reclaim killed and the wall-clock cost of every
``Scheduler.step``.

The timeline is a set of step functions (``Series``) that keep only their changes.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from ..model import AppState


@dataclass
class AppTimes:
    """Milestones of one app, seconds from the start of the run."""

    submitted: float
    priority: int
    state: AppState | None = None  # None until submitted
    admitted: float | None = None  # the scheduler decided to launch the driver
    first_executor: float | None = None  # the first executor came up (usable)
    finished: float | None = None  # the driver exited (with any exit code: see state)
    gang_ready: float | None = None  # a gang's driver and all its executors were held
    cluster: str | None = None  # behind several clusters: the one it was placed on


@dataclass
class Series:
    """A step function: ``values[i]`` holds from ``times[i]`` until ``times[i + 1]``.
    Only changes are kept, so a long quiet run costs nothing."""

    times: list[float] = field(default_factory=list)
    values: list = field(default_factory=list)

    def set(self, t: float, value) -> None:
        if self.values and self.values[-1] == value:
            return
        if self.times and self.times[-1] == t:
            self.values[-1] = value
            if len(self.values) > 1 and self.values[-2] == value:
                self.times.pop()
                self.values.pop()
            return
        self.times.append(t)
        self.values.append(value)

    def at(self, t: float):
        """The value at time ``t`` (None before the first change)."""
        i = bisect_right(self.times, t)
        return self.values[i - 1] if i else None

    def max(self, default=0):
        return max(self.values, default=default)

    def mean(self, end: float) -> float | None:
        """The time-weighted mean of the values from the first change until ``end`` (None if
        there is no stretch to weigh)."""
        if not self.times or end <= self.times[0]:
            return None
        total = 0.0
        for i, (t, v) in enumerate(zip(self.times, self.values, strict=True)):
            if t >= end:
                break
            until = min(self.times[i + 1] if i + 1 < len(self.times) else end, end)
            total += v * (until - t)
        return total / (end - self.times[0])


@dataclass
class Timeline:
    """What the plot draws, recorded at scheduler cycles."""

    executors: dict[str, Series] = field(default_factory=dict)  # app -> executors up
    executor_cores: dict[str, Series] = field(default_factory=dict)  # app -> their cores
    states: dict[str, Series] = field(default_factory=dict)  # app -> state name
    pending: dict[str, Series] = field(default_factory=dict)  # leaf queue -> queued apps
    driver_cores: Series = field(default_factory=Series)  # cores held by in-cluster drivers
    priorities: dict[str, Series] = field(default_factory=dict)  # app -> priority
    whole_workers: Series = field(default_factory=Series)  # alive workers with nothing on them


@dataclass
class Record:
    apps: dict[str, AppTimes]
    timeline: Timeline = field(default_factory=Timeline)
    busy_core_s: float = 0.0  # cores running tasks, integrated over time
    # resource -> what running tasks used of it, integrated over time (``memory.busy``)
    busy_by_resource: dict[str, float] = field(default_factory=dict)
    cycle_ms: list[float] = field(default_factory=list)
    last_change_s: float = 0.0  # when the cluster or the scheduler last changed anything
    end_s: float = 0.0
    makespan_s: float = 0.0  # see result.py
    end_reason: str = ""
    executor_waits: int = 0  # executor requests within a grant that found no room (pool.py)
    # Executors killed by a reclaim order (now, or at a decommission deadline):
    # (time, app, executor id, running tasks lost).
    reclaim_kills: list[tuple[float, str, str, int]] = field(default_factory=list)
    # Per launched app, what it used (``sessionsched/model/usage.py``'s figures) at the end.
    usage: dict[str, dict[str, float | int]] = field(default_factory=dict)
    plans: list[tuple[float, str]] = field(default_factory=list)  # (time, plan) as each fired
