"""Where a running app is in its work, by Spark stage, as its driver's agent reports it
(docs/design/agent-protocol.md): the stages it has completed, each with its tasks and their
mean length, and the stages running now. Only the estimated starts read it
(``service.estimating.stages``); the engine never does.

The stages are counted in the order they completed: a recurring app (the same code run again
tomorrow) runs the same stages in the same order, so the n-th stage of today's run is
compared with the n-th of its earlier runs. An app with more stages than ``MAX_DONE`` has only
its first ones kept: past them its name's earlier runs say nothing per stage any more.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_DONE = 200  # completed stages kept per run (the agent sends no more)
MAX_ACTIVE = 20  # stages running at once, as reported


@dataclass(frozen=True, slots=True)
class DoneStage:
    tasks: int
    task_s: float  # its tasks' mean length, launch to end


@dataclass(frozen=True, slots=True)
class ActiveStage:
    tasks: int
    done: int  # tasks completed
    running: int  # tasks running now
    oldest_running_s: float | None = None  # how long its longest-running task has run
    task_s: float | None = None  # its completed tasks' mean length (None: none completed)

    @property
    def pending(self) -> int:
        return max(0, self.tasks - self.done - self.running)


@dataclass(frozen=True, slots=True)
class Progress:
    """An app's stages as last reported, ``at`` the scheduler's clock when it heard so."""

    done: tuple[DoneStage, ...]
    active: tuple[ActiveStage, ...]
    at: float


Run = tuple[DoneStage, ...]  # one finished run's completed stages, in order
Stages = tuple[Run, tuple[ActiveStage, ...]]  # a report: (completed, running now)


def run_to_json(done: Run) -> list[list[float]]:
    return [[s.tasks, s.task_s] for s in done]


def run_from_json(raw) -> Run:
    """A stored run; anything unreadable reads as no stages (the estimate then falls back to
    the run's length)."""
    try:
        return tuple(DoneStage(int(t), float(s)) for t, s in raw or ())
    except (TypeError, ValueError):
        return ()
