"""The memory cluster and its backend: Spark standalone modelled in process, on an injected
clock. The simulator runs on it; ``cluster.backend: memory`` runs the server on it (no Spark).

* ``cluster.MemoryCluster``: the cluster (pool of cores and memory, drivers, executors, tasks,
  dynamic allocation, the agent's reclaim), moved by ``advance(now)``;
* ``backend.MemoryBackend``: the ``ClusterBackend`` over one MemoryCluster;
* ``job``: what a ``Launch`` runs (sizes from its Spark properties; the work from
  ``spark.sessionsched.memory.*``);
* the cluster's parts: ``spark`` (one app: phases, stages, dynamic allocation), ``pool``
  (cores and memory, handed out as a master does), ``starts`` (drivers and executors starting
  on a host's CPUs), ``reclaims`` (the agent's reclaim orders), ``cluster_timers`` (what its
  timers fire), ``externals`` (apps nobody launched through a backend), ``timers`` (the event
  heap).
"""

from .backend import MemoryBackend
from .cluster import MemoryCluster
from .job import (
    EXIT_CODE,
    LAUNCH_FAILURES,
    STARTUP,
    TAIL,
    WARMUP,
    WORK,
    Job,
    Stage,
    job_from_launch,
)

__all__ = ["EXIT_CODE", "LAUNCH_FAILURES", "STARTUP", "TAIL", "WARMUP", "WORK", "Job",
           "MemoryBackend", "MemoryCluster", "Stage", "job_from_launch"]
