"""Where each live app was placed, behind several clusters: the ``cluster`` its launch's
commit recorded (``service.recording``), read at a restart so an app is adopted on that
cluster only (docs/operator/clusters.md, "Never twice")."""

from __future__ import annotations

from sqlalchemy import select

from ..model import AppState
from .faults import store_faults
from .schema import AppRow


def live_clusters(store) -> dict[str, str]:
    """App id -> its recorded cluster, for the apps not ended that have one."""
    live = [s.value for s in AppState if not s.terminal]
    q = select(AppRow.id, AppRow.cluster).where(AppRow.state.in_(live),
                                                 AppRow.cluster.is_not(None))
    with store_faults(), store.session() as s:
        return {app_id: cluster for app_id, cluster in s.execute(q)}
