"""Time-of-day plans on the server (config ``plans``; their times: ``config.plan_times``): the
plan that fired last is applied as the server starts, each later one by its own APScheduler
trigger, and readers are told the plan in force and the next one that will change the queues
(``/api/v1/health``: ``plan``, ``next_plan``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from apscheduler.schedulers.base import BaseScheduler

from sessionsched.config import ServerConfig, plan_times
from sessionsched.engine.events import Event, QueuesChanged
from sessionsched.service.reads import ReadModel

log = logging.getLogger("sessionsched.service")


class Plans:
    def __init__(self, config: ServerConfig, reads: ReadModel, put: Callable[[Event], None]):
        self.config, self.reads, self.put = config, reads, put

    def start(self, scheduler: BaseScheduler) -> None:
        """The plan in force applied, the others scheduled (on ``scheduler``: not started)."""
        plans = self.config.plans
        if not plans:
            return
        now = datetime.now().astimezone()  # one moment: each plan is applied or scheduled
        index = plan_times.current_plan(plans, now)
        if index is None:
            self.reads.publish(next_plan=self._next(now, None))
        else:
            self.apply(index, now)
        for i, trigger in plan_times.still_to_fire(plans, now):
            scheduler.add_job(self.apply, trigger, args=[i], id=f"plan-{i}", coalesce=True,
                              misfire_grace_time=60)

    def apply(self, index: int, now: datetime | None = None) -> None:
        """Run the queues with plan ``index`` from the next cycle on."""
        plan = self.config.plans[index]
        now = now or datetime.now().astimezone()
        self.reads.publish(plan=plan_times.describe(plan), next_plan=self._next(now, index))
        self.put(QueuesChanged(self.config.queue_tree(plan)))
        log.info("queue %s applied", plan_times.describe(plan))

    def _next(self, now: datetime, current: int | None) -> str | None:
        """The next plan that will change the queues, and when: ``plan '...': ... at TIME``."""
        nxt = plan_times.next_change(self.config.plans, now, current)
        if nxt is None:
            return None
        at, i = nxt
        return f"{plan_times.describe(self.config.plans[i])} at {at.isoformat()}"
