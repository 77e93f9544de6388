"""Watching the cluster: the backend's news each cycle, its capacity, whether it answers.

``observe`` polls the backend and reads capacity when due (at least every
``CAPACITY_EVERY_S``, and at once while the cluster was unreachable). While the cluster cannot
be reached, capacity is nil: nothing is admitted, everything queues. A backend failure of any
kind is taken as "unreachable": the cycle goes on with the inbox's events, so no submission
waits on a broken backend. Drivers adopted at a restart while the backend could not tell
whether they live are checked again every cycle (``retry_adoptions``). A backend that knows
its apps' stages itself (``ClusterBackend.stage_progress``: the memory cluster; on a real one
the agents report them) is asked for them every ``PROGRESS_EVERY_S``, for the estimates.
"""

from __future__ import annotations

import logging

from sessionsched.backends.base import BackendError, ClusterBackend, Handle
from sessionsched.engine.events import CapacityChanged, DriverExited, Event
from sessionsched.model import Resources, Worker
from sessionsched.service.estimating.progress import ProgressBook
from sessionsched.service.reads import ClusterHealth

log = logging.getLogger("sessionsched.service")

CAPACITY_EVERY_S = 2.0  # re-read the cluster's capacity at least this often
# How often a backend that knows its apps' stages itself is asked for them: an agent's report
# of them is as old as its keep-alive; the estimates that read them are made every few seconds.
PROGRESS_EVERY_S = 2.0
GONE = "its driver was gone when the scheduler restarted"


class ClusterWatch:
    def __init__(self, backend: ClusterBackend, progress: ProgressBook | None = None):
        self.backend = backend
        self.progress = progress
        self.health = ClusterHealth()
        self.adopt_retry: dict[str, Handle] = {}  # adopted while the backend could not check
        self._capacity_read_at = float("-inf")
        # The workers of the last report, with what was free on each (none while out of
        # reach): what the dashboard shows. Replaced whole, so a reader in another thread
        # sees one report or the next, never half of one.
        self.workers: tuple[Worker, ...] = ()
        self._progress_read_at = float("-inf")

    def observe(self, now: float) -> list[Event]:
        """The backend's events (not yet reconciled with the agents'), capacity when due."""
        try:
            polled = list(self.backend.poll(now))
        except Exception as e:  # noqa: BLE001 - BackendError, or a backend bug: same answer
            return self._unreachable(now, e)
        if self.progress is not None and now - self._progress_read_at >= PROGRESS_EVERY_S:
            self._progress_read_at = now
            for app_id, p in self.backend.stage_progress(now).items():
                self.progress.report(app_id, p)
        if any(isinstance(e, CapacityChanged) for e in polled):
            self._capacity_read_at = now
        elif not self.health.reachable or now - self._capacity_read_at >= CAPACITY_EVERY_S:
            try:
                cores_mem, slots = self.backend.capacity()
            except Exception as e:  # noqa: BLE001
                return polled + self._unreachable(now, e)
            polled.append(CapacityChanged(cores_mem, slots, self.backend.workers()))
            self._capacity_read_at = now
        last = next((e for e in reversed(polled) if isinstance(e, CapacityChanged)), None)
        if last is not None:
            self.workers = last.workers
        cores = last.capacity.cores if last is not None else self.health.cores
        if self.health.reachable is not True or cores != self.health.cores:
            if self.health.reachable is False:
                log.info("cluster reachable again")
            if cores == 0 and self.health.cores != 0:
                log.warning("the cluster offers no cores: submissions are queued")
            self.health = ClusterHealth(True, "", now, cores)
        return polled

    def _unreachable(self, now: float, error: Exception) -> list[Event]:
        if not isinstance(error, BackendError):
            log.exception("cluster backend failed", exc_info=error)
        message = str(error) or type(error).__name__
        self.workers = ()
        if self.health.reachable is False:
            if message != self.health.message:
                self.health = ClusterHealth(False, message, self.health.since)
            return []
        log.warning("cluster unreachable: %s; submissions are queued until it is back", message)
        self.health = ClusterHealth(False, message, now)
        return [CapacityChanged(Resources())]  # no cores: no app needing room starts

    def retry_adoptions(self) -> list[Event]:
        """Check again the drivers the backend could not check at the restart; one found
        gone ends FAILED."""
        events: list[Event] = []
        for app_id, handle in list(self.adopt_retry.items()):
            try:
                alive = self.backend.adopt(handle)
            except Exception:  # noqa: BLE001 - try again next cycle
                continue
            del self.adopt_retry[app_id]
            if not alive:
                events.append(DriverExited(app_id, -1, GONE))
        return events
