"""A workload over several clusters (``workload``; docs/operator/clusters.md):

```yaml
clusters:                     # instead of `cluster:`; each takes what `cluster:` takes
  - {name: a, cores: 32, memory: 128g, workers: 4}
  - {name: b, cores: 16, memory: 64g, workers: 2, weight: 1, lost_timeout_s: 600}
placement: spill              # spill (the default), most_free, weighted
cluster_down: [{cluster: b, at: 100, until: 400}]   # b unreachable from 100 s to 400 s
queues: [{name: gpu, clusters: [b]}, ...]            # a queue may use these only
apps: [{name: x, clusters: [a], ...}]                # an app may ask for some
```

The scheduler's cycle and the run's end are one for all: ``cycle_s`` and ``max_time_s`` are
read from the first cluster and refused on the others. While a cluster is down its apps run
on (their drivers' agents still report), nothing is launched there, and its queue goes to the
others (``engine.clusters``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, model_validator

from ..engine.clusters import LOST_TIMEOUT_S, PlacementRule
from .cluster_config import ClusterConfig, Strict

ONE_FOR_ALL = ("cycle_s", "max_time_s")


class NamedClusterConfig(ClusterConfig):
    name: str = Field(min_length=1)
    weight: float = Field(1.0, gt=0)  # the ``weighted`` placement's
    lost_timeout_s: float = Field(LOST_TIMEOUT_S, gt=0)


class OutageConfig(Strict):
    cluster: str
    at: float = Field(ge=0)
    until: float = Field(gt=0)

    @model_validator(mode="after")
    def _ends_after_it_starts(self) -> OutageConfig:
        if self.until <= self.at:
            raise ValueError(f"until {self.until:g} is not after at {self.at:g}")
        return self


def clusters_problem(clusters: list[NamedClusterConfig] | None, cluster_set: bool,
                     outages: list[OutageConfig],
                     uses: list[tuple[str, list[str]]]) -> str | None:
    """What is wrong with a workload's clusters, or None. ``uses``: (where, the clusters it
    names) for every queue's and app's setting that names some."""
    if clusters is None:
        names: list[str] = []
        if outages:
            return "cluster_down: needs `clusters:` (named clusters)"
    else:
        if cluster_set:
            return "cluster: and clusters: both set: one cluster is `cluster:`, several `clusters:`"
        names = [c.name for c in clusters]
        for i, c in enumerate(clusters):
            if c.name in names[:i]:
                return f"clusters[{i}].name: {c.name!r} is already the name of clusters" \
                       f"[{names.index(c.name)}]"
            for key in ONE_FOR_ALL:
                if i and key in c.model_fields_set:
                    return (f"clusters[{i}].{key}: one for all clusters: set it on "
                            "clusters[0]")
    known = set(names)
    uses = [*uses, *((f"cluster_down[{i}].cluster", [o.cluster]) for i, o in enumerate(outages))]
    for where, cs in uses:
        unknown = [c for c in cs if c not in known]
        if unknown:
            return (f"{where}: unknown cluster {unknown[0]!r} (clusters: "
                    f"{', '.join(names) or 'none named: use `clusters:`'})")
    return outages_problem(outages, clusters[0].max_time_s if clusters else None)


def outages_problem(outages: list[OutageConfig], end_s: float | None) -> str | None:
    """Outages of one cluster that overlap or touch (the simulator would bring it back at the
    first one's end, or, listed the other way round, at the second's start), or one that
    starts after the run's end (it would never happen, without a word)."""
    for i, o in enumerate(outages):
        if end_s is not None and o.at >= end_s:
            return (f"cluster_down[{i}].at: {o.at:g} is not before the end of the run "
                    f"(clusters[0].max_time_s {end_s:g})")
        for j, other in enumerate(outages[:i]):
            if other.cluster == o.cluster and o.at <= other.until and other.at <= o.until:
                return (f"cluster_down[{i}]: {o.cluster} is already down from {other.at:g} to "
                        f"{other.until:g} (cluster_down[{j}]): give one window from "
                        f"{min(o.at, other.at):g} to {max(o.until, other.until):g}")
    return None


@dataclass(frozen=True)
class Outage:
    cluster: str
    at_s: float
    until_s: float


def placement_rule(value: str) -> PlacementRule:
    return PlacementRule(value)
