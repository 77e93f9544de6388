"""Where each live app was placed, behind several clusters: the ``cluster`` its launch's
commit recorded (``service.recording``), read at a restart so an app is adopted on that
cluster only (docs/operator/clusters.md, "Never twice"); and how many times it was placed
(its ``placed`` rows, one per placement's commit), so its attempts count on from there."""

from __future__ import annotations

from sqlalchemy import func, select

from ..model import AppState
from .faults import store_faults
from .schema import AppRow, EventRow

PLACED = "placed"  # the kind of an app's event row that says where it was placed


def live_clusters(store) -> dict[str, str]:
    """App id -> its recorded cluster, for the apps not ended that have one."""
    live = [s.value for s in AppState if not s.terminal]
    q = select(AppRow.id, AppRow.cluster).where(AppRow.state.in_(live),
                                                 AppRow.cluster.is_not(None))
    with store_faults(), store.session() as s:
        return {app_id: cluster for app_id, cluster in s.execute(q)}


def live_placements(store) -> dict[str, int]:
    """App id -> how many times it was placed, for the apps not ended placed at least once."""
    live = [s.value for s in AppState if not s.terminal]
    q = (select(EventRow.app_id, func.count()).join(AppRow, AppRow.id == EventRow.app_id)
         .where(AppRow.state.in_(live), EventRow.kind == PLACED).group_by(EventRow.app_id))
    with store_faults(), store.session() as s:
        return {app_id: n for app_id, n in s.execute(q)}
