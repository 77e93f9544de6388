"""External apps in the memory cluster: Spark apps nobody launched through a backend (another
team's, or a notebook's driver), holding executors. A backend takes their usage off its
capacity unless told they are managed (``MemoryBackend.manage``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...model import Resources

if TYPE_CHECKING:
    from .cluster import MemoryCluster

ONE_CORE = Resources(1, 1024)


@dataclass
class External:
    """A Spark app running in the cluster that no backend launched."""

    spark_app_id: str
    executor: Resources
    executor_ids: list[str] = field(default_factory=list)
    started_at: float = 0.0
    ended: bool = False

    @property
    def usage(self) -> Resources:
        n = 0 if self.ended else len(self.executor_ids)
        return Resources(self.executor.cores * n, self.executor.mem_mib * n)


def usage_but(externals: Iterable[External], managed: set[str]) -> Resources:
    """What live external apps hold, but for those in ``managed`` (Spark app ids)."""
    total = Resources()
    for ext in externals:
        if ext.spark_app_id not in managed:
            total = total + ext.usage
    return total


def start_external(cluster: MemoryCluster, spark_app_id: str, executors: int,
                   executor: Resources) -> External:
    ext = External(spark_app_id, executor, started_at=cluster.now)
    for i in range(executors):
        cluster.pool.hold(f"{spark_app_id}#{i}", executor)
        ext.executor_ids.append(str(i))
    cluster.externals[spark_app_id] = ext
    return ext


def end_external(cluster: MemoryCluster, spark_app_id: str) -> None:
    ext = cluster.externals[spark_app_id]
    if not ext.ended:
        ext.ended = True
        for i in ext.executor_ids:
            cluster._give(f"{spark_app_id}#{i}")
