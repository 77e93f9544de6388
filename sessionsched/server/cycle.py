"""The scheduling cycle, run by APScheduler every ``server.cycle_ms`` (see ``service``).

  1. drain the inbox (submissions, priority changes, kills, agent reports);
  2. observe the cluster (``backend.poll``, capacity) and reconcile executor counts
     (``reconcile``: a live agent speaks for its app, else the cluster's own view does);
  3. ``Scheduler.step(now, events) -> decisions``;
  4. record (``recording``): every state change, kill, exit code and Spark app id is written
     to the store and committed *before* any driver is launched or stopped, so a crash can
     never leave a launched driver the store does not know was launched;
  5. carry out: LaunchDriver -> ``backend.launch`` of ``build_launch(app)`` (sessions: nothing,
     the waiting notebook sees STARTING and starts its own driver), StopDriver ->
     ``backend.stop``, Reclaim -> kept for the app's agent to pick up once; SetTarget needs
     nothing (the agent reads the engine's target and grant at its next heartbeat);
  6. answer whoever waits on an inbox item (a kill's HTTP request returns once it is done).

Ended apps beyond ``server.retained_ended_apps`` are forgotten in step 3 (``retention``).
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace

from ..backends.base import BackendError, Handle
from ..engine.events import (
    Adopted,
    CapacityChanged,
    Decision,
    DriverExited,
    DriverStarted,
    Event,
    Forget,
    KillRequested,
    LaunchDriver,
    PriorityChanged,
    QueuesChanged,
    Reclaim,
    SetTarget,
    StopDriver,
    Submitted,
)
from ..engine.validate import EventError
from ..model import AppState, Resources
from ..store import AppKind, EventRecord
from .books import AgentState, ClusterHealth
from .launch import build_launch
from .reconcile import reconcile
from .recording import record_step

log = logging.getLogger("sessionsched.service")

COMMIT_TIMEOUT_S = 30.0
CAPACITY_EVERY_S = 2.0  # re-read the cluster's capacity at least this often


# Events that can move apps in their queues (what a status answer shows besides states,
# which come as decisions): the service's version is bumped when one was stepped.
_REORDERS = (Submitted, Adopted, PriorityChanged, KillRequested, QueuesChanged)


@dataclass
class Item:
    """An inbox entry: an engine event, and who waits for the cycle that takes it."""

    event: Event
    done: Future | None = None


class CycleMixin:
    """Mixed into ``Service``; uses its lock, books, engine, backend, inbox and writer."""

    def cycle(self) -> None:
        """One scheduling cycle (see the module doc). Never raises: a failure is logged and
        reported to whoever waits on this cycle's inbox items."""
        with self._cycle_lock:
            started = time.perf_counter()
            items = self._drain()
            error: BaseException | None = None
            try:
                self._cycle([i.event for i in items])
            except Exception as e:  # noqa: BLE001 - the loop must go on
                log.exception("scheduling cycle failed")
                error = e
            for item in items:
                if item.done is not None and not item.done.done():
                    if error is None:
                        item.done.set_result(None)
                    else:
                        item.done.set_exception(error)
            self.last_cycle_at = self.clock()
            self.metrics.cycle_seconds.observe(time.perf_counter() - started)

    def _cycle(self, events: list[Event]) -> None:
        now = self.clock()
        events = events + self._observe(now) + self._housekeeping(now)
        with self.lock:
            forgets, unbooked = self._due_forgets()
            events = self._known(events) + forgets
            waiting = dict(self.engine.waiting)
            decisions, events = self._step(now, events)
            if (decisions or self.engine.waiting != waiting
                    or any(isinstance(ev, _REORDERS) for ev in events)):
                self.version += 1
            record = record_step(now, events, decisions, self.apps, self.engine.apps,
                                 self._why, self._killers)
            # A notebook's driver is not the backend's: tell it the Spark app is ours, so it
            # reports its executors and stops counting them as someone else's usage.
            sessions = [(ev.app_id, ev.spark_app_id) for ev in events
                        if isinstance(ev, DriverStarted) and ev.spark_app_id
                        and self.apps[ev.app_id].kind == AppKind.SESSION]
            for d in decisions:
                if isinstance(d, Reclaim):
                    self.agents.setdefault(d.app_id, AgentState(seen_at=0.0)).orders.append(d)
            self._forget(unbooked + [ev.app_id for ev in events if isinstance(ev, Forget)])
        try:
            self.write(record.rows_for_store(), record.rows,
                       self._apply(record.changes)).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - nothing may be launched that is not recorded
            log.error("could not record the cycle's decisions (%s); launches are held back", e)
            for d in decisions:
                if isinstance(d, LaunchDriver):
                    self._fail_launch(d.app_id, f"could not record the launch: {e}")
            return
        for app_id, spark_app_id in sessions:
            try:
                self.backend.manage(app_id, spark_app_id)
            except Exception:  # noqa: BLE001 - executors then come from the agent alone
                log.exception("backend could not take %s's executors into account", app_id)
        self._carry_out(now, decisions)

    def _known(self, events: list[Event]) -> list[Event]:
        """The events about apps in memory. News of a forgotten app (its driver's exit code
        arriving after it was forgotten, an agent's last word) is dropped here quietly: the
        engine would refuse it as unknown, and its record in the store is final."""
        apps = self.apps
        known = [ev for ev in events
                 if (app_id := getattr(ev, "app_id", None)) is None or app_id in apps]
        if len(known) < len(events):
            log.debug("dropped %d event(s) about forgotten apps", len(events) - len(known))
        return known

    def _step(self, now: float, events: list[Event]) -> tuple[list[Decision], list[Event]]:
        """Step the engine: (decisions, the events it took). An event it refuses (it names it
        and changes nothing) is dropped with a warning and the rest stepped again — late facts
        about unknown apps and the like must not hold up everyone else's submissions."""
        while True:
            try:
                return self.engine.step(now, events), events
            except EventError as e:
                log.warning("engine refused %s; dropped", e)
                events = events[:e.index] + events[e.index + 1:]

    def _drain(self) -> list[Item]:
        items = []
        while True:
            try:
                items.append(self._inbox.get_nowait())
            except queue.Empty:
                return items

    def _put(self, event: Event, done: Future | None = None) -> None:
        self._inbox.put(Item(event, done))

    def _observe(self, now: float) -> list[Event]:
        """The backend's news, reconciled with the agents', plus capacity when due. While the
        cluster cannot be reached, capacity is nil: nothing is admitted, everything queues.
        A backend failure of any kind is taken as "unreachable": the cycle goes on with the
        inbox's events, so no submission waits on a broken backend."""
        try:
            polled = list(self.backend.poll(now))
        except Exception as e:  # noqa: BLE001 - BackendError, or a backend bug: same answer
            return self._unreachable(now, e)
        if any(isinstance(e, CapacityChanged) for e in polled):
            self._capacity_read_at = now
        elif not self.health.reachable or now - self._capacity_read_at >= CAPACITY_EVERY_S:
            try:
                cores_mem, slots = self.backend.capacity()
            except Exception as e:  # noqa: BLE001
                with self.lock:
                    return reconcile(polled, self.agents, now, self.heartbeat_s) + \
                        self._unreachable(now, e)
            polled.append(CapacityChanged(cores_mem, slots))
            self._capacity_read_at = now
        if self.health.reachable is not True:
            if self.health.reachable is False:
                log.info("cluster reachable again")
            self.health = ClusterHealth(True, "", now)
            self.version += 1
        with self.lock:
            return reconcile(polled, self.agents, now, self.heartbeat_s)

    def _unreachable(self, now: float, error: Exception) -> list[Event]:
        if not isinstance(error, BackendError):
            log.exception("cluster backend failed", exc_info=error)
        message = str(error) or type(error).__name__
        if self.health.reachable is False:
            self.health.message = message
            return []
        log.warning("cluster unreachable: %s; submissions are queued until it is back", message)
        self.health = ClusterHealth(False, message, now)
        self.version += 1
        return [CapacityChanged(Resources(), 0)]

    def _housekeeping(self, now: float) -> list[Event]:
        """Adoptions to check again after a backend outage; notebook sessions gone silent."""
        events: list[Event] = []
        for app_id, handle in list(self.adopt_retry.items()):
            try:
                alive = self.backend.adopt(handle)
            except Exception:  # noqa: BLE001 - try again next cycle
                continue
            del self.adopt_retry[app_id]
            if not alive:
                with self.lock:
                    self._why[app_id] = "its driver was gone when the scheduler restarted"
                events.append(DriverExited(app_id, -1))
        limit = self.config.server.session_timeout
        with self.lock:
            for app_id in list(self.sessions):
                app = self.apps[app_id]
                if app.state.terminal:
                    self.sessions.discard(app_id)
                    continue
                if app.state is AppState.ACCEPTED or app_id in self._why:
                    continue
                agent = self.agents.get(app_id)
                last = max(agent.seen_at if agent else 0.0, app.started_at or 0.0,
                           self.session_since.get(app_id, 0.0))
                if now - last > limit:
                    self._why[app_id] = f"session silent for over {limit:g}s: its notebook is gone"
                    events.append(DriverExited(app_id, -1))
        return events

    def _apply(self, changes: dict[str, dict]) -> Callable[[object], None]:
        """The after-commit step: the books take the committed changes."""

        def after(_):
            with self.lock:
                for app_id, change in changes.items():
                    app = self.apps.get(app_id)
                    if app is None:  # forgotten this cycle: the store has the change
                        continue
                    for key, value in change.items():
                        setattr(app, key, value)
                    if "state" in change and app.state.terminal:
                        self.ended[app_id] = None  # retention: ended, newest last
                    if change.get("spark_app_id"):
                        self.by_spark_id[change["spark_app_id"]] = app_id
                    if app.state.terminal:
                        self.sessions.discard(app_id)
                        self.session_since.pop(app_id, None)
                        agent = self.agents.get(app_id)
                        if agent is not None:
                            agent.orders = []
                if changes:
                    self.version += 1

        return after

    def _carry_out(self, now: float, decisions: list[Decision]) -> None:
        launched: list[tuple[str, Handle, str | None]] = []
        for d in decisions:
            if isinstance(d, LaunchDriver):
                result = self._launch(d.app_id)
                if result is not None:
                    launched.append((d.app_id, *result))
            elif isinstance(d, StopDriver):
                self._stop(d.app_id)
        # Grants and reclaim orders for drivers without an agent to ask (the memory cluster's);
        # a no-op elsewhere. (backends.carry.carry_out does this when the cycle moves to it.)
        steering = [d for d in decisions if isinstance(d, SetTarget | Reclaim)]
        if steering:
            try:
                self.backend.steer(steering)
            except Exception:  # noqa: BLE001 - the agents' heartbeats carry the same orders
                log.exception("backend could not steer the drivers")
        if not launched:
            return
        changes = [{"id": app_id, "handle": _handle_json(h), "log_path": log_path}
                   for app_id, h, log_path in launched]
        rows = [EventRecord(app_id, now, "launch", f"driver launched ({h.kind} {h.ref})")
                for app_id, h, _ in launched]

        def after(_):
            with self.lock:
                for change in changes:
                    app = self.apps.get(change["id"])
                    if app is not None:
                        app.handle, app.log_path = change["handle"], change["log_path"]

        try:
            self.write(changes, rows, after).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            # The drivers run; a restart fails them (no handle) rather than launch them again.
            log.error("could not record launch handles: %s", e)

    def _launch(self, app_id: str) -> tuple[Handle, str | None] | None:
        with self.lock:
            app = replace(self.apps[app_id])
            queue_conf = self.engine.queue(app.queue)
            ceiling = self.engine.capacity.cores // max(app.spec.executor.cores, 1)
        if app.kind == AppKind.SESSION:
            self.metrics.launches.labels("session").inc()
            return None  # the notebook, polling its app, sees STARTING and starts its driver
        try:
            launch = build_launch(app, self.url, self.log_dir,
                                  reclaim_timeout_s=queue_conf.reclaim_timeout_s,
                                  max_executors=ceiling or None)
            handle = self.backend.launch(launch)
        except Exception as e:  # noqa: BLE001 - whatever went wrong, the app must not hang
            if not isinstance(e, BackendError | OSError | ValueError):
                log.exception("backend failed to launch %s", app_id)
            log.error("launch of %s failed: %s", app_id, e)
            self.metrics.launches.labels("failed").inc()
            self._fail_launch(app_id, f"launch failed: {e}")
            return None
        self.metrics.launches.labels("ok").inc()
        return handle, launch.log_path

    def _fail_launch(self, app_id: str, why: str) -> None:
        with self.lock:
            self._why[app_id] = why
        self._put(DriverExited(app_id, -1))

    def _stop(self, app_id: str) -> None:
        with self.lock:
            kind = self.apps[app_id].kind
        if kind == AppKind.SESSION:
            return  # the notebook's agent hears the terminal state at its next heartbeat
        try:
            self.backend.stop(app_id)
        except Exception as e:  # noqa: BLE001 - the kill is recorded; the cluster view follows
            log.error("could not stop %s's driver: %s", app_id, e)


def _handle_json(h: Handle) -> dict:
    return {"app_id": h.app_id, "kind": h.kind, "ref": h.ref, "started_at": h.started_at}
