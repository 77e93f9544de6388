"""Cluster backends, by the name ``cluster.backend`` gives in the server's config.

* ``standalone``: a Spark standalone cluster at ``cluster.master`` / ``cluster.master_ui``
  (``standalone.StandaloneBackend``);
* ``local``: the same backend on the local cluster ``sessionsched cluster up`` recorded in
  ``cluster.dir``, by default ``<server.state_dir>/cluster`` (the default ``--dir`` of
  ``cluster up`` when the state dir is the default ``./.sessionsched``); its URLs come from
  that record, not from the config;
* ``memory``: an in-process cluster of ``cluster.workers`` x ``cluster.cores`` cores and
  ``cluster.memory`` (``memory.MemoryBackend``): no Spark at all; drivers and executors start
  after ``cluster.driver_start_s`` / ``cluster.executor_start_s``, run their work
  (``cluster.work_s`` unless ``spark.sessionsched.memory.work`` says otherwise) and exit. It
  lives in the server's process: drivers do not survive a server restart;
* ``kubernetes``: drivers as pods, launched with ``spark-submit --master k8s://...`` in
  cluster mode (``kubernetes.KubernetesBackend``, settings in ``cluster.kubernetes``).

standalone, local and kubernetes keep their driver records, exit files and default logs in
``<server.state_dir>/drivers``; with several clusters their backends share it: each file is
named by the app's id, which is the server's, and no backend lists the folder.
An unknown name raises LookupError naming the known ones.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..model import Resources
from .base import BackendError, BackendUnavailable, ClusterBackend, Handle, Launch

if TYPE_CHECKING:
    from ..config import ServerConfig

__all__ = ["BACKENDS", "BackendError", "BackendUnavailable", "ClusterBackend", "Handle", "Launch",
           "create_backend", "create_backends", "serving_backend"]


def _standalone(config: ServerConfig) -> ClusterBackend:
    from .standalone import StandaloneBackend

    state = Path(config.server.state_dir)
    return StandaloneBackend(config.cluster.master, config.cluster.master_ui, state / "drivers",
                             config.cluster.driver_slots)


def _local(config: ServerConfig) -> ClusterBackend:
    from .local import ClusterError, LocalCluster
    from .standalone import StandaloneBackend

    state = Path(config.server.state_dir)
    try:
        cluster = LocalCluster.load(config.cluster.dir or state / "cluster")
    except ClusterError as e:
        raise BackendError(f"cluster.backend local: {e}") from None
    return StandaloneBackend(cluster.master_url, cluster.master_ui, state / "drivers",
                             config.cluster.driver_slots, rest_url=cluster.rest_url)


def _kubernetes(config: ServerConfig) -> ClusterBackend:
    from .kubernetes import KubernetesBackend

    state = Path(config.server.state_dir)
    return KubernetesBackend(config.cluster.kubernetes, state / "drivers",
                             config.cluster.driver_slots)


def _memory(config: ServerConfig) -> ClusterBackend:
    from ..config import group_sizes
    from .memory import MemoryBackend, MemoryCluster

    c = config.cluster
    sizes = group_sizes(c.worker_groups) if c.worker_groups else ()
    cluster = MemoryCluster(
        Resources(c.workers * c.cores, c.workers * c.memory), c.driver_slots,
        driver_start_s=c.driver_start_s, executor_start_s=c.executor_start_s,
        executor_idle_timeout_s=c.executor_idle_timeout_s, work_s=c.work_s, workers=c.workers,
        sizes=sizes,
    )
    return MemoryBackend(cluster)


BACKENDS: dict[str, Callable[[ServerConfig], ClusterBackend]] = {
    "standalone": _standalone,
    "local": _local,
    "kubernetes": _kubernetes,
    "memory": _memory,
}


def create_backend(config: ServerConfig) -> ClusterBackend:
    """The backend ``config.cluster.backend`` names."""
    name = config.cluster.backend
    factory = BACKENDS.get(name)
    if factory is None:
        raise LookupError(f"unknown cluster backend {name!r}; known: {', '.join(BACKENDS)}")
    return factory(config)


def create_backends(config: ServerConfig) -> dict[str, ClusterBackend]:
    """One backend per cluster of ``config.cluster_registry()``, by name, in the listed order:
    each built as ``create_backend`` builds today's ``cluster:`` from its entry."""
    out: dict[str, ClusterBackend] = {}
    for entry in config.cluster_registry():
        out[entry.name] = create_backend(config.model_copy(update={"cluster": entry}))
    return out


def serving_backend(config: ServerConfig) -> ClusterBackend:
    """What the server drives: the one cluster's backend (``create_backend``, as before), or
    with several clusters their backends as one (``FederatedBackend``), which the service
    points at its federation's placements (``FederatedBackend.where``) when it builds it."""
    if config.clusters is None:
        return create_backend(config)
    if len(config.clusters) == 1:  # a registry of one: that cluster's backend, served alone
        return create_backend(config.model_copy(update={"cluster": config.clusters[0]}))
    from .federated import FederatedBackend

    return FederatedBackend(create_backends(config), lambda _app_id: None)
