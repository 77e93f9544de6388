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

Rooms and head-of-line (``admission.plan_admissions``): a wait is *for* a room (``room_of``)
- the host's, the cluster's (its in-cluster driver, its first executors), or a custom
resource's where cores and memory would fit and only the GPUs (say) are short -, or for a
count every app of the queue needs (``max_running_apps``, ``starting_limit``, a gang's
reservation), which holds the whole queue. An app behind a head that waits for a room it does
not need (``rooms_needed``: an app that asks for no GPU needs no GPU's room) is looked at as
if the head were not there; one that needs a room some app ahead of it waits for stays
behind, so apps that wait for the same room keep their order.

Idle sessions on the host (``idle_to_release``): a Livy or Connect session's driver runs on
the scheduler's host and holds its room between its user's jobs. In a queue with
``release_idle_sessions_after_s``, one idle that long (``ledger.quiet``: no executor held or
asked for) is stopped while an app at a queue's head waits for the host's room, and only as
many as make room for those heads: longest idle first, none if all of them would not make
room for the next head. It ends KILLED with ``model.endings.released_idle``'s reason, which
its doors give its client: the session's state is lost, so it is off unless a queue sets it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from ..model import AppSpec, Queue, Resources
from ..model.endings import released_idle
from .waits import Wait, WaitCode

if TYPE_CHECKING:
    from .admission import LeafView, Room
    from .app_books import Books
    from .ledger import AppRecord

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

_NONE = Resources()


def host_need(spec: AppSpec) -> Resources:
    """What a client-mode driver takes of the scheduler's host: its cores (shown, not bounded)
    and spark.driver.memory plus its overhead."""
    d, over = spec.driver, spec.driver_overhead_mib
    if over is None:
        over = max(MIN_OVERHEAD_MIB, int(d.mem_mib * OVERHEAD_FACTOR))
    return Resources(d.cores, d.mem_mib + over)


def resource_room(name: str) -> str:
    """The room of custom resource ``name`` (named apart from the host's and the cluster's)."""
    return f"resource {name}"


def room_of(wait: Wait) -> str | None:
    """The room a wait is for; None: a count, which holds its whole queue."""
    return wait.room if wait.room is not None else WAIT_ROOM.get(wait.code)


_WITH_RESOURCES: dict[tuple, frozenset[str]] = {}  # (rooms, custom names) -> their union


def needs_cluster(spec: AppSpec) -> bool:
    """Whether the app needs the cluster's room to start: an in-cluster driver or any executor
    (an app that may hold none needs none of it)."""
    return spec.driver_in_cluster or spec.executor_cap != 0


def rooms_needed(spec: AppSpec) -> frozenset[str]:
    """The rooms an app needs to start: the host's for a driver there, the cluster's
    (``needs_cluster``), and each custom resource's that its in-cluster driver or its
    executors ask for."""
    executors = spec.executor_cap != 0
    cluster = needs_cluster(spec)
    if spec.driver_on_host:
        rooms = BOTH if cluster else HOST_ONLY
    else:
        rooms = CLUSTER_ONLY if cluster else NEITHER
    custom = spec.executor.custom if executors else ()
    if spec.driver_in_cluster and spec.driver.custom:
        custom = (*custom, *spec.driver.custom)
    if not custom:
        return rooms
    key = (rooms, tuple(name for name, _ in custom))
    out = _WITH_RESOURCES.get(key)
    if out is None:
        out = _WITH_RESOURCES[key] = rooms | {resource_room(name) for name in key[1]}
    return out


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


# --- idle sessions released for the apps that wait for the host's room -------------------


class Quiet(NamedTuple):
    """A session's driver on the host, idle in a queue that releases them: due at ``due_at``."""

    due_at: float
    rec: AppRecord
    after_s: float


def quiet_sessions(apps: Iterable[AppRecord], leaves: Mapping[str, Queue]) -> list[Quiet]:
    """The admitted sessions on the host that idle in a queue with the setting."""
    out = []
    for rec in apps:
        spec, since = rec.spec, rec.quiet_since
        if since is None or not spec.interactive or not spec.driver_on_host:
            continue
        leaf = leaves.get(spec.queue)
        after = leaf.release_idle_sessions_after_s if leaf is not None else None
        if after is not None:
            out.append(Quiet(since + after, rec, after))
    return out


def waiting_for_host(books: Books, waiting: Mapping[str, Wait]) -> tuple[list[AppSpec],
                                                                          list[Quiet]]:
    """The queues' heads that wait for the host's room (a driver slot, or its memory), in
    rank order, and the idle sessions queues may release for them: O(admitted apps) while a
    head waits so in a tree that releases sessions, nothing otherwise."""
    if not any(q.release_idle_sessions_after_s for q in books.leaves.values()):
        return [], []  # asked first: a look per queue, not per wait (twice a step)
    pending, apps = books.pending, books.apps
    heads = [apps[pending[leaf][0][2]] for leaf, w in waiting.items()
             if w.code in (WaitCode.HOST_ROOM, WaitCode.DRIVER_SLOT) and pending.get(leaf)]
    if not heads:
        return [], []
    heads.sort(key=lambda rec: rec.rank)
    quiet = quiet_sessions((apps[a] for a in books.on_books()), books.leaves)
    return [rec.spec for rec in heads], quiet


def idle_to_release(now: float, heads: list[AppSpec], quiet: list[Quiet], free_mib: int | None,
                    slots_free: int | None) -> list[tuple[AppRecord, str]]:
    """The sessions to stop, each with its reason: for each head in turn (``heads`` in rank
    order), the longest idle of those due until the head's driver fits (``free_mib``: the
    host's memory free for drivers, None: not measured; ``slots_free``: driver slots, None:
    no cap); a head they cannot make room for stops it, releasing none for it."""
    due = sorted((q for q in quiet if q.due_at <= now), key=lambda q: (q.rec.quiet_since,
                                                                       q.rec.rank))
    free = free_mib if free_mib is not None else 1 << 60
    slots = slots_free if slots_free is not None else 1 << 30
    out: list[tuple[AppRecord, str]] = []
    for head in heads:
        need, took = host_need(head).mem_mib, 0
        while (need > free or slots < 1) and took < len(due):
            free, slots = free + host_need(due[took].rec.spec).mem_mib, slots + 1
            took += 1
        if need > free or slots < 1:
            break
        for q in due[:took]:
            idle_s = now - (q.rec.quiet_since or now)
            out.append((q.rec, released_idle(idle_s, q.after_s, q.rec.spec.queue, head.app_id)))
        del due[:took]
        free, slots = free - need, slots - 1
    return out


def release_idle(now: float, books: Books, waiting: Mapping[str, Wait],
                 host_room: Resources | None, driver_slots: int | None,
                 elsewhere: Resources = _NONE) -> list[tuple[AppRecord, str]]:
    """``idle_to_release`` for the heads ``waiting`` (the last step's) leaves waiting for the
    host's room, with the room the books leave there (and ``elsewhere``: other clusters'
    drivers on the host)."""
    heads, quiet = waiting_for_host(books, waiting)
    if not quiet:
        return []
    t = books.ledger.total
    free = (None if host_room is None
            else host_room.mem_mib - t.host_driver_mem_mib - elsewhere.mem_mib)
    slots = None if driver_slots is None else driver_slots - t.client_drivers
    return idle_to_release(now, heads, quiet, free, slots)
