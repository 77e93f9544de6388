"""Putting the books back after a restart, from the store.

- ACCEPTED apps go back into their queues in submission order with their current priority:
  same ids, same positions.
- STARTING/RUNNING apps are adopted: ``backend.adopt(handle)`` finds the driver again (client
  drivers run in their own process session and outlive the scheduler), and the engine takes the
  app back as it was. They are never launched again. If the backend cannot tell right now, the
  app is adopted and the check is retried every cycle.
- A driver that is gone is FAILED (its exit code is unknown). An app whose launch was decided
  but whose handle was never recorded (a crash between the two) is FAILED too rather than
  launched a second time: the driver may be running.
- Ended apps: only the ``server.retained_ended_apps`` most recently ended are loaded into
  memory (and listed); older ones are read from the store by id.
- Notebook sessions have no handle (the driver lives in the notebook): they are adopted and
  their agent re-registers; one that stays silent ends by ``server.session_timeout``.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from ..backends.base import Handle
from ..engine.events import Adopted, Event, Submitted
from ..model import AppState
from ..store import AppKind, EventRecord, StoredApp

log = logging.getLogger("sessionsched.service")

GONE = "its driver was gone when the scheduler restarted"
UNRECORDED = ("its launch was decided before a restart but never recorded; not relaunched, so "
              "that no driver runs twice")


def restore(service, now: float) -> list[Event]:
    """Load the books into ``service``; the engine events that put them back (for the first
    cycle). Writes the FAILED states of drivers that did not survive, and waits for them."""
    events: list[Event] = []
    failed: list[tuple[StoredApp, str]] = []
    adopted: list[str] = []
    for app in service.store.load_last_ended(service.config.server.retained_ended_apps):
        service.remember(app)
        service.ended[app.id] = None
    for app in service.store.load_apps([s for s in AppState if not s.terminal]):
        service.remember(app)
        if app.kind == AppKind.SESSION:
            service.sessions.add(app.id)
        if app.state is AppState.ACCEPTED:
            events.append(Submitted(replace(app.spec, priority=app.priority)))
            continue
        if not app.state.admitted:
            continue
        if app.kind == AppKind.SESSION:
            service.session_since[app.id] = now
            if app.spark_app_id:
                service.backend.manage(app.id, app.spark_app_id)
        elif not app.handle:
            failed.append((app, UNRECORDED))
            continue
        else:
            handle = Handle(**app.handle)
            try:
                alive = service.backend.adopt(handle)
            except Exception as e:  # noqa: BLE001 - cannot tell now: adopt, check again later
                log.warning("cannot check %s's driver now (%s); will retry", app.id, e)
                service.adopt_retry[app.id] = handle
                alive = True
            if not alive:
                failed.append((app, GONE))
                continue
        adopted.append(app.id)
        events.append(Adopted(
            spec=replace(app.spec, priority=app.priority), state=app.state,
            priority=app.priority, launched_at=app.started_at or app.submitted_at,
            first_executor_at=app.first_executor_at,
        ))
    rows = [EventRecord(i, now, "adopted", "re-adopted after a scheduler restart")
            for i in adopted]
    changes = []
    for app, why in failed:
        changes.append({"id": app.id, "state": AppState.FAILED, "reason": why, "finished_at": now})
        rows.append(EventRecord(app.id, now, "state", f"{app.state.value} -> FAILED: {why}"))

    def after(_):
        for app, why in failed:
            app.state, app.reason, app.finished_at = AppState.FAILED, why, now
            service.sessions.discard(app.id)
            service.ended[app.id] = None

    if rows:
        service.write(changes, rows, after).result(60)
    if adopted or failed:
        log.info("restart: %d driver(s) adopted, %d failed", len(adopted), len(failed))
    return events
