"""What the memory cluster's timers fire (``MemoryCluster._handle``): plain facts, one kind per
thing that happens to a driver or an executor when its time comes.

- ``DriverUp``: a launched driver is up (``driver_start_s`` after it got its room);
- ``StartupDone``: its pre-processing is over (the job's ``startup_s``): it runs its stages;
- ``ExecutorUp``: a requested executor is usable (``executor_start_s`` after it got room);
- ``TaskDone``: a task finished on an executor;
- ``IdleCheck``: an executor idle since ``idle_since`` reached the idle timeout;
- ``Deadline``: a decommissioning executor's deadline: killed if still there;
- ``RampDue``: a ramping app's next request is due (``SparkApp.ramp``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DriverUp:
    app: str


@dataclass(frozen=True)
class StartupDone:
    app: str


@dataclass(frozen=True)
class ExecutorUp:
    app: str
    executor_id: str


@dataclass(frozen=True)
class TaskDone:
    app: str
    executor_id: str
    task_id: int


@dataclass(frozen=True)
class IdleCheck:
    app: str
    executor_id: str
    idle_since: float


@dataclass(frozen=True)
class Deadline:
    app: str
    executor_id: str


@dataclass(frozen=True)
class RampDue:
    app: str
    at: float
