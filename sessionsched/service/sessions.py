"""Notebook sessions the service watches: a session's driver lives in its notebook's process,
so nothing but its agent tells the service it is alive. One that stays silent (no heartbeat
since it started, or since a restart adopted it) for longer than ``server.session_timeout``
is ended FAILED: its notebook is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sessionsched.engine.events import DriverExited
from sessionsched.model import AppState
from sessionsched.service.reads import ReadView


class SessionWatch:
    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._live: dict[str, float] = {}  # session -> since when it is watched (0: no restart)
        self._ending: set[str] = set()  # told to end, not yet recorded ended

    def watch(self, app_id: str, since: float = 0.0) -> None:
        self._live[app_id] = since

    def ended(self, app_ids: Iterable[str]) -> None:
        for app_id in app_ids:
            self._live.pop(app_id, None)
            self._ending.discard(app_id)

    def silent(self, now: float, view: ReadView, last_seen: Callable[[str], float]
               ) -> list[DriverExited]:
        """Sessions silent for too long: their DriverExited, saying why."""
        out = []
        for app_id, since in list(self._live.items()):
            app = view.app(app_id)
            if app is None or app.state.terminal:
                self.ended([app_id])
                continue
            if app.state is AppState.ACCEPTED or app_id in self._ending:
                continue
            last = max(last_seen(app_id), app.started_at or 0.0, since)
            if now - last > self.timeout_s:
                self._ending.add(app_id)
                why = f"session silent for over {self.timeout_s:g}s: its notebook is gone"
                out.append(DriverExited(app_id, -1, why))
        return out
