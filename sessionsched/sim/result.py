"""A run's result: per-app milestones, a summary and the engine's cost (``--json``'s JSON).

Definitions (seconds from the start of the run):
- ``state``: FINISHED, FAILED, or the state the app was stuck in (ACCEPTED, STARTING or
  RUNNING). ``finished``: when its driver exited, whatever its exit code, or when it ended
  while queued (FAILED: it waited its queue's ``max_wait``, or a ``hard`` gang's timeout).
- ``gang_ready``: an app in a gang (``conf:``), the cycle at which its driver and all ``N``
  executors were held for it (``simulator._gang_ready``); null if never, and for every app
  not in a gang.
- ``makespan``: when the last app ended; in a deadlock, when the run last changed anything
  (after that only scheduler cycles happened until it was detected); ``max_time_s`` if the run
  was cut short there.
- ``completed`` / ``failed`` / ``stuck``: apps whose driver exited 0 / exited otherwise (or
  was killed, or the app waited its queue's ``max_wait``) / never ended.
- ``mean_completion``, ``p95_completion``: of ``finished - submitted`` over finished apps
  (p95 by nearest rank); null when none finished.
- ``utilization``: core-seconds spent running tasks / (cluster cores x makespan). Cores held by
  idle executors or by drivers are not use: a deadlocked cluster is at 0.
- ``utilization_by_resource``: for cores, memory and each custom resource the cluster has
  (``gpu``...), what running tasks used of it, integrated over time, / (the cluster's amount x
  makespan). A task uses ``spark.task.cpus`` cores, its executor's memory over the tasks the
  executor runs at once, and its ``spark.task.resource.{name}.amount`` of each resource: a
  stage of N tasks of S seconds at 0.5 GPU each is N x S x 0.5 GPU-seconds, exactly
  (``backends/memory/busy.py``).
- ``fairness_jain``: Jain's index (sum x)^2 / (n sum x^2) of each app's speed
  x = alone / (finished - submitted), where ``alone`` is its run time on the empty cluster (driver
  and executor start, pre-processing, stages on as many executors as it may hold); a stuck app's
  speed is 0. 1.0 means every app was slowed down alike; priorities lower it on purpose.
- ``usage`` (per app): core- and GiB-seconds its executors held, the part running tasks (busy)
  and idle, task work thrown away by reclaim, its driver's, and ``queued_s``
  (``sessionsched/model/usage.py`` defines each; held = busy + idle).
- ``whole_workers``: how many workers stayed whole (alive, nothing on them: room for the
  largest driver or executor a worker holds), the time-weighted mean from 0 to ``makespan``;
  ``whole_workers_min``: the fewest at any cycle. The queues' ``node_sort`` decides it
  (``binpacking`` keeps workers whole, ``fair`` spreads: docs/design/placement.md).
- ``plans`` (only when a server config's time-of-day plans ran: ``simulate --config --start``):
  each plan as it fired, ``at`` its second of the run (0 for the one in force at the start).
- ``engine``: number of ``Scheduler.step`` calls and their wall-clock cost (the only figures
  that differ between two runs of one workload).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Any

from ..model import AppState
from ..model.usage import AppUsage
from .record import AppTimes, Record, Timeline
from .workload import SimApp, Workload


@dataclass(frozen=True)
class AppResult:
    name: str
    queue: str
    priority: int
    state: str
    submitted: float
    admitted: float | None
    first_executor: float | None
    finished: float | None
    usage: dict[str, float | int]
    gang_ready: float | None = None
    cluster: str | None = None  # behind several clusters: where it ran (None: nowhere yet)


@dataclass(frozen=True)
class SimResult:
    apps: tuple[AppResult, ...]
    summary: dict[str, Any]
    engine: dict[str, Any]
    timeline: Timeline
    end_s: float
    end_reason: str
    queues: tuple[str, ...]
    cluster_cores: int
    executor_waits: int = 0  # granted executors that had to wait for room (pool.py); not in JSON
    several_clusters: bool = False  # each app's ``cluster`` in the JSON
    plans: tuple[tuple[float, str], ...] = ()  # (time, plan) as each of a config's fired

    def to_json(self) -> dict[str, Any]:
        return {
            "apps": [
                {
                    "name": a.name,
                    **({"cluster": a.cluster} if self.several_clusters else {}),
                    "queue": a.queue,
                    "priority": a.priority,
                    "state": a.state,
                    "submitted": a.submitted,
                    "admitted": a.admitted,
                    "first_executor": a.first_executor,
                    "finished": a.finished,
                    "gang_ready": a.gang_ready,
                    "usage": dict(a.usage),
                }
                for a in self.apps
            ],
            "summary": dict(self.summary),
            "engine": dict(self.engine),
            **({"plans": [{"at": _r(t), "plan": p} for t, p in self.plans]} if self.plans else {}),
        }

    @property
    def stuck(self) -> int:
        return int(self.summary["stuck"])


def _r(x: float | None) -> float | None:
    """Times are reported to the millisecond; it also hides float noise like 0.30000000000000004."""
    return None if x is None else round(x, 3)


def alone_s(app: SimApp, workload: Workload, cluster: str | None = None) -> float:
    """The app's run time with the whole cluster to itself (``inf`` if it can hold no executor);
    behind several clusters, the one it ran on."""
    c = next((n.cluster for n in workload.clusters if n.name == cluster), workload.cluster)
    spec = app.spec
    if not app.stages:  # the driver's work alone
        return c.driver_start_s + app.startup_s
    room = c.capacity - spec.driver if spec.driver_in_cluster else c.capacity
    fit = min(room.cores // spec.executor.cores, room.mem_mib // spec.executor.mem_mib)
    cap = spec.executor_cap
    fit = fit if cap is None else min(fit, cap)
    if fit < 1:
        return math.inf
    total = c.driver_start_s + app.startup_s + c.executor_start_s
    for stage in app.stages:
        slots = min(fit, -(-stage.tasks // spec.executor.cores)) * spec.executor.cores
        total += -(-stage.tasks // slots) * stage.task_s
    return total


def app_usage(rec: Record, name: str, t: AppTimes) -> dict[str, float | int]:
    """The app's usage figures (``sessionsched/model/usage.py``), zeros if never launched, and
    ``queued_s``: from submission until the scheduler launched it (or the run's end)."""
    usage = dict(rec.usage.get(name) or AppUsage().figures())
    usage["queued_s"] = _r((rec.end_s if t.admitted is None else t.admitted) - t.submitted)
    return usage


def jain(xs: list[float]) -> float | None:
    square_sum = sum(x * x for x in xs)
    if not xs or square_sum == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * square_sum)


