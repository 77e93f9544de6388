"""Which driver-heavy apps are *launching*: the ``demand`` admission's book for
``admission_checks.one_launch``.

An app is *driver-heavy* when its in-cluster driver has at least the cores of every executor
it may hold (maxExecutors, ``spark.ego.slots.max``): a tiny app whose life is mostly JVM
starts, such as the real-cluster burst's (a 1-core driver and one 1-core executor). It is
launching from its launch until its driver is up: STARTING, no ``DriverStarted`` heard
(``AppRecord.driver_up_at``) and no executor held (a driver with an executor is surely up).
Its STARTING state ends at its queue's ``starting_timeout`` (the StateAware fallback), so a
driver whose start is never reported stops launching then: the wait behind it is bounded.

Kept per leaf queue with each app's priority, so admission can ask "which app of this queue at
or above priority P is launching" (``first_at_or_above``), and kept up to date like the
ledger: refreshed whenever an app changes (``refresh``), equal to a recount over the books
(``recount``). Under ``demand`` it holds at most one app per leaf and priority, so the lookup
is short.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import AppSpec, AppState
from .books import AppRecord


def driver_heavy(spec: AppSpec) -> bool:
    """An in-cluster driver with at least the cores of every executor its app may hold."""
    cap = spec.executor_cap
    return (spec.driver_in_cluster and cap is not None
            and spec.driver.cores >= cap * spec.executor.cores)


def is_launching(rec: AppRecord) -> bool:
    return (rec.state is AppState.STARTING and rec.driver_up_at is None and not rec.executors
            and driver_heavy(rec.spec))


class LaunchBook:
    """Launching driver-heavy apps: leaf queue -> app id -> priority."""

    def __init__(self) -> None:
        self.by_leaf: dict[str, dict[str, int]] = {}

    def refresh(self, rec: AppRecord) -> None:
        """Put the app in (with its current priority) if it is launching, else take it out."""
        leaf = rec.spec.queue
        if is_launching(rec):
            self.by_leaf.setdefault(leaf, {})[rec.app_id] = rec.priority
            return
        apps = self.by_leaf.get(leaf)
        if apps is not None and apps.pop(rec.app_id, None) is not None and not apps:
            del self.by_leaf[leaf]

    def first_at_or_above(self, leaf: str, priority: int) -> str | None:
        """A launching app of the leaf of ``priority`` or higher (the first launched), if any."""
        for app_id, p in self.by_leaf.get(leaf, {}).items():
            if p >= priority:
                return app_id
        return None

    @staticmethod
    def recount(records: Iterable[AppRecord]) -> dict[str, dict[str, int]]:
        """The book from scratch (for ``selfcheck``)."""
        out: dict[str, dict[str, int]] = {}
        for rec in records:
            if is_launching(rec):
                out.setdefault(rec.spec.queue, {})[rec.app_id] = rec.priority
        return out
