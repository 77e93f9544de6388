"""What a federation of clusters hears and says besides the engine's own vocabulary.

One engine per cluster decides as it always did (``engine.events``); these name the cluster
where the engine's events cannot: a cluster's facts, an app adopted where it was launched, a
cluster lost or back, and the one decision the federation adds - where an app was placed,
said before its launch so the caller commits it first (never launched twice).
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
