"""The inbox: what happened between two scheduling cycles, as engine events.

HTTP handlers, agents and the cycle itself never step the engine: they ``put`` an event, with
who waits for the cycle that takes it (a kill's HTTP request returns once it is done) and an
optional note for the audit trail (who asked for a kill). Thread-safe.

The cycle runs every ``server.cycle_ms`` (an APScheduler interval job, ``service``); news that
should not wait for the next tick wakes one (``Waker``, once the inbox has one):

- a committed submission (``Submitted``): an app that can start now is launched in the cycle
  it arrives in, not up to ``cycle_ms`` later (a solo app on an idle cluster paid that wait,
  a tick's phase at random, before its driver started);
- an agent's report of a new demand (``DemandChanged``): a job that just started is granted
  its executors at once, so the grant is in place before Spark's allocation manager first asks
  (its ``schedulerBacklogTimeout``, 1 s by default, after the tasks are submitted).

At most one woken cycle per ``cycle_ms``, and none while a woken one has not ended: a burst
of submissions still rides on the ticks -- at most twice the cycles, never cycles back to back
taking the CPU from the HTTP threads. A woken cycle is a one-off job beside the interval's;
the service's cycle lock keeps the two from running at once, and a tick that comes during it
finds its work done. Nothing is woken while cycles are run by hand (the tests' stepped
service) or after the service stopped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from apscheduler.schedulers.base import BaseScheduler

from sessionsched.engine.events import DemandChanged, Event, Submitted

log = logging.getLogger("sessionsched.service")

WAKE_JOB = "wake"
WAKES = (Submitted, DemandChanged)  # the news that wakes a cycle (module doc)


@dataclass
class Item:
    event: Event
    done: Future | None = None
    note: str | None = None


class Inbox:
    def __init__(self) -> None:
        self._items: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.waker: Waker | None = None  # set by the service

    def put(self, event: Event, done: Future | None = None, note: str | None = None) -> None:
        self._items.put(Item(event, done, note))
        if self.waker is not None and isinstance(event, WAKES):
            self.waker.wake()

    def drain(self, limit: int | None = None) -> list[Item]:
        """The items put so far, oldest first; at most ``limit`` of them (the rest stay, in
        order, for the next drain: the engine's event slice, ``engine.budget``)."""
        items: list[Item] = []
        while limit is None or len(items) < limit:
            try:
                items.append(self._items.get_nowait())
            except queue.Empty:
                break
        return items


class Waker:
    """Runs a cycle now (see the module doc)."""

    def __init__(self, scheduler: BaseScheduler, cycle: Callable[[], None], cycle_s: float,
                 clock: Callable[[], float] = time.monotonic):
        self._scheduler = scheduler
        self._cycle = cycle
        self._cycle_s = cycle_s
        self._clock = clock
        self._lock = threading.Lock()
        self._armed = False
        self._woken_at = float("-inf")
        self._busy = False  # a woken cycle is pending or running
        self.woken = 0  # cycles woken so far

    def arm(self) -> None:
        """Cycles run on the scheduler from now on: wake them."""
        self._armed = True

    def disarm(self) -> None:
        """The scheduler is stopping: wake nothing from now on."""
        with self._lock:
            self._armed = False

    def wake(self) -> bool:
        """Run a cycle now, unless one was woken less than ``cycle_s`` ago or a woken one has
        not ended yet (the news then waits for the tick). Whether one was woken."""
        if not (self._armed and self._scheduler.running):  # by hand, or the service stopped
            return False
        now = self._clock()
        with self._lock:
            if not self._armed or self._busy or now - self._woken_at < self._cycle_s:
                return False
            self._woken_at, self._busy = now, True
        try:
            self._scheduler.add_job(self._run, id=WAKE_JOB, replace_existing=True,
                                    misfire_grace_time=None)
        except Exception:  # noqa: BLE001 - stopping: the news is in the inbox, a tick takes it
            log.debug("could not wake the cycle", exc_info=True)
            self._busy = False
            return False
        self.woken += 1
        return True

    def _run(self) -> None:
        try:
            self._cycle()
        finally:
            self._busy = False


def stop_cycles(scheduler: BaseScheduler, waker: Waker) -> None:
    """Stop the scheduler the cycles run on, its running jobs done first.

    APScheduler 3's ``shutdown`` marks the scheduler stopped before it takes the job stores'
    lock: a one-off job (a wake) its loop hands out just then is looked for among the jobs not
    yet added instead of in its store, and the loop's thread dies with ``JobLookupError``.
    Removing the jobs first waits for that loop (it holds the lock), and nothing is woken
    after it."""
    waker.disarm()
    if scheduler.running:
        scheduler.remove_all_jobs()
        scheduler.shutdown(wait=True)
