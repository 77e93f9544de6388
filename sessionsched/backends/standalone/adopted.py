"""An app this backend did not start (``manage``: a notebook's driver, told about by its
agent): only its executors are reported, while the master lists its application active; once
the master lists it completed, its executors are gone. Its driver is not ours to report on."""

from __future__ import annotations

from dataclasses import dataclass

from ...engine.events import Event
from ..clusterview import ClusterView
from .part import Part


@dataclass
class AdoptedApp(Part):
    def observe(self, view: ClusterView, now: float) -> list[Event]:
        sid = self.record.spark_app_id
        if any(a.id == sid for a in view.master.active_apps):
            changed = self.executors(view, sid, now)
            return [changed] if changed is not None else []
        if any(a.id == sid for a in view.master.completed_apps):
            self.exited = True
            gone = self.seen.gone(self.app_id)
            return [gone] if gone is not None else []
        return []
