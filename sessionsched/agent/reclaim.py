"""Carrying out the scheduler's reclaim orders inside the driver. No policy: the scheduler chose
the executors and the mode; this module only does it, once, and keeps at it until done.

Modes (``docs/design/agent-protocol.md``):
  * ``kill``: kill now, even busy (running tasks are retried on other executors).
  * ``decommission``: graceful decommission now; any executor still alive at ``deadline`` is
    killed then -- by this agent, so a deadline holds while the server is unreachable.
    If the app cannot decommission (``spark.decommission.enabled`` off, or the hook missing),
    the order degrades to: release each executor as soon as it is idle, kill at the deadline.
    (Sending a decommission to an executor with decommission disabled is worse than nothing:
    it stops taking tasks yet keeps its core until the idle timeout -- measured on 4.0.1.)
  * ``idle``: release these executors if they are idle. One that turned busy since the
    scheduler looked is skipped and the order dropped: the scheduler sees it busy in the next
    report, forgets the order, and orders it again once it is idle (so an executor is never
    released twice over for one surplus).

An order is remembered per (executor, mode), so an order the server repeats in later answers is
carried out once; a ``kill`` after a ``decommission`` (the deadline passed on the server's clock)
is a new order and wins. Everything about an executor is forgotten when it is gone.

``killed`` holds the executors this agent has killed: the driver keeps listing a killed
executor for up to ``spark.standalone.executorRemoveDelayOnDisconnection`` (5 s) after its
process died and its core was freed, so the agent leaves them out of its reports.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from .protocol import ReclaimOrder
from .spark_control import ExecutorFact, SparkControl, SparkControlError

log = logging.getLogger("sessionsched.agent")

_STRENGTH = {"idle": 0, "decommission": 1, "kill": 2}


@dataclass
class _Want:
    mode: str
    deadline: float | None = None
    decommissioned: bool = False


class ReclaimExecutor:
    def __init__(self, control: SparkControl):
        self._control = control
        self._seen: set[tuple[str, str]] = set()
        self._wanted: dict[str, _Want] = {}
        self.killed: set[str] = set()
        self.errors = 0

    @property
    def pending(self) -> dict[str, str]:
        """Executor id -> mode of the orders not yet completed (for logs and tests)."""
        return {eid: w.mode for eid, w in self._wanted.items()}

    def accept(self, orders: Iterable[ReclaimOrder]) -> None:
        for order in orders:
            for eid in order.executor_ids:
                if (eid, order.mode) in self._seen or eid in self.killed:
                    continue
                self._seen.add((eid, order.mode))
                current = self._wanted.get(eid)
                if current is None or _STRENGTH[order.mode] > _STRENGTH[current.mode]:
                    self._wanted[eid] = _Want(order.mode, order.deadline)

    def tick(self, executors: Iterable[ExecutorFact], now: float) -> None:
        """Do what is due, given the executors alive now. Call after ``accept`` and on every
        agent cycle (also while the server is unreachable: deadlines are local)."""
        alive = {e.executor_id: e for e in executors}
        self._forget_gone(alive)
        force: list[str] = []
        if_idle: list[str] = []
        to_decommission: list[str] = []
        one_shot: list[str] = []
        for eid, w in self._wanted.items():
            due = w.deadline is not None and now >= w.deadline
            if w.mode == "kill" or (w.mode == "decommission" and due):
                force.append(eid)
            elif w.mode == "decommission" and self._control.probe.can_decommission:
                if not w.decommissioned:
                    to_decommission.append(eid)
            else:  # an idle order, or a decommission that cannot decommission
                if alive[eid].idle:
                    if_idle.append(eid)
                if w.mode == "idle":
                    one_shot.append(eid)
        self._kill(force, force=True)
        # force=False: the backend re-checks "not busy" under its own lock, so an executor that
        # took a task since our look is left alone.
        reached_spark = self._kill(if_idle, force=False)
        self._decommission(to_decommission)
        if reached_spark:  # a failed call is retried next cycle
            for eid in one_shot:  # released or skipped: either way the order is spent
                if self._wanted.pop(eid, None) is not None:
                    self._seen.discard((eid, "idle"))

    def _kill(self, ids: list[str], force: bool) -> bool:
        """Kill what Spark lets us; False if the call itself failed."""
        if not ids:
            return True
        try:
            done = set(self._control.kill(sorted(ids), force=force))
        except SparkControlError as e:
            self._error(e)
            return False
        for eid in done:
            self.killed.add(eid)
            self._wanted.pop(eid, None)
        if done:
            log.info("killed executors %s (%s)", sorted(done), "forced" if force else "idle")
        return True

    def _decommission(self, ids: list[str]) -> None:
        if not ids:
            return
        try:
            done = self._control.decommission(sorted(ids))
        except SparkControlError as e:
            self._error(e)
            return
        for eid in ids:
            # Marked even if Spark declined one (already decommissioning or gone): asking again
            # would not help, and the deadline kill still applies.
            self._wanted[eid].decommissioned = True
        log.info("decommissioning executors %s", sorted(done))

    def _forget_gone(self, alive: dict[str, ExecutorFact]) -> None:
        for eid in [e for e in self._wanted if e not in alive]:
            del self._wanted[eid]
        # A killed executor stays listed by the driver for a few seconds; drop it once gone.
        self.killed &= alive.keys()
        self._seen = {(eid, mode) for eid, mode in self._seen if eid in alive}

    def _error(self, e: SparkControlError) -> None:
        # Bounded: the first few and then every 60th, so a broken hook cannot flood the log.
        self.errors += 1
        if self.errors <= 3 or self.errors % 60 == 0:
            log.warning("sessionsched agent: reclaim failed (%d so far): %s", self.errors, e)
