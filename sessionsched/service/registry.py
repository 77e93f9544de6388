"""What each app was submitted with: the service's in-memory record of accepted apps
(``AcceptedApps``, the registry; not the intake's ``new_apps``, which checks a request).

An ``AcceptedApp`` holds what never changes once an app is accepted (its id and sequence, kind,
name, user, queue, sizing, the spark-submit arguments or REST request to launch it with) plus
where its driver's log is once it has been launched. It holds no scheduling state: the app's
state, priority, times and executors are the engine's (``EngineView``) and the store's. Read
views share the registry; entries are immutable and replaced whole, so a reader that looked
one up holds a consistent record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sessionsched.model import AppSpec
from sessionsched.store import StoredApp


@dataclass(frozen=True)
class AcceptedApp:
    id: str
    seq: int
    kind: str
    name: str
    user: str
    queue: str
    submitted_at: float
    spec: AppSpec  # its priority is the one submitted; the live one is the engine's
    argv: tuple[str, ...] = ()
    conf: dict[str, str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    rest_request: dict[str, Any] | None = None
    sender: str = ""
    warnings: tuple[str, ...] = ()
    log_path: str | None = None

    @staticmethod
    def of(app: StoredApp) -> AcceptedApp:
        return AcceptedApp(
            id=app.id, seq=app.seq, kind=app.kind, name=app.name, user=app.user,
            queue=app.queue, submitted_at=app.submitted_at, spec=app.spec,
            argv=tuple(app.argv), conf=dict(app.conf), env=dict(app.env), cwd=app.cwd,
            rest_request=app.rest_request, sender=app.sender, warnings=tuple(app.warnings),
            log_path=app.log_path,
        )


class AcceptedApps:
    """app id -> AcceptedApp, safe to read from any thread; also by queue, so one queue's list
    copies and walks that queue's submissions only, not every app's."""

    def __init__(self) -> None:
        self._by_id: dict[str, AcceptedApp] = {}
        self._by_queue: dict[str, dict[str, AcceptedApp]] = {}
        self._lock = threading.Lock()

    def get(self, app_id: str) -> AcceptedApp | None:
        return self._by_id.get(app_id)

    def __contains__(self, app_id: object) -> bool:
        return app_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def snapshot(self, queue: str | None = None) -> dict[str, AcceptedApp]:
        """A copy to iterate over while others add and remove (of ``queue``'s apps only, if
        given), in the order they were put."""
        with self._lock:
            if queue is None:
                return dict(self._by_id)
            return dict(self._by_queue.get(queue, ()))

    def newest(self, queue: str, while_: Callable[[AcceptedApp], bool]) -> list[AcceptedApp]:
        """``queue``'s submissions, newest first, as long as ``while_`` holds: O(those)."""
        out = []
        with self._lock:
            for sub in reversed(self._by_queue.get(queue, {}).values()):
                if not while_(sub):
                    break
                out.append(sub)
        return out

    def put(self, sub: AcceptedApp) -> None:
        with self._lock:
            self._set(sub)

    def launched(self, app_id: str, log_path: str | None) -> bool:
        """Where the app's driver logs, once its launch is recorded. True if that changed."""
        with self._lock:
            sub = self._by_id.get(app_id)
            if sub is not None and sub.log_path != log_path:
                self._set(replace(sub, log_path=log_path))
                return True
            return False

    def drop(self, app_ids: list[str]) -> None:
        with self._lock:
            for app_id in app_ids:
                self._unset(app_id)

    def _set(self, sub: AcceptedApp) -> None:
        old = self._by_id.get(sub.id)
        if old is not None and old.queue != sub.queue:
            self._unset(sub.id)
        self._by_id[sub.id] = sub
        self._by_queue.setdefault(sub.queue, {})[sub.id] = sub

    def _unset(self, app_id: str) -> None:
        old = self._by_id.pop(app_id, None)
        if old is None:
            return
        apps = self._by_queue[old.queue]
        del apps[app_id]
        if not apps:
            del self._by_queue[old.queue]
