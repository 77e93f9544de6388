"""What a federation of clusters hears and says besides the engine's own vocabulary.

One engine per cluster decides as it always did (``engine.events``); these name the cluster
where the engine's events cannot: a cluster's facts, an app adopted where it was launched, a
cluster lost or back, a launch that started nothing where its app was placed, and the two
decisions the federation adds - where an app was placed, said before its launch so the caller
commits it first (never launched twice), and an app taken off its cluster to be placed anew.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..events import Adopted, CapacityChanged


@dataclass(frozen=True)
class OnCluster:
    """An engine event that belongs to one cluster: its capacity and workers
    (``CapacityChanged``), or an app launched there before a restart (``Adopted``)."""

    cluster: str
    event: CapacityChanged | Adopted


@dataclass(frozen=True)
class ClusterReachable:
    """The cluster's backend answered (``reachable``) or stopped answering. While it does
    not, no driver is launched there and the apps queued for it go to the others they may
    use; its running apps stay on the books until its ``lost_timeout_s``."""

    cluster: str
    reachable: bool


@dataclass(frozen=True)
class Placed:
    """Decision: the app leaves its queue for ``cluster``; its ``LaunchDriver`` follows in the
    same step. ``attempt`` counts its placements (1 for the first): a driver that comes back
    tagged with an older attempt is not this one."""

    app_id: str
    cluster: str
    attempt: int = 1


@dataclass(frozen=True)
class LaunchUnavailable:
    """The app's launch on the cluster it was placed on failed before anything was started
    there (its backend said ``BackendUnavailable``). The federation takes it off that cluster
    and queues it again in the others it may use and has not tried (``Unplaced``), to be
    placed anew with its next attempt; with no other, in every cluster it may use."""

    app_id: str
    reason: str


@dataclass(frozen=True)
class Unplaced:
    """Decision: the app left ``cluster``, where nothing was started, and waits again in the
    queues of ``copies`` (ACCEPTED). Comes before any new ``Placed`` of it, in the same step
    or a later one, so the caller commits the move before its next launch."""

    app_id: str
    cluster: str
    copies: tuple[str, ...]
    reason: str
