"""The live state as the estimator's input: a ``sim.estimate.Live`` from one ``ReadView``.

Bounded, so that its cost does not grow with the books: the launched apps (they hold the
cluster) and the first ``max_queued`` queued apps by (priority, submission) over all queues -
each queue's order is that same key, so they are every queue's first apps. Apps behind them
get no estimate.

How long an app works (``run_length``): the median of its name's last FINISHED runs in the
store (first executor to end: ``store.work_lengths``), else ``default_run_s``. A launched app
has that less what it has worked left (``left_s``): the time since its first executor, none
while it has had none - the time it waited for them is not work done, as its name's history
does not count it as work either. One past it is assumed to end within ``overrun_s(run_s)``:
a quarter of its run, at least a minute (docs/design/estimates.md). A launched app whose
agent reported its stages, of a name whose earlier runs had theirs stored, has instead what
its stages say it has left (``stages.left_by_stage``). Behind several clusters
each launched app names its cluster and each cluster its room (the merged view's cluster
rows), so the forward run is the federation's (``sim.estimate``).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import median

from sessionsched.model import AppState
from sessionsched.model.stages import Progress, Run
from sessionsched.service.estimating.stages import left_by_stage
from sessionsched.service.reads import ReadView
from sessionsched.sim.estimate import (
    TIMINGS,
    Live,
    LiveCluster,
    Queued,
    Running,
    Timings,
    width,
)
from sessionsched.sim.queue_trees import QueueChange

MAX_QUEUED = 300  # queued apps followed per run


@dataclass(frozen=True)
class History:
    """What the store says of the names' earlier FINISHED runs, newest first: how long each
    worked (``store.work_lengths``), and the stages of those that reported them."""

    runs: Mapping[str, list[float]] = field(default_factory=dict)
    stages: Mapping[str, list[Run]] = field(default_factory=dict)


def run_length(name: str, history: Mapping[str, list[float]], default_run_s: float) -> float:
    runs = history.get(name)
    return median(runs) if runs else default_run_s


def overrun_s(run_s: float) -> float:
    return max(60.0, 0.25 * run_s)


def left_s(run_s: float, now: float, first_executor_at: float | None) -> float:
    """What a launched app has left of ``run_s``: it works from its first executor."""
    worked = 0.0 if first_executor_at is None else max(0.0, now - first_executor_at)
    return run_s - worked if run_s > worked else overrun_s(run_s)


def chosen(view: ReadView, max_queued: int = MAX_QUEUED) -> tuple[list, list]:
    """(launched apps' facts, the first ``max_queued`` queued apps' facts, head first)."""
    launched, queued = [], []
    for facts in view.engine.apps.values():
        if facts.state is AppState.ACCEPTED:
            queued.append(facts)
        elif not facts.state.terminal and facts.launched_at is not None:
            launched.append(facts)
    return launched, heapq.nsmallest(max_queued, queued, key=lambda f: f.rank)


def names_of(view: ReadView, facts: list) -> set[str]:
    subs = (view.submissions.get(f.app_id) for f in facts)
    return {sub.name for sub in subs if sub is not None}


def live_from(view: ReadView, now: float, launched: list, queued_facts: list,
              history: History, default_run_s: float, timings: Timings = TIMINGS,
              progress: Mapping[str, Progress] | None = None,
              queue_changes: tuple[QueueChange, ...] = ()) -> Live:
    """``progress``: the launched apps' stages as last reported (``ProgressBook``);
    ``queue_changes``: what the config's plans will change from now (``queue_trees.upcoming``)."""
    engine = view.engine
    progress = progress or {}
    running: list[Running] = []
    for facts in launched:
        sub = view.submissions.get(facts.app_id)
        if sub is None:
            continue
        run_s = run_length(sub.name, history.runs, default_run_s)
        ran = max(0.0, now - facts.launched_at)
        first = facts.first_executor_at
        left = left_s(run_s, now, first)
        stages = progress.get(facts.app_id)
        if stages is not None and (staged := left_by_stage(  # the pace of ``Running.stage``
                stages, history.stages.get(sub.name, ()), facts.executors or width(sub.spec),
                sub.spec.executor.cores, now)) is not None:
            left = staged
        running.append(Running(
            spec=sub.spec, state=facts.state, priority=facts.priority,
            executors=facts.executors, remaining_s=left, launched_ago_s=ran,
            first_executor_ago_s=None if first is None else max(0.0, now - first),
            demand=facts.demand, cluster=engine.clusters.get(facts.app_id)))
    queued = []
    for facts in queued_facts:
        sub = view.submissions.get(facts.app_id)
        if sub is not None:
            queued.append(Queued(sub.spec, facts.priority,
                                 run_length(sub.name, history.runs, default_run_s)))
    rows = engine.cluster_rows  # several clusters: each its own in the forward run
    return Live(engine.root, engine.capacity, engine.driver_slots, tuple(running),
                tuple(queued), timings,
                tuple(LiveCluster(r.name, r.capacity, r.driver_slots, r.weight, r.reachable)
                      for r in rows),
                rows[0].placement if rows else Live.placement, queue_changes)