def by_resource(capacity, rec: Record, makespan: float) -> dict[str, float]:
    """``utilization_by_resource`` (module doc)."""
    amounts = {"cores": capacity.cores, "memory": capacity.mem_mib, **dict(capacity.custom)}
    return {name: round(rec.busy_by_resource.get(name, 0.0) / (amount * makespan), 4)
            if amount and makespan > 0 else 0.0 for name, amount in amounts.items()}


def build_result(workload: Workload, rec: Record) -> SimResult:
    apps = []
    completions = []
    speeds = []
    failed = 0
    for app in workload.apps:
        t = rec.apps[app.name]
        state = t.state.value if t.state is not None else AppState.ACCEPTED.value
        if t.finished is not None and t.state in (AppState.FAILED, AppState.KILLED):
            failed += 1  # ended, but not a completion: no speed either
        elif t.finished is not None:
            state = AppState.FINISHED.value
            took = t.finished - t.submitted
            completions.append(took)
            speeds.append(alone_s(app, workload, t.cluster) / took if took > 0 else 1.0)
        else:
            speeds.append(0.0)
        apps.append(
            AppResult(
                name=app.name,
                queue=app.spec.queue,
                priority=t.priority,
                state=state,
                submitted=_r(t.submitted),
                admitted=_r(t.admitted),
                first_executor=_r(t.first_executor),
                finished=_r(t.finished),
                usage=app_usage(rec, app.name, t),
                gang_ready=_r(t.gang_ready),
                cluster=t.cluster,
            )
        )
    stuck = len(workload.apps) - len(completions) - failed
    makespan = rec.makespan_s
    capacity = total_capacity(workload)
    cores = capacity.cores
    utilization = rec.busy_core_s / (cores * makespan) if makespan > 0 else 0.0
    summary = {
        "makespan": _r(makespan),
        "completed": len(completions),
        "stuck": stuck,
        "failed": failed,
        "mean_completion": _r(sum(completions) / len(completions)) if completions else None,
        "p95_completion": _r(_nearest_rank(completions, 0.95)) if completions else None,
        "utilization": round(utilization, 4),
        "utilization_by_resource": by_resource(capacity, rec, makespan),
        "fairness_jain": None if (j := jain(speeds)) is None else round(j, 4),
        "whole_workers": _r(rec.timeline.whole_workers.mean(makespan)),
        "whole_workers_min": min(rec.timeline.whole_workers.values, default=None),
    }
    engine = {
        "cycles": len(rec.cycle_ms),
        "cycle_ms_p50": round(median(rec.cycle_ms), 3) if rec.cycle_ms else 0.0,
        "cycle_ms_max": round(max(rec.cycle_ms), 3) if rec.cycle_ms else 0.0,
    }
    return SimResult(
        apps=tuple(apps),
        summary=summary,
        engine=engine,
        timeline=rec.timeline,
        end_s=rec.end_s,
        end_reason=rec.end_reason,
        queues=tuple(q.name for q in workload.root.leaves()),
        cluster_cores=cores,
        executor_waits=rec.executor_waits,
        several_clusters=bool(workload.clusters),
        plans=tuple(rec.plans),
    )


def total_capacity(workload: Workload):
    """The cluster's capacity, or every cluster's together."""
    if not workload.clusters:
        return workload.cluster.capacity
    total = workload.clusters[0].cluster.capacity
    for named in workload.clusters[1:]:
        total = total + named.cluster.capacity
    return total


def _nearest_rank(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]
