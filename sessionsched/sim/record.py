"""What a run records: each app's milestones, a timeline for the plot, busy core-seconds for
utilization and the wall-clock cost of every ``Scheduler.step``.

The timeline keeps a sample only when something in it changed since the last one (it is drawn
as steps), so a long quiet run costs no memory.
"""

from __future__ import annotations

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
    finished: float | None = None  # the driver exited


@dataclass
class Timeline:
    """Step samples: value i holds from ``times[i]`` until ``times[i + 1]``."""

    times: list[float] = field(default_factory=list)
    executors: dict[str, list[int]] = field(default_factory=dict)  # app -> executors up
    executor_cores: dict[str, list[int]] = field(default_factory=dict)  # app -> their cores
    states: dict[str, list[str]] = field(default_factory=dict)  # app -> state ("" not submitted)
    pending: dict[str, list[int]] = field(default_factory=dict)  # leaf queue -> queued apps
    driver_cores: list[int] = field(default_factory=list)  # cores held by in-cluster drivers
    _last: tuple | None = None

    def sample(
        self,
        now: float,
        executors: dict[str, int],
        cores: dict[str, int],
        states: dict[str, str],
        pending: dict[str, int],
        driver_cores: int,
    ) -> None:
        snapshot = (
            driver_cores,
            tuple(executors.values()),
            tuple(states.values()),
            tuple(pending.values()),
        )
        if snapshot == self._last:
            return
        self._last = snapshot
        self.times.append(now)
        self.driver_cores.append(driver_cores)
        for name, n in executors.items():
            self.executors.setdefault(name, []).append(n)
            self.executor_cores.setdefault(name, []).append(cores[name])
        for name, s in states.items():
            self.states.setdefault(name, []).append(s)
        for name, n in pending.items():
            self.pending.setdefault(name, []).append(n)

    def at(self, series: list, t: float):
        """The value of a step series at time ``t`` (None before the first sample)."""
        value = None
        for when, v in zip(self.times, series, strict=True):
            if when > t:
                break
            value = v
        return value


@dataclass
class Record:
    apps: dict[str, AppTimes]
    timeline: Timeline = field(default_factory=Timeline)
    busy_core_s: float = 0.0  # cores running tasks, integrated over time
    cycle_ms: list[float] = field(default_factory=list)
    last_change_s: float = 0.0  # when the cluster or the scheduler last changed anything
    end_s: float = 0.0
    end_reason: str = ""
    executor_waits: int = 0  # executor requests within a grant that found no room (pool.py)
