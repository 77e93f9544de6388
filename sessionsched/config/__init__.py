"""The server's configuration: its YAML file, validated and typed (``ServerConfig``), by
section -- ``sections`` (server, tls, cluster, defaults), ``access`` (auth, uploads),
``queues`` (queues, plans) -- over the machinery in ``parsing`` (one-line errors).

Every name is importable from ``sessionsched.config`` itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from ..model import NodeSort, Queue
from .access import DEFAULT_ENV_ALLOW, GROUP_NAME, AuthSection, PriorityRange, UploadsSection
from .clusters import BOTH_SET, DEFAULT_CLUSTER, NamedCluster, as_registry, registry_problem
from .guarantees import unreachable_guarantees
from .parsing import ConfigError, Strict, format_validation_error, load_yaml, parse_model
from .queues import (
    DEFAULT_QUEUES,
    PlanConfig,
    QueueConfig,
    QueueOverride,
    ShareLevel,
    apply_overrides,
    build_queue_tree,
    full_names,
    resolve_any_queue,
    resolve_queue,
    root_configs,
    share_level_of,
)
from .sections import (
    MAX_WORKERS,
    MEMORY_ONLY,
    ClusterSection,
    ConnectSection,
    DefaultsSection,
    KubernetesSection,
    ServerSection,
    TlsSection,
    WorkerGroup,
    group_sizes,
    no_equal_workers_beside,
)

__all__ = [
    "DEFAULT_ENV_ALLOW", "DEFAULT_QUEUES", "GROUP_NAME", "MAX_WORKERS", "MEMORY_ONLY",
    "STANDBY_NEEDS_POSTGRESQL",
    "DEFAULT_CLUSTER", "AuthSection", "ClusterSection", "NamedCluster", "ConfigError",
    "ConnectSection", "DefaultsSection",
    "KubernetesSection",
    "PlanConfig", "PriorityRange", "QueueConfig", "QueueOverride", "ServerConfig",
    "ServerSection", "ShareLevel", "TlsSection", "UploadsSection", "apply_overrides",
    "build_queue_tree",
    "format_validation_error", "load_server_config", "load_yaml", "parse_model",
    "resolve_any_queue", "resolve_queue", "WorkerGroup", "group_sizes",
    "no_equal_workers_beside",
]


CONNECT_NOT_ON_KUBERNETES = ("connect: the Spark Connect door's drivers run on the scheduler's "
                             "host (backend standalone or local); as Kubernetes driver pods "
                             "they are not built yet")
STANDBY_NEEDS_POSTGRESQL = ("server.standby: a standby needs a PostgreSQL store shared with "
                            "the leader (server.db_url: postgresql://...); SQLite serves one "
                            "scheduler only")


class ServerConfig(Strict):
    """The server's YAML file (docs/operator/configuration.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: ServerSection = ServerSection()
    cluster: ClusterSection = ClusterSection()
    # Several clusters behind the one queue tree (``clusters``; docs/operator/clusters.md):
    # instead of ``cluster:``, each entry named; ``placement`` orders them each cycle.
    clusters: list[NamedCluster] | None = Field(None, min_length=1)
    placement: Literal["spill", "most_free", "weighted"] = "spill"
    auth: AuthSection = AuthSection()
    uploads: UploadsSection = UploadsSection()
    defaults: DefaultsSection = DefaultsSection()
    queues: list[QueueConfig] = Field(default_factory=lambda: list(DEFAULT_QUEUES))
    plans: list[PlanConfig] = Field(default_factory=list)
    connect: ConnectSection | None = None  # the Spark Connect door, off unless set

    @model_validator(mode="after")
    def _default_queue_exists(self) -> ServerConfig:
        try:
            resolve_queue(self.queue_tree(), self.defaults.queue)
        except LookupError as e:
            if "queue" not in self.defaults.model_fields_set:  # the default, not the file's
                leaves = ", ".join(q.name for q in self.queue_tree().leaves())
                raise ValueError(
                    f"defaults.queue: not set, and its default {self.defaults.queue!r} is no "
                    f"queue here: set it to the one of {leaves} that apps naming none go to"
                ) from None
            raise ValueError(f"defaults.queue: {e}") from None
        for full, q in full_names(root_configs(self.queues)).items():
            unknown = [g for g in q.submit_groups or () if g not in self.auth.groups]
            if unknown:
                raise ValueError(f"queue {full}: submit_groups names {unknown[0]!r}, which is not "
                                 "a group of auth.groups")
        for i, plan in enumerate(self.plans):
            for name in plan.queues:
                try:
                    resolve_any_queue(self.queues, name)
                except LookupError as e:
                    raise ValueError(f"plans[{i}].queues: {e}") from None
            try:  # the tree as the plan leaves it, so that a plan never fails as it fires
                self.queue_tree(plan)
            except ValidationError as e:
                raise ValueError(f"plans[{i}]: {format_validation_error(e)}") from None
        if self.clusters is not None and "cluster" in self.model_fields_set:
            raise ValueError(BOTH_SET)
        uses = {}
        for full, q in full_names(root_configs(self.queues)).items():
            if q.clusters:
                uses[f"queues: {full}.clusters"] = q.clusters
            if q.max_cores_per_cluster:
                uses[f"queues: {full}.max_cores_per_cluster"] = list(q.max_cores_per_cluster)
            if q.max_resources_per_cluster:
                uses[f"queues: {full}.max_resources_per_cluster"] = list(
                    q.max_resources_per_cluster)
        problem = registry_problem(self.cluster_registry(), uses)
        if problem:
            raise ValueError(problem)
        if self.connect is not None and any(c.backend == "kubernetes"
                                            for c in self.cluster_registry()):
            raise ValueError(CONNECT_NOT_ON_KUBERNETES)
        if self.server.standby and not self.on_postgresql():
            raise ValueError(STANDBY_NEEDS_POSTGRESQL)
        return self

    def cluster_registry(self) -> tuple[NamedCluster, ...]:
        """The clusters the server serves, in the listed order (the order of preference):
        ``clusters:``, or ``cluster:`` as one named ``default``."""
        if self.clusters is not None:
            return tuple(self.clusters)
        return as_registry(self.cluster)

    def queue_tree(self, plan: PlanConfig | None = None) -> Queue:
        """The queue tree, with a time-of-day plan's overrides when one is given."""
        if plan is None:
            return build_queue_tree(self.queues)
        return build_queue_tree(apply_overrides(self.queues, plan.queues))

    def warnings(self) -> list[str]:
        """What this configuration asks that its backend cannot honour, or that can never be
        met, one line each (the server logs them as it starts; nothing is refused)."""
        tree = self.queue_tree()
        out = unreachable_guarantees(tree)
        packed = [q.name for q in tree.leaves() if q.node_sort is NodeSort.BINPACKING]
        # A standalone master places for itself: ``standalone``'s and ``local``'s (a local
        # standalone cluster), whether served alone (``cluster:``) or among ``clusters:``.
        masters = [c.name for c in self.cluster_registry() if c.backend in ("standalone", "local")]
        if packed and masters:
            where = f" ({', '.join(masters)})" if self.clusters is not None else ""
            out.append(
                f"node_sort binpacking ({', '.join(packed)}) is not honoured on a standalone"
                f" cluster{where}: its master places executors itself, spread over the workers"
                " unless it runs with spark.deploy.spreadOut=false (then packed for every app),"
                " and chooses the worker of a cluster-mode driver (docs/design/placement.md)")
        return out

    def connect_share_level(self, leaf: str) -> ShareLevel:
        """How the Connect door gives sessions in queue ``leaf`` (a full name) drivers."""
        return share_level_of(self.queues, leaf)

    def on_postgresql(self) -> bool:
        """The store is PostgreSQL (several schedulers may share it: one leads)."""
        return self.database_url().split(":", 1)[0].split("+", 1)[0] in ("postgresql",
                                                                          "postgres")

    def database_url(self) -> str:
        if self.server.db_url:
            return self.server.db_url
        return f"sqlite:///{Path(self.server.state_dir).resolve() / 'sessionsched.db'}"


def load_server_config(path: str | Path | None) -> ServerConfig:
    if path is None:
        return ServerConfig()
    return parse_model(ServerConfig, load_yaml(path), str(path))
