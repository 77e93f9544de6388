"""Step 6 of the cycle: a committed step's decisions carried out on the cluster backend.

As the simulator does them (``backends.carry.carry_out``): StopDriver -> ``backend.stop``,
LaunchDriver -> ``backend.launch`` of ``build_launch`` on the decision's terms (the engine's:
dynamic allocation, the agent's executor ceiling; sessions: nothing, the waiting notebook sees
STARTING and starts its own driver), SetTarget and Reclaim -> ``backend.steer`` (the memory
cluster's drivers; real drivers' agents read them from the desk). A session's driver is its
notebook's: it is not stopped here, its agent hears its terminal state at its next heartbeat.

Launch handles are recorded so a restart can adopt the drivers (those a failed write missed,
with the next ones). That write is not waited for (the drivers run already; the writer
commits in order, so it is on disk before the next cycle's commit): the next cycle checks how
it went. A launch that fails for a transient reason waits in ``carry.Retries`` and is tried
again with back-off, still STARTING, decided again by the engine's rule on the capacity of
that moment (``agent_terms.launch_decision``), as its first try was; the wait is on disk
(``launch_wait``, a restart resumes it) and cleared on disk before each new try (a crash
during a try is then an unrecorded launch: never tried a second time). A launch that fails
for good ends the app (``DriverExited(app, -1)`` for the next cycle).
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sessionsched.backends.base import Handle, Launch
from sessionsched.backends.carry import Retries, Waiting, carry_out, error_line
from sessionsched.engine.agent_terms import launch_decision
from sessionsched.engine.clusters import LaunchUnavailable
from sessionsched.engine.events import Decision, DriverExited, LaunchDriver, StopDriver
from sessionsched.service.clusters import attempt_of, may_move
from sessionsched.service.launch import build_launch
from sessionsched.store import AppKind, EventRecord

if TYPE_CHECKING:
    from sessionsched.service.cycle import Parts

log = logging.getLogger("sessionsched.service")

COMMIT_TIMEOUT_S = 30.0  # as the cycle's own commit (``cycle.COMMIT_TIMEOUT_S``)


@dataclass
class _Recording:
    """Launch handles sent to the store, and the write's future."""

    committed: Future
    launched: list[tuple[str, Handle, str | None]]


