"""The federation's engines as one ``EngineView``: what the server's readers (the API, status,
metrics, the agents' desk) read, whether one engine or several decide.

Each engine's view is taken after the step (each costs what changed in it); merging them is
one pass over the apps, skipped while no engine's view changed:

- ``apps``: each app as the engine that speaks for it has it (``Federation.engine_of``: its
  cluster's once placed, its home copy's while it waits);
- ``pending``: each leaf's queued apps over all copies, once each, in the one rank order;
- ``waiting``/``held``: the home copy's word on each queued app (a leaf's wait is its merged
  head's home engine's);
- ``usage``: summed over the clusters (queued apps counted once), ``capacity`` and driver
  slots summed; ``workers`` none (an app's fit is its cluster's: the engines check it);
- ``clusters``: each placed app's cluster; ``cluster_rows``: each cluster's own figures, its
  place in the placement rule's order and its engine's own view.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from heapq import merge
from types import MappingProxyType

from ...model import Queue, QueueUsage, Resources
from ..view import AppFacts, EngineView
from ..waits import Wait
from .federation import Federation
from .order import PlacementRule, cluster_order


@dataclass(frozen=True)
class ClusterRow:
    """One cluster as its engine has it: whether its backend answers, what it offers, the
    apps running there (placed, not ended) and those queued with a copy in its queue;
    ``order``: its place in the placement rule's order as the books stand (0: offered the
    queued apps first at the next step); ``view``: its engine's own (its workers, and its
    tree with ``max_cores_per_cluster`` applied: what a fit on it is asked of);
    ``drivers_in_cluster``: it runs every driver itself (``routing.run_by``); ``ranks``: its
    place by each rule (``order.PlacementRule`` value -> place), for a queue's own rule;
    ``weight`` and ``placement`` (the tree's rule): as configured, for the estimates' forward
    run (``sim.estimate``)."""

    name: str
    reachable: bool
    capacity: Resources
    driver_slots: int | None
    apps: int
    queued: int
    order: int = 0
    view: EngineView | None = field(default=None, compare=False, repr=False)
    drivers_in_cluster: bool = False
    ranks: tuple[tuple[str, int], ...] = ()
    weight: float = 1.0
    placement: str = "spill"


class MergedView:
    """Keeps the last merged view, and the engines' views it was made of."""

    def __init__(self) -> None:
        self._parts: tuple[EngineView, ...] = ()
        self._owner: dict[str, str] = {}
        self._reachable: dict[str, bool] = {}
        self._last: EngineView | None = None

    def take(self, fed: Federation) -> EngineView:
        parts = tuple(fed.engines[n].view() for n in fed.names)
        same = (self._last is not None and len(parts) == len(self._parts)
                and all(a is b for a, b in zip(parts, self._parts, strict=True))
                and self._owner == fed.owner and self._reachable == fed.reachable)
        if not same:
            self._last = merged(fed, dict(zip(fed.names, parts, strict=True)))
            self._parts, self._owner = parts, dict(fed.owner)
            self._reachable = dict(fed.reachable)
        return self._last


def _speaker(fed: Federation, app_id: str) -> str | None:
    """The cluster whose engine speaks for the app (``Federation.engine_of``)."""
    name = fed.owner.get(app_id) or fed.ended_in.get(app_id)
    if name is None and app_id in fed.queued:
        name = fed.queued[app_id].copies[0]
    return name


def merged(fed: Federation, views: dict[str, EngineView]) -> EngineView:
    apps: dict[str, AppFacts] = {}
    for name, view in views.items():
        for app_id, facts in view.apps.items():
            if app_id not in apps and _speaker(fed, app_id) in (name, None):
                apps[app_id] = facts
    pending: dict[str, tuple[str, ...]] = {}
    for leaf in {leaf for v in views.values() for leaf in v.pending}:
        lists = [[(apps[a].rank, a) for a in v.pending.get(leaf, ()) if a in apps]
                 for v in views.values()]
        pending[leaf] = tuple(dict.fromkeys(a for _, a in merge(*lists)))
    held = {a: w for name, v in views.items() for a, w in v.held.items()
            if _speaker(fed, a) == name}
    waiting: dict[str, Wait] = {}
    for leaf in {leaf for v in views.values() for leaf in v.waiting}:
        head = next((a for a in pending.get(leaf, ()) if a not in held), None)
        home = _speaker(fed, head) if head is not None else None
        wait = views[home].waiting.get(leaf) if home is not None else None
        wait = wait or next((v.waiting[leaf] for v in views.values() if leaf in v.waiting), None)
        if wait is not None:
            waiting[leaf] = wait
    first = views[fed.names[0]]
    weights = {n: c.weight for n, c in fed.clusters.items()}
    ranks = {rule.value: {name: i for i, name in enumerate(
        cluster_order(rule, fed.names, fed.engines, weights, fed.placed_count))}
        for rule in PlacementRule}
    rank = ranks[fed.placement.value]
    slots = [v.driver_slots for v in views.values()]
    return EngineView(
        root=fed.root,
        capacity=sum((v.capacity for v in views.values()), Resources()),
        driver_slots=None if None in slots else sum(slots),  # type: ignore[arg-type]
        apps=MappingProxyType(apps), pending=MappingProxyType(pending),
        waiting=MappingProxyType(waiting), usage=MappingProxyType(_usage(fed.root, views,
                                                                         pending)),
        held=MappingProxyType(held), workers=None,
        reservations=MappingProxyType({a: r for name, v in views.items()
                                       for a, r in v.reservations.items()
                                       if _speaker(fed, a) == name}),
        host_room=first.host_room,
        host_used=sum((v.host_used for v in views.values()), Resources()),
        host_drivers=sum(v.host_drivers for v in views.values()),
        clusters=MappingProxyType(dict(fed.owner)),
        cluster_rows=tuple(_row(fed, name, v, rank[name],
                                tuple((r, places[name]) for r, places in ranks.items()))
                           for name, v in views.items()),
    )


def _row(fed: Federation, name: str, view: EngineView, order: int,
         ranks: tuple[tuple[str, int], ...]) -> ClusterRow:
    queued = sum(len(p) for p in view.pending.values())
    placed = sum(1 for f in view.apps.values()
                 if f.state.admitted and fed.owner.get(f.app_id) == name)
    return ClusterRow(name, fed.reachable[name], view.capacity, view.driver_slots, placed,
                      queued, order, view, fed.clusters[name].drivers_in_cluster, ranks,
                      fed.clusters[name].weight, fed.placement.value)


def _usage(root: Queue, views: dict[str, EngineView],
           pending: dict[str, tuple[str, ...]]) -> dict[str, QueueUsage]:
    """Each queue's usage summed over the clusters; its queued apps counted once (a queued
    app has a copy in every cluster it may use), its decayed usage once (each engine reads it
    summed over every cluster already: ``arbitration.decay``)."""
    out: dict[str, QueueUsage] = {}
    for q in root.walk():
        some = [u for v in views.values() if (u := v.usage.get(q.name)) is not None]
        if not some:
            continue
        queued = sum(len(pending.get(leaf.name, ())) for leaf in q.leaves())
        users = next((u.decayed_users for u in some if u.decayed_users is not None), None)
        decayed = [u.decayed_cores for u in some if u.decayed_cores is not None]
        out[q.name] = replace(
            some[0], pending=queued,
            starting=sum(u.starting for u in some), running=sum(u.running for u in some),
            executor_cores=sum(u.executor_cores for u in some),
            driver_cores=sum(u.driver_cores for u in some),
            demand_cores=sum(u.demand_cores for u in some),
            apps=list(dict.fromkeys(a for u in some for a in u.apps)),
            decayed_cores=decayed[0] if decayed else None, decayed_users=users)
    return out
