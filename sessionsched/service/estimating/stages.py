"""A launched app's work left from where it is in its stages (docs/design/estimates.md).

Its name's run length alone (``live.left_s``) says little about a run that is half done: two
runs of one name differ most in how long they wait for executors, and a run's own progress
tells how far it is. So, when its agent reported its stages and its name has earlier runs
with stages stored, what it has left is counted stage by stage:

- each stage running now: its running tasks go on until they reach the stage's task length
  (from its history: at least as long as they have already run), its pending tasks follow in
  waves as wide as the app runs tasks at once;
- then each stage its earlier runs had after these, in waves of their task counts;

each stage's task length (and a later stage's task count) the median of the same stage - by
its place in the order the stages completed - over the name's earlier runs; but a running
stage with tasks completed has its own: their mean length so far says how long its tasks take
today, which its earlier runs (another day's input, another cluster's load) may not.

How many tasks the app runs at once (``slots``): while a stage has tasks pending and some
running, every task slot the app holds is running one, so its running tasks are its slots -
whatever its executors' cores, ``spark.task.cpus`` or task resources allow; otherwise (a
stage's last wave, or executors just come) its ``executors``' cores stand in - the caller's
count, the engine's latest, as the forward run's pace is (``sim.estimate.Running``).

Between two stages (its driver working alone) only the later stages count. None where this
says nothing (no stage begun yet, no earlier run with stages, or a run past its earlier runs'
stages): the caller keeps the run-length rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

from sessionsched.model.stages import ActiveStage, Progress, Run


def left_by_stage(progress: Progress, runs: Sequence[Run], executors: int,
                  executor_cores: int, now: float) -> float | None:
    """Seconds of work ``progress``'s app has left at the pace it has now."""
    runs = [r for r in runs if r]
    first = len(progress.done)  # the place of the first stage running now
    if (not runs or not (progress.active or progress.done)
            or first >= max(len(r) for r in runs)):
        return None
    since = max(0.0, now - progress.at)  # its tasks ran on since the report
    slots = _slots(progress.active, executors, executor_cores)
    left = 0.0
    for i, stage in enumerate(progress.active):
        task_s = stage.task_s if stage.task_s is not None else _task_s(runs, first + i)
        if task_s is None:
            return None
        left += _stage_left(stage, task_s, slots, since, stage.task_s is not None)
    usual = math.ceil(median(len(r) for r in runs))  # how many stages its runs have
    for place in range(first + len(progress.active), usual):
        had = [r[place] for r in runs if len(r) > place]
        if had:
            tasks = math.ceil(median(s.tasks for s in had))
            left += math.ceil(tasks / slots) * median(s.task_s for s in had)
    return left


def _stage_left(stage: ActiveStage, task_s: float, slots: int, since: float, own: bool) -> float:
    """``own``: ``task_s`` is the stage's own (its completed tasks' mean), not its history's."""
    wave_s = task_s
    left = 0.0
    if stage.running:
        ran = None if stage.oldest_running_s is None else stage.oldest_running_s + since
        if ran is None:  # not known how far its tasks are: half way, on average
            left = task_s / 2
        elif own:  # its pace today is known: a task past it is a straggler, not the pace
            left = max(task_s - ran, 0.0)
        else:
            wave_s = max(task_s, ran)  # a stage slower than its history is seen as such
            left = wave_s - ran
    return left + math.ceil(stage.pending / slots) * wave_s


def _task_s(runs: Sequence[Run], place: int) -> float | None:
    had = [r[place].task_s for r in runs if len(r) > place]
    return median(had) if had else None


def _slots(active: Sequence[ActiveStage], executors: int, executor_cores: int) -> int:
    running = sum(s.running for s in active)
    if running and any(s.pending for s in active):
        return running
    return max(running, executors * executor_cores, 1)
