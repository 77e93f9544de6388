"""Keeping only so many ended apps in memory (``server.retained_ended_apps``).

A long-running server would otherwise hold every FINISHED/FAILED/KILLED app forever, in the
engine's books and in the service's, and list them all. As a Spark master does with
``spark.deploy.retainedDrivers``, only the most recently ended ones are kept: ``ended`` records
the ended ids in memory, oldest-ended first, so each cycle finds the ones to forget without
scanning all apps. A forgotten app leaves the engine (``Forget``) and the service's memory, and
stays in the store: reads by id (``stored_app``) answer for it from there, and a kill or
priority change of it is refused as for any ended app.
"""

from __future__ import annotations

import logging

from ..engine.events import Event, Forget
from ..store import StoredApp

log = logging.getLogger("sessionsched.service")

FORGOTTEN_CACHE = 256  # forgotten apps read back from the store, kept for repeated polls


class RetentionMixin:
    """Mixed into ``Service``; uses its lock, books (``apps``, ``ended``...), engine, store."""

    def remember(self, app: StoredApp) -> None:
        """Put a loaded app in the in-memory books (restart)."""
        self.apps[app.id] = app
        if app.spark_app_id:
            self.by_spark_id[app.spark_app_id] = app.id

    def _due_forgets(self) -> tuple[list[Event], list[str]]:
        """The oldest-ended apps beyond the limit: (Forget events for the engine, ids the engine
        never had: ended apps loaded at a restart). Call with the lock held. An app the engine
        still books executors for is kept until they are gone (and its Forget accepted)."""
        excess = len(self.ended) - self.config.server.retained_ended_apps
        events: list[Event] = []
        unbooked: list[str] = []
        if excess <= 0:
            return events, unbooked
        for app_id in self.ended:  # oldest first; stops after ``excess`` (few are skipped)
            rec = self.engine.apps.get(app_id)
            if rec is None:
                unbooked.append(app_id)
            elif rec.state.terminal and not rec.executors:
                events.append(Forget(app_id))
            else:
                continue
            excess -= 1
            if excess == 0:
                break
        return events, unbooked

    def _forget(self, app_ids: list[str]) -> None:
        """Drop forgotten apps from the service's memory (lock held). Their ended state was
        committed before they entered ``ended``, so the store answers for them from now on."""
        for app_id in app_ids:
            self.ended.pop(app_id, None)
            app = self.apps.pop(app_id, None)
            if app is not None and app.spark_app_id and \
                    self.by_spark_id.get(app.spark_app_id) == app_id:
                del self.by_spark_id[app.spark_app_id]
            self.agents.pop(app_id, None)
            self.sessions.discard(app_id)
            self.session_since.pop(app_id, None)
            self.adopt_retry.pop(app_id, None)
            self._why.pop(app_id, None)
            self._killers.pop(app_id, None)
        if app_ids:
            self.version += 1
            log.debug("forgot %d ended app(s) beyond server.retained_ended_apps", len(app_ids))

    def stored_app(self, app_id: str) -> StoredApp | None:
        """The app from memory, else (forgotten) from the store. Only an ended app is read from
        the store: a live one not in memory is a submission whose commit is being applied."""
        with self.lock:
            app = self.apps.get(app_id)
            if app is not None:
                return app
            app = self._forgotten_cache.get(app_id)
        if app is not None:
            return app
        app = self.store.get_app(app_id)
        if app is None or not app.state.terminal:
            return None
        with self.lock:
            self._forgotten_cache[app_id] = app
            while len(self._forgotten_cache) > FORGOTTEN_CACHE:
                self._forgotten_cache.popitem(last=False)
        return app
