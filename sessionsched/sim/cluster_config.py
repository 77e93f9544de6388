"""A workload's ``cluster:``, as the simulator's YAML holds it (``workload`` reads the rest):
``cores`` and ``memory`` shared evenly by ``workers`` equal workers, or ``worker_groups``
(workers not all alike, each group's sizes per worker, with custom resources such as GPUs:
docs/operator/resources.md), and the model's timings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BeforeValidator, Field, model_validator

from ..config import MAX_WORKERS, WorkerGroup, group_sizes, no_equal_workers_beside
from ..config.parsing import Strict
from ..model import Resources, Worker, parse_mem_mib

MiB = Annotated[int, BeforeValidator(parse_mem_mib)]


class ClusterConfig(Strict):
    cores: int = Field(64, ge=1)
    memory: MiB = parse_mem_mib("256g")
    workers: int = Field(1, ge=1, le=MAX_WORKERS)
    # Workers not all alike instead (each group's cores and memory are per worker):
    # [{count, cores, memory, resources: {gpu: 4}}].
    worker_groups: list[WorkerGroup] | None = Field(None, min_length=1)
    driver_slots: int = Field(8, ge=0)
    driver_start_s: float = Field(5.0, ge=0)
    executor_start_s: float = Field(3.0, ge=0)
    executor_idle_timeout_s: float = Field(
        60.0, gt=0
    )  # spark.dynamicAllocation.executorIdleTimeout
    cycle_s: float = Field(1.0, gt=0)
    max_time_s: float = Field(86400.0, gt=0)
    # The CPUs the starts of drivers and executors share (``backends.memory.starts``); None:
    # each takes its latency, whatever starts beside it.
    host_cpus: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one_way(self) -> ClusterConfig:
        no_equal_workers_beside(self.worker_groups, self.model_fields_set)
        # Taken, the workers had no core (or no MiB) each, and every app was refused as
        # "never fits", the cluster's mistake named as each app's.
        if not self.worker_groups and (self.cores < self.workers or self.memory < self.workers):
            what = "core" if self.cores < self.workers else "MiB of memory"
            raise ValueError(f"{self.workers} workers share {self.cores} cores and "
                             f"{self.memory} MiB (the whole cluster's): one would get no {what}")
        return self

    def sizes(self) -> tuple[Resources, ...]:
        """Every worker's size: the groups' or ``workers`` equal shares of the cluster's."""
        if self.worker_groups:
            return group_sizes(self.worker_groups)
        return (Resources(self.cores // self.workers, self.memory // self.workers),) * self.workers

    def worker_list(self) -> tuple[Worker, ...]:
        return tuple(Worker(f"worker-{i + 1}", s, s) for i, s in enumerate(self.sizes()))

    def capacity(self) -> Resources:
        """The workers together (with ``worker_groups``, their custom resources too)."""
        if not self.worker_groups:
            return Resources(self.cores, self.memory)
        total = Resources()
        for s in self.sizes():
            total = total + s
        return total

    def to_cluster(self) -> Cluster:
        return Cluster(
            capacity=self.capacity(), driver_slots=self.driver_slots,
            driver_start_s=self.driver_start_s, executor_start_s=self.executor_start_s,
            executor_idle_timeout_s=self.executor_idle_timeout_s, cycle_s=self.cycle_s,
            max_time_s=self.max_time_s, workers=self.workers,
            sizes=group_sizes(self.worker_groups) if self.worker_groups else (),
            host_cpus=self.host_cpus)


@dataclass(frozen=True)
class Cluster:
    """A cluster as the simulator runs it (``ClusterConfig.to_cluster``)."""

    capacity: Resources
    driver_slots: int
    driver_start_s: float
    executor_start_s: float
    executor_idle_timeout_s: float
    cycle_s: float
    max_time_s: float
    workers: int = 1  # equal workers sharing ``capacity``
    sizes: tuple[Resources, ...] = ()  # or these workers (``worker_groups``)
    host_cpus: float | None = None


@dataclass(frozen=True)
class NamedCluster:
    """One of several clusters (``clusters_config``)."""

    name: str
    cluster: Cluster
    weight: float = 1.0
    lost_timeout_s: float = 600.0
