"""Putting the books back after a restart, from the store (Spark's master rebuilds its memory
from its one persistence engine the same way).

- ACCEPTED apps go back into their queues in submission order with their current priority
  (the store's): same ids, same positions.
- STARTING/RUNNING apps are adopted: ``backend.adopt(handle)`` finds the driver again (client
  drivers run in their own process session and outlive the scheduler), and the engine takes the
  app back as it was. They are never launched again. If the backend cannot tell right now, the
  app is adopted and the check is retried every cycle (``watch``).
- A driver that is gone is FAILED (its exit code is unknown). An app whose launch was decided
  but whose handle was never recorded (a crash between the two) is FAILED too rather than
  launched a second time: the driver may be running.
- Ended apps: only the ``server.retained_ended_apps`` most recently ended are loaded (final
  reads, listed); older ones are read from the store by id.
- Notebook sessions have no handle (the driver lives in the notebook): they are adopted and
  their agent re-registers; one that stays silent ends by ``server.session_timeout``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..backends.base import Handle
from ..engine.events import Adopted, Event, Submitted
from ..model import AppState
from ..store import AppKind, EventRecord, Store, StoredApp
from .reads import AppRead
from .registry import Submission, Submissions
from .retention import Retention
from .sessions import SessionWatch
from .watch import GONE, ClusterWatch

log = logging.getLogger("sessionsched.service")

UNRECORDED = ("its launch was decided before a restart but never recorded; not relaunched, so "
              "that no driver runs twice")


@dataclass
class Restored:
    events: list[Event] = field(default_factory=list)  # for the first cycle
    final: dict[str, AppRead] = field(default_factory=dict)  # ended apps, oldest-ended first


def restore(store: Store, watch: ClusterWatch, registry: Submissions, retention: Retention,
            sessions: SessionWatch, write: Callable[[list[dict], list[EventRecord]], None],
            now: float) -> Restored:
    """Load the books; ``write(changes, rows)`` commits the FAILED states of drivers that did
    not survive (and returns once committed)."""
    out = Restored()
    for app in store.load_last_ended(retention.limit):
        out.final[app.id] = AppRead.stored(app)
    retention.ended(list(out.final))
    failed: list[tuple[StoredApp, str]] = []
    adopted: list[str] = []
    for app in store.load_apps([s for s in AppState if not s.terminal]):
        spec = replace(app.spec, priority=app.priority)  # the store's priority is the live one
        if app.state is AppState.ACCEPTED:
            registry.put(Submission.of(app))
            if app.kind == AppKind.SESSION:
                sessions.watch(app.id)
            out.events.append(Submitted(spec))
            continue
        if app.kind == AppKind.SESSION:
            if app.spark_app_id:
                watch.backend.manage(app.id, app.spark_app_id)
        elif not app.handle:
            failed.append((app, UNRECORDED))
            continue
        else:
            handle = Handle(**app.handle)
            try:
                alive = watch.backend.adopt(handle)
            except Exception as e:  # noqa: BLE001 - cannot tell now: adopt, check again later
                log.warning("cannot check %s's driver now (%s); will retry", app.id, e)
                watch.adopt_retry[app.id] = handle
                alive = True
            if not alive:
                failed.append((app, GONE))
                continue
        registry.put(Submission.of(app))
        if app.kind == AppKind.SESSION:
            sessions.watch(app.id, since=now)
        adopted.append(app.id)
        out.events.append(Adopted(
            spec=spec, state=app.state, priority=app.priority,
            launched_at=app.started_at or app.submitted_at,
            first_executor_at=app.first_executor_at,
        ))
    rows = [EventRecord(i, now, "adopted", "re-adopted after a scheduler restart")
            for i in adopted]
    changes = []
    for app, why in failed:
        changes.append({"id": app.id, "state": AppState.FAILED, "reason": why, "finished_at": now})
        rows.append(EventRecord(app.id, now, "state", f"{app.state.value} -> FAILED: {why}"))
    if rows:
        write(changes, rows)
    for app, why in failed:
        ended = replace(app, state=AppState.FAILED, reason=why, finished_at=now)
        out.final[app.id] = AppRead.stored(ended)
        retention.ended([app.id])
    if adopted or failed:
        log.info("restart: %d driver(s) adopted, %d failed", len(adopted), len(failed))
    return out
