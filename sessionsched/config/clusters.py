"""Several clusters behind one queue tree (docs/operator/clusters.md): the ``clusters:``
registry of the server's config.

Each entry is what ``cluster:`` takes (``ClusterSection``: the backend and its settings) plus
its ``name``, ``labels``, ``weight`` (the ``weighted`` placement rule) and ``lost_timeout``
(seconds it may stay unreachable before its running apps end FAILED). Today's single
``cluster:`` is a registry of one, named ``default``: code that reads ``config.cluster`` keeps
working for the one-cluster case, and everything that serves several reads
``ServerConfig.cluster_registry()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field, field_validator

from .sections import ClusterSection

DEFAULT_CLUSTER = "default"  # the name of today's single ``cluster:``
# As the engine's own default (``engine.clusters.LOST_TIMEOUT_S``; config sits below the engine).
LOST_TIMEOUT_S = 600.0
PLACEMENTS = ("spill", "most_free", "weighted")  # ``engine.clusters.PlacementRule``
BOTH_SET = "cluster: and clusters: both set: one cluster is `cluster:`, several `clusters:`"


class NamedCluster(ClusterSection):
    """One entry of ``clusters:``."""

    name: str = Field(min_length=1, max_length=64)
    labels: dict[str, str] = Field(default_factory=dict)
    weight: float = Field(1.0, gt=0)
    lost_timeout: float = Field(LOST_TIMEOUT_S, gt=0)

    @field_validator("name")
    @classmethod
    def _plain(cls, v: str) -> str:
        # Named in spark.sessionsched.cluster=a,b and in metric labels: no commas, no spaces.
        if not all(ch.isalnum() or ch in "-_." for ch in v):
            raise ValueError(f"{v!r}: a cluster's name takes letters, digits, '-', '_' and '.'")
        return v


def as_registry(cluster: ClusterSection) -> tuple[NamedCluster, ...]:
    """Today's ``cluster:`` as a registry of one named ``default``."""
    fields = {k: getattr(cluster, k) for k in cluster.model_fields_set}
    return (NamedCluster.model_validate({**fields, "name": DEFAULT_CLUSTER}),)


def registry_problem(clusters: Sequence[NamedCluster],
                     uses: Mapping[str, Sequence[str]]) -> str | None:
    """What is wrong with the registry and the clusters the queues name, one line, or None.
    ``uses``: where (``queues: root.etl.clusters``) -> the clusters named there."""
    names = [c.name for c in clusters]
    for i, c in enumerate(clusters):
        if c.name in names[:i]:
            return (f"clusters[{i}].name: {c.name!r} is already the name of "
                    f"clusters[{names.index(c.name)}]")
    for where, wanted in uses.items():
        unknown = [c for c in wanted if c not in names]
        if unknown:
            return f"{where}: unknown cluster {unknown[0]!r} (clusters: {', '.join(names)})"
    return None
