"""Where an app's driver runs, the room each place has, and which room a wait is for.

A driver counts where it runs (docs/design/admission.md, "Where a driver runs"):
  - in the cluster (``driver_in_cluster``): the cluster's cores and memory, as executors do;
  - on the scheduler's host (``AppSpec.driver_on_host``: client mode, started by the
    scheduler - the spark-submit wrapper, Livy, Connect): the host's memory, measured at start
    (``Scheduler.host_room``), and ``driver_slots`` when the config sets that cap;
  - with its user (``AppSpec.driver_with_user``: a notebook's kernel): no room the scheduler
    keeps.

A driver on the host takes ``host_need``: spark.driver.memory plus its overhead as Spark
computes it, ``spark.driver.memoryOverhead`` if set, else max(384 MiB, 10 %). Only memory
bounds the host: Spark gives a client-mode driver no cores (``spark.driver.cores`` is read in
cluster mode only), its threads share the host's cores as any process's do, while its heap is
held for as long as it runs and an out-of-memory kill is what a full host costs.

Rooms and head-of-line (``admission.plan_admissions``): a wait is *for* a room (``WAIT_ROOM``)
- the host's, or the cluster's (its in-cluster driver, its first executors) -, or for a count
every app of the queue needs (``max_running_apps``, ``starting_limit``, a gang's reservation),
which holds the whole queue. An app behind a head that waits for a room it does not need
(``rooms_needed``) is looked at as if the head were not there; one that needs a room some app
ahead of it waits for stays behind, so apps that wait for the same room keep their order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import AppSpec, Queue, Resources
from .waits import Wait, WaitCode

if TYPE_CHECKING:
    from .admission import LeafView, Room

MIN_OVERHEAD_MIB = 384  # Spark's floor for a driver's memory overhead
OVERHEAD_FACTOR = 0.10  # spark.driver.memoryOverheadFactor's default for a JVM driver

HOST = "host"
CLUSTER = "cluster"
HOST_ONLY = frozenset({HOST})
CLUSTER_ONLY = frozenset({CLUSTER})
BOTH = frozenset({HOST, CLUSTER})
NEITHER: frozenset[str] = frozenset()

# The room each wait is for; a code not here (a count, a gang's reservation) holds its queue.
WAIT_ROOM: dict[WaitCode, str] = {
    WaitCode.DRIVER_SLOT: HOST,
    WaitCode.HOST_ROOM: HOST,
    WaitCode.DRIVER_SHARE: CLUSTER,
    WaitCode.DRIVER_ROOM: CLUSTER,
    WaitCode.EXECUTOR_ROOM: CLUSTER,
    WaitCode.QUEUE_MAX_CORES: CLUSTER,
    WaitCode.RUNNING_DEMAND: CLUSTER,
}


def host_need(spec: AppSpec) -> Resources:
    """What a client-mode driver takes of the scheduler's host: its cores (shown, not bounded)
    and spark.driver.memory plus its overhead."""
    d, over = spec.driver, spec.driver_overhead_mib
    if over is None:
        over = max(MIN_OVERHEAD_MIB, int(d.mem_mib * OVERHEAD_FACTOR))
    return Resources(d.cores, d.mem_mib + over)


def rooms_needed(spec: AppSpec) -> frozenset[str]:
    """The rooms an app needs to start: the host's for a driver there, the cluster's for an
    in-cluster driver or any executor (an app that may hold none needs none of it)."""
    cluster = spec.driver_in_cluster or spec.executor_cap != 0
    if spec.driver_on_host:
        return BOTH if cluster else HOST_ONLY
    return CLUSTER_ONLY if cluster else NEITHER


def driver_place(spec: AppSpec) -> str:
    """Where the driver runs, as status pages say it: cluster, host or user."""
    if spec.driver_in_cluster:
        return CLUSTER
    return HOST if spec.driver_on_host else "user"


def driver_slot(view: LeafView, head: AppSpec, path: tuple[Queue, ...],
                room: Room) -> Wait | None:
    """A driver on the scheduler's host needs a free slot when ``driver_slots`` caps them,
    and its ``host_need`` in the host's memory left beside the drivers there."""
    if not head.driver_on_host:
        return None
    slots = room.driver_slots
    if slots is not None and room.driver_slots_free < 1:
        used = slots - room.driver_slots_free
        return Wait(WaitCode.DRIVER_SLOT,
                    f"every driver slot is in use: {used} client-mode driver(s) run on the"
                    f" scheduler host, which has {slots} slot(s)")
    free, whole = room.host_free, room.host_room
    if free is None or whole is None:
        return None
    need = host_need(head)
    if need.mem_mib <= free.mem_mib:
        return None
    return Wait(WaitCode.HOST_ROOM,
                f"no room on the scheduler's host for its client-mode driver: it needs"
                f" {need.mem_mib} MiB (spark.driver.memory {head.driver.mem_mib} MiB and its"
                f" overhead); the host's memory holds {whole.mem_mib} MiB of drivers beside the"
                f" scheduler, {max(whole.mem_mib - free.mem_mib, 0)} MiB of it held by"
                f" {room.host_drivers} client-mode driver(s) there")
