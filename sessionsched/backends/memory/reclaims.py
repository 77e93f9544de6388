"""What a driver's agent does with a reclaim order (``Reclaim``), in the memory cluster: KILL
kills the executors now (their running tasks go back to pending, their work so far lost),
DECOMMISSION stops new tasks and lets each leave when its tasks are done (killed at the
deadline), IDLE releases one that is idle and skips one that is not (the engine orders it again
once it is idle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...engine.events import Reclaim
from ...model import ReclaimMode
from . import cluster_timers as timer
from .spark import SimExecutor, SparkApp

if TYPE_CHECKING:
    from .cluster import MemoryCluster


def reclaim(cluster: MemoryCluster, now: float, sa: SparkApp, d: Reclaim) -> None:
    """Carry out ``d`` on ``sa``'s executors as its agent would (the cluster's doc)."""
    for eid in d.executor_ids:
        e = sa.executors.get(eid)
        if e is None:  # already gone (idle timeout) since the engine last heard
            continue
        if d.mode is ReclaimMode.KILL:
            reclaim_kill(cluster, now, sa, e)
            continue
        if d.mode is ReclaimMode.IDLE:
            # As the agent does: release it if idle, else skip the order; the engine sees
            # it busy in the next report and orders it again once it is idle.
            if not e.tasks:
                cluster._remove(sa, e)
            continue
        e.leaving = True
        if d.mode is ReclaimMode.DECOMMISSION and d.deadline is not None:
            cluster._push(max(d.deadline, now), timer.Deadline(sa.name, eid))
        if not e.tasks:
            cluster._remove(sa, e)
    cluster._settle(now, sa)


def reclaim_kill(cluster: MemoryCluster, now: float, sa: SparkApp, e: SimExecutor) -> None:
    """Kill ``e`` now, as a reclaim does: its running tasks' work so far is lost."""
    cluster.reclaim_kills.append((now, sa.name, e.executor_id, len(e.tasks)))
    sa.usage.tasks_lost(sum(now - began for began in e.began.values()), sa.job.task_amounts)
    cluster._kill(sa, e)
