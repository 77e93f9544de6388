"""Putting the books back after a restart, from the store (Spark's master rebuilds its memory
from its one persistence engine the same way).

- ACCEPTED apps go back into their queues in submission order with their current priority
  (the store's): same ids, same positions.
- STARTING/RUNNING apps are adopted: ``backend.adopt(handle)`` finds the driver again (client
  drivers run in their own process session and outlive the scheduler), and the engine takes the
  app back as it was. They are never launched again. If the backend cannot tell right now, the
  app is adopted and the check is retried every cycle (``watch``).
- A driver that is gone is FAILED (its exit code is unknown). An app whose launch was decided
  but whose handle was never recorded (a crash between the two) is asked of the backend
  (``recover``): its own records may name the driver (adopted, the handle recorded now), or
  show that launching again is safe (a standalone REST create: it then goes the way of a
  launch retry, due at once); otherwise it is FAILED rather than launched a second time: the
  driver may be running.
- An app whose launch failed for a transient reason and waits to be tried again
  (``launch_wait``: nothing was started; the wait is cleared on disk before each new try) is
  taken back STARTING and its retries go on (``Restored.waiting``): same count, next try when
  it was due (at once if that time has passed).
- Ended apps: only the ``server.retained_ended_apps`` most recently ended are loaded (final
  reads, listed); older ones are read from the store by id.
- Notebook sessions have no handle (the driver lives in the notebook): they are adopted and
  their agent re-registers; one that stays silent ends by ``server.session_timeout``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from sessionsched.backends.base import RELAUNCH, Handle
from sessionsched.backends.carry import Waiting
from sessionsched.engine.arbitration import Decayed
from sessionsched.engine.events import Adopted, Event, Submitted
from sessionsched.engine.scheduler import Scheduler
from sessionsched.model import AppState
from sessionsched.service.reads import AppRead
from sessionsched.service.registry import Submissions
from sessionsched.service.retention import Retention
from sessionsched.service.sessions import SessionWatch
from sessionsched.service.usage_meter import UsageMeter
from sessionsched.service.watch import GONE, ClusterWatch
from sessionsched.store import AppKind, EventRecord, Store, StoredApp
from sessionsched.store.decayed import DecayedRecord, load_decayed

log = logging.getLogger("sessionsched.service")

UNRECORDED = ("its launch was decided before a restart but never recorded; not relaunched, so "
              "that no driver runs twice")
RELAUNCHED = ("its launch was not recorded before a scheduler restart; launched again (a "
              "driver an earlier try started is looked for first, and adopted)")


@dataclass
class Restored:
    events: list[Event] = field(default_factory=list)  # for the first cycle
    final: dict[str, AppRead] = field(default_factory=dict)  # ended apps, oldest-ended first
    waiting: dict[str, Waiting] = field(default_factory=dict)  # launches to try again
    usage: dict[str, dict | None] = field(default_factory=dict)  # live app -> its usage column


def restore(store: Store, watch: ClusterWatch, registry: Submissions, retention: Retention,
            sessions: SessionWatch, write: Callable[[list[dict], list[EventRecord], dict], None],
            now: float) -> Restored:
    """Load the books; ``write(changes, rows, hours)`` commits the FAILED states of drivers
    that did not survive, their usage counted to that end from the levels stored (``hours``:
    what that adds to the hourly rollup), and returns once committed."""
    out = Restored()
    for app in store.load_last_ended(retention.limit):
        out.final[app.id] = AppRead.stored(app)
    retention.ended(list(out.final))
    failed: list[tuple[StoredApp, str]] = []
    adopted: list[str] = []
    rows: list[EventRecord] = []
    changes: list[dict] = []
    for app in store.load_apps([s for s in AppState if not s.terminal]):
        spec = app.spec  # with the store's priority: the live one
        if app.state is AppState.ACCEPTED:
            registry.put(app.submission, app.log_path)
            if app.kind == AppKind.SESSION:
                sessions.watch(app.id)
            out.events.append(Submitted(spec))
            continue
        handle = Handle(**app.handle) if app.handle else None
        if app.kind == AppKind.SESSION:
            if app.spark_app_id:
                watch.backend.manage(app.id, app.spark_app_id)
        elif handle is None and (wait := _waiting(app)) is not None:
            out.waiting[app.id] = wait
            rows.append(EventRecord(app.id, now, "adopted", f"launch retries resumed after a "
                                    f"scheduler restart ({wait.tries} failed so far)"))
        elif handle is None and (found := _recover(watch, app)) == RELAUNCH:
            out.waiting[app.id] = Waiting(0, now)
            rows.append(EventRecord(app.id, now, "adopted", RELAUNCHED))
        elif handle is None and found is None:
            failed.append((app, UNRECORDED))
            continue
        else:
            if handle is None:  # the backend's own record names the driver
                handle = found
                changes.append({"id": app.id, "handle": asdict(handle)})
                log.info("%s: its driver's handle, not recorded before the restart, was found "
                         "by the backend", app.id)
            try:
                alive = watch.backend.adopt(handle)
            except Exception as e:  # noqa: BLE001 - cannot tell now: adopt, check again later
                log.warning("cannot check %s's driver now (%s); will retry", app.id, e)
                watch.adopt_retry[app.id] = handle
                alive = True
            if not alive:
                failed.append((app, GONE))
                continue
        registry.put(app.submission, app.log_path)
        out.usage[app.id] = app.usage
        if app.kind == AppKind.SESSION:
            sessions.watch(app.id, since=now)
        if app.id not in out.waiting:
            adopted.append(app.id)
        out.events.append(Adopted(
            spec=spec, state=app.state, priority=app.priority,
            launched_at=app.started_at or spec.submitted_at,
            first_executor_at=app.first_executor_at, reason=app.reason,
        ))
    rows += [EventRecord(i, now, "adopted", "re-adopted after a scheduler restart")
             for i in adopted]
    meter = UsageMeter({app.id: app.spec for app, _ in failed}.get)
    for app, why in failed:
        change = {"id": app.id, "state": AppState.FAILED, "reason": why, "finished_at": now}
        if (column := meter.ended_unseen(app.id, app.usage, AppState.FAILED, now)) is not None:
            change["usage"] = column
        changes.append(change)
        rows.append(EventRecord(app.id, now, "state", f"{app.state.value} -> FAILED: {why}"))
    if rows or changes:
        write(changes, rows, meter.take_hours())
    for app, why in failed:
        ended = replace(app, state=AppState.FAILED, reason=why, finished_at=now)
        out.final[app.id] = AppRead.stored(ended)
        retention.ended([app.id])
    if adopted or failed or out.waiting:
        log.info("restart: %d driver(s) adopted, %d failed, %d launch(es) to try again",
                 len(adopted), len(failed), len(out.waiting))
    return out


def restore_decayed(store: Store, engine: Scheduler) -> None:
    """The decayed fair-share entries the store kept (``engine.arbitration.decay``) back in
    the engine before its first step: what a restart or a takeover keeps. A gap while no
    scheduler ran counts as the usage each key had when it stopped."""
    records = load_decayed(store)
    engine.load_decayed(((r.kind, r.queue, r.user), Decayed(r.past_cores, r.since, r.cores))
                        for r in records)
    if records:
        log.info("restart: decayed usage of %d queue(s) and user(s) restored", len(records))


def decayed_rows(changes: list[tuple[tuple[str, str, str], Decayed | None]]
                 ) -> list[DecayedRecord]:
    """``Scheduler.decayed_changes()`` as the store's records (None: the key is deleted)."""
    return [DecayedRecord(*key) if e is None
            else DecayedRecord(*key, e.past_cores, e.since_s, e.cores)
            for key, e in changes]


def _recover(watch: ClusterWatch, app: StoredApp) -> Handle | str | None:
    """What the backend knows of a launch the store did not record (``recover``); None when
    it cannot tell, also when it fails."""
    try:
        return watch.backend.recover(app.id, rest=app.kind == AppKind.REST,
                                     decided_at=app.started_at or app.spec.submitted_at)
    except Exception:  # noqa: BLE001 - cannot tell: the app is failed, never launched twice
        log.exception("backend could not look for %s's unrecorded launch", app.id)
        return None


def _waiting(app: StoredApp) -> Waiting | None:
    """The app's launch wait, if it has a readable one."""
    if app.launch_wait is None:
        return None
    try:
        return Waiting.from_json(app.launch_wait)
    except ValueError as e:
        log.error("%s: %s; its launch counts as unrecorded", app.id, e)
        return None
