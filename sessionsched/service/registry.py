"""What each app was submitted with: the service's in-memory record of accepted apps
(``Submissions``, the registry; not the intake's ``new_apps``, which checks a request).

It keeps each app's ``Submission`` (what never changes once an app is accepted: its spec and
what launches it) and where its driver's log is once it has been launched. It holds no
scheduling state: the app's state, priority, times and executors are the engine's
(``EngineView``) and the store's. Read views share the registry; submissions are immutable and
replaced whole, so a reader that looked one up holds a consistent record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sessionsched.model.submission import Submission


class Submissions:
    """app id -> Submission, safe to read from any thread; also by queue, so one queue's list
    copies and walks that queue's submissions only, not every app's."""

    def __init__(self) -> None:
        self._by_id: dict[str, Submission] = {}
        self._by_queue: dict[str, dict[str, Submission]] = {}
        self._logs: dict[str, str | None] = {}  # app id -> its driver's log, once launched
        self._lock = threading.Lock()

    def get(self, app_id: str) -> Submission | None:
        return self._by_id.get(app_id)

    def log_path(self, app_id: str) -> str | None:
        """Where the app's driver logs (None: not launched, or not logging here)."""
        return self._logs.get(app_id)

    def __contains__(self, app_id: object) -> bool:
        return app_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def snapshot(self, queue: str | None = None) -> dict[str, Submission]:
        """A copy to iterate over while others add and remove (of ``queue``'s apps only, if
        given), in the order they were put."""
        with self._lock:
            if queue is None:
                return dict(self._by_id)
            return dict(self._by_queue.get(queue, ()))

    def newest(self, queue: str, while_: Callable[[Submission], bool]) -> list[Submission]:
        """``queue``'s submissions, newest first, as long as ``while_`` holds: O(those)."""
        out = []
        with self._lock:
            for sub in reversed(self._by_queue.get(queue, {}).values()):
                if not while_(sub):
                    break
                out.append(sub)
        return out

    def put(self, sub: Submission, log_path: str | None = None) -> None:
        """``log_path``: where a restored app's driver logs."""
        with self._lock:
            old = self._by_id.get(sub.id)
            if old is not None and old.queue != sub.queue:
                self._unset(sub.id)
            self._by_id[sub.id] = sub
            self._by_queue.setdefault(sub.queue, {})[sub.id] = sub
            if log_path is not None:
                self._logs[sub.id] = log_path

    def launched(self, app_id: str, log_path: str | None) -> bool:
        """Where the app's driver logs, once its launch is recorded. True if that changed."""
        with self._lock:
            if app_id in self._by_id and self._logs.get(app_id) != log_path:
                self._logs[app_id] = log_path
                return True
            return False

    def drop(self, app_ids: list[str]) -> None:
        with self._lock:
            for app_id in app_ids:
                self._unset(app_id)

    def _unset(self, app_id: str) -> None:
        old = self._by_id.pop(app_id, None)
        self._logs.pop(app_id, None)
        if old is None:
            return
        apps = self._by_queue[old.queue]
        del apps[app_id]
        if not apps:
            del self._by_queue[old.queue]
