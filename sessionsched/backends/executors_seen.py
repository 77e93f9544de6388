"""An app's executors as a backend last reported them: ``ExecutorsChanged`` only when the set
changed. ``started_at`` is when the backend first saw each one (the cluster's lists say
nothing of idleness: ``idle`` is False), ``worker`` where it runs when the backend's lists say
(a standalone worker's id, a Kubernetes node's name: what reclaim for an executor short of a
GPU reads, ``engine.reclaim``); the list is ordered by first sight, then by numeric executor
id."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..engine.events import ExecutorsChanged
from ..model import Executor


class ExecutorsSeen:
    def __init__(self) -> None:
        self.first_seen: dict[str, float] = {}  # executor id -> time first seen
        self.reported: frozenset[str] = frozenset()

    def update(self, app_id: str, current_ids: Iterable[str], now: float,
               workers: Mapping[str, str] | None = None) -> ExecutorsChanged | None:
        """ExecutorsChanged if ``current_ids`` differ from the last report. ``workers``:
        executor id -> the worker it runs on, where known (an executor never moves)."""
        current = set(current_ids)
        workers = workers or {}
        for eid in current - self.first_seen.keys():
            self.first_seen[eid] = now
        for eid in self.first_seen.keys() - current:
            del self.first_seen[eid]
        if frozenset(current) == self.reported:
            return None
        self.reported = frozenset(current)
        executors = sorted(
            (Executor(eid, started_at=self.first_seen[eid], idle=False,
                      worker=workers.get(eid, "")) for eid in current),
            key=lambda e: (e.started_at, _numeric(e.executor_id)),
        )
        return ExecutorsChanged(app_id, tuple(executors))

    def gone(self, app_id: str) -> ExecutorsChanged | None:
        """An empty ExecutorsChanged if any executor was reported: the app's are all gone."""
        if not self.reported:
            return None
        self.reported = frozenset()
        return ExecutorsChanged(app_id, ())


def _numeric(executor_id: str) -> tuple[int, str]:
    return (int(executor_id), "") if executor_id.isdigit() else (1 << 62, executor_id)
