"""The Connect door's gauge in ``/metrics``: ``sessionsched_connect_sessions{queue,state}``,
the sessions not released whose app is live, by leaf queue and their app's state (ACCEPTED:
queued, STARTING: its driver starting, RUNNING), read from the door's table at each scrape.
With ``connect_share_level: user`` several sessions share one app: they are counted each."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector


class SessionsCollector(Collector):
    def __init__(self, by_state: Callable[[], dict[tuple[str, str], int]]):
        self._by_state = by_state

    def collect(self) -> Iterable[GaugeMetricFamily]:
        sessions = GaugeMetricFamily(
            "sessionsched_connect_sessions",
            "Spark Connect sessions by leaf queue and their app's state", labels=["queue", "state"])
        for (queue, state), n in sorted(self._by_state().items()):
            sessions.add_metric([queue, state], n)
        yield sessions
