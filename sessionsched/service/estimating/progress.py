"""The running apps' stages, as last reported, for the estimated starts.

Two sources feed it: a driver's agent with each report (``AgentDesk.heartbeat``), and a
backend that knows its apps' stages itself (the memory cluster: ``ClusterBackend.
stage_progress``, read by the cluster watch). The estimator reads it (``Estimator.refresh``)
and forgets the apps no longer launched.

Each run's completed stages are also kept in the store (``write``, the service's: the app's
``stages`` column), rewritten whenever the list grows: an app that ends, or a scheduler that stops,
leaves them there for the next run of its name (``store.work_lengths.stage_runs``). A stage
completes every few seconds at most in a typical app, so this is a small write now and then,
never one per report.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

from sessionsched.model.stages import Progress, run_to_json


class ProgressBook:
    def __init__(self, write: Callable[[list[dict], list], object] = lambda _c, _r: None):
        self._write = write
        self._lock = threading.Lock()  # agents report on the server's threads
        self._now: dict[str, Progress] = {}
        self._kept: dict[str, int] = {}  # app -> how many completed stages the store has

    def report(self, app_id: str, progress: Progress) -> None:
        with self._lock:
            self._now[app_id] = progress
            grew = len(progress.done) > self._kept.get(app_id, 0)
            if grew:
                self._kept[app_id] = len(progress.done)
        if grew:
            self._write([{"id": app_id, "stages": run_to_json(progress.done)}], [])

    def snapshot(self, keep_only: Collection[str]) -> dict[str, Progress]:
        """The apps of ``keep_only`` that have a report; every other app is forgotten."""
        with self._lock:
            for gone in self._now.keys() - set(keep_only):
                del self._now[gone]
                self._kept.pop(gone, None)
            return dict(self._now)
