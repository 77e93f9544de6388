"""The engine the service drives, for the config's cluster registry.

One cluster (today's ``cluster:``, or ``clusters:`` of one): a plain ``Scheduler``, exactly as
before. Several: a ``ServedFederation`` (one engine per cluster on the one queue tree, with the
``Scheduler``'s surface), its backend the clusters' backends as one (``FederatedBackend``),
pointed at the federation's placements so that each decision goes to its app's cluster.
"""

from __future__ import annotations

from sessionsched.backends.base import ClusterBackend
from sessionsched.backends.federated import FederatedBackend
from sessionsched.config import ServerConfig
from sessionsched.engine.clusters import ClusterSpec, PlacementRule
from sessionsched.engine.clusters.served import ServedFederation
from sessionsched.engine.scheduler import Scheduler
from sessionsched.model import Resources
from sessionsched.store import Store
from sessionsched.store.clusters import live_clusters, live_placements

Engine = Scheduler | ServedFederation


def engine_for(config: ServerConfig, backend: ClusterBackend,
               host_room: Resources | None) -> Engine:
    """``host_room``: the scheduler host's memory for its client-mode drivers."""
    registry = config.cluster_registry()
    if len(registry) == 1:
        return Scheduler(config.queue_tree(), Resources(), registry[0].driver_slots,
                         host_room=host_room)
    if not isinstance(backend, FederatedBackend) or list(backend.backends) != [
            c.name for c in registry]:
        raise ValueError(f"clusters: {', '.join(c.name for c in registry)} need one backend "
                         "each, as one FederatedBackend in the same order")
    engine = ServedFederation(
        config.queue_tree(),
        [ClusterSpec(c.name, c.weight, c.lost_timeout,
                     drivers_in_cluster=backend.backends[c.name].drivers_in_cluster)
         for c in registry],
        PlacementRule(config.placement), read_clusters=backend.cluster_reports,
        capacity=Resources(), driver_slots=None, host_room=host_room)
    backend.where = engine.cluster_of
    return engine


def recorded_clusters(store: Store, engine: Engine) -> None:
    """Before a restart adopts anything: each launched app's cluster, as its launch's commit
    recorded it (``Placed``), so it is adopted there only, and how many times each app was
    placed, so its attempts count on. Nothing to do with one cluster."""
    if isinstance(engine, ServedFederation):
        engine.recorded.update(live_clusters(store))
        engine.fed.attempts.update(live_placements(store))


def attempt_of(engine: Engine, app_id: str) -> int | None:
    """The attempt the app's driver runs as behind several clusters (its placements); None
    with one cluster, where an app is launched once and never moved."""
    return engine.attempt_of(app_id) if isinstance(engine, ServedFederation) else None


def may_move(engine: Engine, app_id: str) -> bool:
    """Whether a launch that started nothing (``BackendUnavailable``) is tried on another
    cluster rather than again on its own: behind several clusters, when the app has one to go
    to (``Federation.may_move``)."""
    return isinstance(engine, ServedFederation) and engine.may_move(app_id)