class Carrier:
    """Carries out committed steps' decisions for the cycle (module doc); it shares the
    cycle's ``Parts``."""

    def __init__(self, parts: Parts):
        self.p = parts
        self._unrecorded: list[tuple[str, Handle, str | None]] = []  # launch handles to write
        self._recording: _Recording | None = None  # the last launch handles sent, in flight
        self._retries = Retries(parts.launch_retry)  # launches to try again

    def resume(self, waiting: dict[str, Waiting]) -> None:
        """Launches that waited to be tried again before a restart (``restore``)."""
        for app_id, wait in waiting.items():
            self._retries.resume(app_id, wait)

    def ended(self, app_ids: list[str]) -> None:
        """These apps ended or were forgotten: their launches wait no more."""
        self._retries.drop(app_ids)

    def carry_out(self, now: float, decisions: list[Decision]) -> None:
        """The decisions, through ``carry.carry_out`` as the simulator does them; then the
        launch handles recorded (a restart adopts those drivers) and failed launches ended."""
        p = self.p
        self._check_recording()
        ours = [d for d in decisions
                if not (isinstance(d, StopDriver) and self._kind(d.app_id) == AppKind.SESSION)]
        carried = carry_out(ours + self._due(now), p.watch.backend, self._launch_for,
                            self._retries, now)
        for app_id, why in carried.failed:
            p.metrics.launches.labels("failed").inc()
            p.inbox.put(DriverExited(app_id, -1, f"launch failed: {why}"))
        for _ in carried.retrying:
            p.metrics.launches.labels("retried").inc()
        for _ in carried.launched:
            p.metrics.launches.labels("ok").inc()
        if p.fault is not None and carried.launched:
            p.fault("launched", *(app_id for app_id, _, _ in carried.launched))
        # Handles a failed write could not record are tried again with the next launches.
        launched, self._unrecorded = self._unrecorded + carried.launched, []
        moving = {app_id: why.rsplit("; attempt ", 1)[0] for app_id, why in carried.retrying
                  if may_move(p.engine, app_id)}
        retried = [EventRecord(app_id, now, "retry", f"launch failed, tried again: {why}")
                   if app_id not in moving else EventRecord(
                       app_id, now, "retry", f"launch failed, nothing started: "
                                             f"{moving[app_id]}; moving it to another cluster")
                   for app_id, why in carried.retrying]
        if not launched and not retried:
            return
        changes = [{"id": app_id, "handle": _handle_json(h), "log_path": log_path}
                   for app_id, h, log_path in launched]
        changes += [{"id": app_id, "launch_wait": self._retries.waiting(app_id).to_json()}
                    for app_id, _ in carried.retrying]
        rows = retried + [EventRecord(app_id, now, "launch", f"driver launched ({h.kind} {h.ref})")
                          for app_id, h, _ in launched]
        self._recording = _Recording(p.write(changes, rows), launched)
        # Tried again elsewhere, not here: the federation moves it in the next step (that
        # commit clears the wait on disk, kept until then for a restart to go on with here).
        self._retries.drop(moving)
        for app_id, why in moving.items():
            p.inbox.put(LaunchUnavailable(app_id, why))
        self._recording.committed.add_done_callback(lambda f: self._recorded(f, launched))
        if not carried.retrying:
            # Not waited for: the drivers run already, and the writer commits in order, so
            # this cycle's handles are on disk before anything the next cycle decides. The
            # next cycle looks at how the write went (``_check_recording``).
            return
        # A launch waits for its next try: its wait is on disk before the cycle ends (a
        # restart resumes it, ``launch_wait``).
        if self._check_recording() and p.fault is not None:
            p.fault("launch-waiting", *(app_id for app_id, _ in carried.retrying))

    def _recorded(self, committed: Future, launched: list[tuple[str, Handle, str | None]]
                  ) -> None:
        """A launch-handle write is done: once committed, readers see where each driver's log
        is. Run by the writer's thread as soon as it commits, and again by the next cycle
        (``_check_recording``), which may wake before that callback ran: whichever comes
        first shows it, the other finds nothing to change."""
        if committed.exception() is not None:
            return
        changed = [self.p.registry.launched(app_id, log_path)
                   for app_id, _, log_path in launched]
        if any(changed):
            self.p.reads.publish()

    def _check_recording(self) -> bool:
        """How the last launch-handle write went, waiting for it if it is still in flight
        (it rarely is: the cycle's own commit came after it). True if it committed; if it
        failed, its handles are written again with the next launches (the drivers run; a
        restart before they are recorded fails those apps rather than launch them again)."""
        recording, self._recording = self._recording, None
        if recording is None:
            return True
        try:
            recording.committed.result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            log.error("could not record %d launch handle(s), tried again next cycle: %s",
                      len(recording.launched), error_line(e))
            self._unrecorded = recording.launched + self._unrecorded
            return False
        self._recorded(recording.committed, recording.launched)
        return True

    def _due(self, now: float) -> list[LaunchDriver]:
        """The launches to try again now, decided again by the engine's rule on today's
        capacity, their waits first cleared on disk: a crash during the try then finds no
        wait and takes the launch as unrecorded (the driver may run) instead of trying it
        again. If that write fails they wait for a later cycle."""
        due = self._retries.due(now)
        if not due:
            return []
        try:
            self.p.write([{"id": d.app_id, "launch_wait": None} for d in due],
                         []).result(COMMIT_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001
            log.error("could not clear %d launch wait(s), tried again next cycle: %s",
                      len(due), error_line(e))
            return []
        capacity = self.p.reads.view.engine.capacity
        return [launch_decision(self.p.registry.get(d.app_id).spec, capacity) for d in due]

    def _launch_for(self, d: LaunchDriver) -> Launch | None:
        """What to start for an admitted app, on the decision's terms (None: a notebook
        session, which the notebook starts itself once it sees STARTING)."""
        p = self.p
        sub = p.registry.get(d.app_id)
        if sub.kind == AppKind.SESSION:
            p.metrics.launches.labels("session").inc()
            return None
        # The engine's leaf by name (this thread's to read): a walk of the whole queue tree
        # per launch was a tenth of a cycle that launches 200 drivers.
        queue_conf = p.engine.queue(sub.queue)
        return build_launch(sub, p.url, p.log_dir, token=p.secret(d.app_id),
                            reclaim_timeout_s=queue_conf.reclaim_timeout_s, terms=d.terms,
                            ca=p.agent_ca, node_sort=queue_conf.node_sort.value,
                            attempt=attempt_of(p.engine, d.app_id))

    def _kind(self, app_id: str) -> str | None:
        sub = self.p.registry.get(app_id)
        return sub.kind if sub is not None else None


def _handle_json(h: Handle) -> dict:
    return {"app_id": h.app_id, "kind": h.kind, "ref": h.ref, "started_at": h.started_at}
