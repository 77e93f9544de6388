"""Keeping only so many ended apps in memory (``server.retained_ended_apps``).

A long-running server would otherwise hold every FINISHED/FAILED/KILLED app forever, in the
engine's books and in the registry, and list them all. As a Spark master does with
``spark.deploy.retainedDrivers``, only the most recently ended ones are kept: ``Retention``
records the ended ids, oldest-ended first, so each cycle finds the ones to forget without
scanning all apps. A forgotten app leaves the engine (``Forget``), the registry and the read
view's final apps, and stays in the store: reads by id (``Retention.stored``) answer for it
from there, and a kill or priority change of it is refused as for any ended app.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from sessionsched.engine.events import Forget
from sessionsched.engine.view import EngineView
from sessionsched.service.reads import AppRead
from sessionsched.store import Store

FORGOTTEN_CACHE = 256  # forgotten apps read back from the store, kept for repeated polls


class Retention:
    def __init__(self, limit: int, store: Store):
        self.limit = limit
        self._store = store
        self._ended: dict[str, None] = {}  # ended ids, oldest-ended first (insertion order)
        self._cache: OrderedDict[str, AppRead] = OrderedDict()
        self._lock = threading.Lock()

    def ended(self, app_ids: list[str]) -> None:
        """These apps have ended (committed): newest last."""
        for app_id in app_ids:
            self._ended[app_id] = None

    def ended_ids(self) -> list[str]:
        """The ended apps in memory, oldest-ended first."""
        return list(self._ended)

    def due(self, engine: EngineView) -> tuple[list[Forget], list[str]]:
        """The oldest-ended apps beyond the limit: (Forget events for the engine, ids the
        engine never had: ended apps loaded at a restart). An app the engine still books
        executors for is kept until they are gone (and its Forget accepted)."""
        excess = len(self._ended) - self.limit
        events: list[Forget] = []
        unbooked: list[str] = []
        if excess <= 0:
            return events, unbooked
        for app_id in self._ended:  # oldest first; stops after ``excess`` (few are skipped)
            facts = engine.apps.get(app_id)
            if facts is None:
                unbooked.append(app_id)
            elif facts.state.terminal and not facts.executors:
                events.append(Forget(app_id))
            else:
                continue
            excess -= 1
            if excess == 0:
                break
        return events, unbooked

    def forgotten(self, app_ids: list[str]) -> None:
        for app_id in app_ids:
            self._ended.pop(app_id, None)

    def stored(self, app_id: str) -> AppRead | None:
        """A forgotten (ended) app, read from the store. Only an ended app is read from there:
        a live one not in memory is a submission whose commit is being applied."""
        with self._lock:
            hit = self._cache.get(app_id)
        if hit is not None:
            return hit
        app = self._store.get_app(app_id)
        if app is None or not app.state.terminal:
            return None
        read = AppRead.stored(app)
        with self._lock:
            self._cache[app_id] = read
            while len(self._cache) > FORGOTTEN_CACHE:
                self._cache.popitem(last=False)
        return read

    def spark_app(self, spark_app_id: str) -> str | None:
        return self._store.app_id_of_spark_app(spark_app_id)
