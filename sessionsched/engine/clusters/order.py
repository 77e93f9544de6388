"""In which order the clusters are offered the queued apps, each cycle.

The federation steps one engine per cluster in this order; each launches what fits on its
cluster, and an app launched by one is gone from the queues of the rest before they step
(``federation``). The order is the placement rule:

  spill      the clusters in the order they are listed: the first takes all it can, the next
             what the first had no room for (ordered spill-over; the default);
  most_free  most free cores first (as a fraction of the cluster's), so apps spread;
  weighted   fewest apps placed per unit of ``weight`` first, so placements over time follow
             the weights.

Every rule breaks ties by the listed order, and reads only the engines' books: a replay of
the same events decides the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

from ..scheduler import Scheduler


class PlacementRule(StrEnum):
    SPILL = "spill"
    MOST_FREE = "most_free"
    WEIGHTED = "weighted"


def free_fraction(engine: Scheduler) -> float:
    """The cores its cluster has that no driver and no executor floor or grant takes."""
    capacity = engine.capacity.cores
    if capacity <= 0:
        return 0.0
    t = engine.books.ledger.total
    return (capacity - t.driver_cores - t.committed_cores) / capacity


def cluster_order(rule: PlacementRule, names: Sequence[str], engines: Mapping[str, Scheduler],
                  weights: Mapping[str, float], placed: Mapping[str, int]) -> list[str]:
    """``names`` (in the listed order) in the order to offer them apps this cycle."""
    listed = {name: i for i, name in enumerate(names)}
    if rule is PlacementRule.MOST_FREE:
        return sorted(names, key=lambda n: (-free_fraction(engines[n]), listed[n]))
    if rule is PlacementRule.WEIGHTED:
        return sorted(names, key=lambda n: (placed.get(n, 0) / max(weights.get(n, 1.0), 1e-9),
                                            listed[n]))
    return list(names)
