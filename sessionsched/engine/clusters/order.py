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

A queue may set its own rule (``Queue.placement``, inherited down the tree): the clusters
still step in the tree's order, and a cluster passes over a queued app of such a queue - it
waits there this cycle, as its queue's head, with the reason - while a cluster that comes
before it by the queue's rule steps after it, may hold the app and has the cores free now for
it to start (``cores_to_start``: its driver in the cluster and its first executors). Where no
such cluster has them, the tree's order decides, as for every other app.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

from ...model import AppSpec, Queue
from ..placement.never_fits import cores_to_start
from ..scheduler import Scheduler
from ..tree import QueueTree


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


def own_rule(path: Sequence[Queue]) -> PlacementRule | None:
    """The rule of the nearest queue on a leaf's ``path`` (root first) that sets one; None:
    the tree's."""
    for queue in reversed(path):
        if queue.placement is not None:
            return PlacementRule(queue.placement)
    return None


def own_rules(root: Queue, tree_rule: PlacementRule) -> dict[str, PlacementRule]:
    """The leaves whose rule is their own, not the tree's, with it."""
    paths = QueueTree.of(root).path
    rules = {leaf.name: own_rule(paths[leaf.name]) for leaf in root.leaves()}
    return {leaf: rule for leaf, rule in rules.items()
            if rule is not None and rule != tree_rule}


def room_now(engine: Scheduler, spec: AppSpec) -> bool:
    """Whether the engine's cluster has the cores free now (as ``free_fraction`` counts them)
    for ``spec`` (its driver where that cluster runs it: ``routing.run_by``) to start there."""
    leaf = engine.books.leaves.get(spec.queue)
    if leaf is None:
        return False
    t = engine.books.ledger.total
    return engine.capacity.cores - t.driver_cores - t.committed_cores >= cores_to_start(spec, leaf)
