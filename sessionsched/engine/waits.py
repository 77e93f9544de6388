"""Why a queued app waits: a code from a small closed set, and a sentence with numbers.

Every waiting (ACCEPTED) app carries one ``Wait``: ``code`` is for machines (the API's
``reason_code``, Spark REST's ``schedulerReasonCode``, Livy's ``appInfo``, the metrics' label),
``text`` for people. The codes, in their precedence - when several hold for one app, the first
in this order is the one given (admission runs its checks in this order and stops at the first
that fails; ``admission_checks``):

  cluster_unavailable the cluster is not reachable or offers no cores: nothing starts (set by
                      the service, over any other wait)
  does_not_fit_now    the app does not fit the cluster as it is now (a worker gone under it);
                      held aside so the apps behind it go ahead (set by the never-fits check)
  parent_queue_full   a parent queue on its path runs ``max_running_apps`` apps (the path is
                      checked root first)
  queue_limit         its leaf queue runs ``max_running_apps`` apps
  starting_limit      ``stateaware``: ``starting_limit`` apps of its leaf are starting
  driver_slot         its driver on the scheduler's host needs a driver slot and every one is
                      in use (``driver_slots`` set)
  host_room           its driver on the scheduler's host needs more memory than the drivers
                      there leave of the host's (``host_room``)
  driver_share        ``demand``: its leaf's in-cluster drivers would pass ``max_driver_fraction``
  driver_room         no room in the cluster for its in-cluster driver now
  executor_room       no room for its driver and first executors beside the admitted apps'
                      drivers and floors
  queue_max_cores     its first executors would pass ``max_cores`` of a queue on its path
  running_demand      ``demand``: the running apps of its leaf want the room it would need
  gang_reserving      a gang at its queue's head reserves room as it frees until its driver and
                      all N executors are held (``gang``, docs/design/gangs.md); held / needed in
                      the sentence
  admission_slice     this cycle admitted its slice of apps (``budget``); it is looked at next cycle
  behind_app          it is not its queue's head: it waits behind the head (strict
                      head-of-line), whose wait its sentence repeats
  next_cycle          accepted, not looked at by a scheduling cycle yet

A queue's head carries its queue's wait (``Plan.waiting``, ``Scheduler.waiting``,
``EngineView.waiting``: leaf -> ``Wait``); an app behind it ``behind_app``, made when it is read
(``EngineView.wait_of``), so no cycle spends anything on the apps behind a head. The list with
every sentence: docs/user/reasons.md. A head waiting for a room (the host's, the cluster's)
holds back only the apps behind it that need that room too (``host_room``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from ..model import AppSpec, Queue, Resources

if TYPE_CHECKING:
    from .admission import Room


class WaitCode(StrEnum):
    """The closed set of reasons, in precedence order (module doc)."""

    CLUSTER_UNAVAILABLE = "cluster_unavailable"
    DOES_NOT_FIT_NOW = "does_not_fit_now"
    PARENT_QUEUE_FULL = "parent_queue_full"
    QUEUE_LIMIT = "queue_limit"
    STARTING_LIMIT = "starting_limit"
    DRIVER_SLOT = "driver_slot"
    HOST_ROOM = "host_room"
    DRIVER_SHARE = "driver_share"
    DRIVER_ROOM = "driver_room"
    EXECUTOR_ROOM = "executor_room"
    QUEUE_MAX_CORES = "queue_max_cores"
    RUNNING_DEMAND = "running_demand"
    GANG_RESERVING = "gang_reserving"
    ADMISSION_SLICE = "admission_slice"
    BEHIND_APP = "behind_app"
    NEXT_CYCLE = "next_cycle"


PRECEDENCE: dict[WaitCode, int] = {code: i for i, code in enumerate(WaitCode)}


class Wait(NamedTuple):
    """Why an app (or a queue's head) waits: ``code`` from the closed set, ``text`` the
    sentence with its numbers. A named tuple, not a dataclass: a cycle makes one per waiting
    queue, and the engine's view compares them all after each step (C-level, no Python
    ``__init__``/``__eq__`` call: +2.7 % of the steady cycle's function calls otherwise)."""

    code: WaitCode
    text: str
    # The room waited for where the code alone does not say it: a custom resource's
    # (``host_room.resource_room``) when that is what is short, not the cluster's cores.
    room: str | None = None

    def __str__(self) -> str:
        return self.text

def waited_too_long(waited_s: float, max_wait_s: float, queue: str) -> str:
    """The reason an app ends with when it waited its queue's ``max_wait``."""
    return (f"waited too long: {waited_s:.0f}s queued in {queue}, beyond its max_wait of "
            f"{max_wait_s:g}s")


# The words every reason uses (``admission_checks``).

def res(r: Resources) -> str:
    """Cores and memory as every reason writes them (negatives, from a cluster that shrank
    under its apps, as 0: nothing is free)."""
    return f"{max(r.cores, 0)} cores/{max(r.mem_mib, 0)} MiB"


def first_of(head: AppSpec, n: int) -> str:
    """What the head needs room for: its in-cluster driver and its first ``n`` executors."""
    execs = f"first {n} executor(s)" if n else ""
    if head.driver_in_cluster:
        return f"its driver and {execs}" if n else "its driver"
    return f"its {execs}"


def holders(room: Room, path: tuple[Queue, ...]) -> str:
    """Who holds the cluster's room that is not free."""
    admitted = room.admitted_in.get(path[0].name, 0)
    if admitted:
        return f"the rest is held by or promised to {admitted} admitted app(s)"
    return "the rest is held by executors of ended apps, not released yet"
