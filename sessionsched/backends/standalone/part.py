"""What every part of the standalone backend keeps about one app, whatever runs its driver."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...engine.events import DriverStarted, Event, ExecutorsChanged
from ..clusterview import ClusterView
from ..driver_files import DriverRecord
from ..executors_seen import ExecutorsSeen

UNKNOWN_EXIT = -1


@dataclass
class Part:
    record: DriverRecord
    seen: ExecutorsSeen = field(default_factory=ExecutorsSeen)
    started_sent: bool = False
    exited: bool = False
    stop_requested: bool = False

    @property
    def app_id(self) -> str:
        return self.record.app_id

    def executors(self, view: ClusterView, spark_app_id: str,
                  now: float) -> ExecutorsChanged | None:
        """The app's executors in the workers' lists, each on its worker, if they changed."""
        on = view.executors_of(spark_app_id)
        return self.seen.update(self.app_id, (e.executor_id for e in on), now,
                                {e.executor_id: e.worker_id for e in on})

    def started(self) -> list[Event]:
        """DriverStarted, once, as soon as the Spark application id is known."""
        if self.record.spark_app_id and not self.started_sent:
            self.started_sent = True
            return [DriverStarted(self.app_id, self.record.spark_app_id)]
        return []
