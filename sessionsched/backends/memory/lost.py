"""A worker of the memory cluster lost, as a standalone worker marked DEAD: what ran there ends.

Its in-cluster drivers exit 1; its executors are lost (running tasks go back to pending, the
app asks again for what it is granted, on the workers left); its room is gone from the
cluster's capacity (``Pool.lose``). External apps' executors there are gone too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .spark import Phase

if TYPE_CHECKING:
    from .cluster import MemoryCluster


def lose_worker(cluster: MemoryCluster, name: str) -> None:
    gone = set(cluster.pool.lose(name))
    now = cluster.now
    for sa in [sa for sa in cluster.apps.values() if sa.phase is not Phase.DONE]:
        lost = [e for e in sa.executors.values() if e.executor_id in gone]
        if sa.job.in_cluster and sa.name in gone:
            cluster._end(now, sa, 1)
        elif lost or gone.intersection(sa.starting):
            for eid in gone.intersection(sa.starting):
                del sa.starting[eid]
            for e in lost:
                cluster._kill(sa, e)
            cluster._settle(now, sa)
        else:
            continue
        cluster._touch(sa)
    for ext in cluster.externals.values():
        ext.executor_ids = [i for i in ext.executor_ids if f"{ext.spark_app_id}#{i}" not in gone]
