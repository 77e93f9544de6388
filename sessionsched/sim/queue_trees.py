"""The workload's queue tree as a run goes: a server config's time-of-day plans fired on the
simulator's clock (``planned``; ``upcoming`` for the estimates' run from now), or every leaf
given one admission mode (``with_admission``).

A plan fires by the wall clock (``cron``, ``at``: ``config.plan_times``), the simulator counts
seconds from 0: ``start`` says which date and time its 0 stands for. The plan that fired last
before ``start`` runs from 0 (as on a server started then), each later firing within the run
from its second, each a ``QueueChange`` the engine hears as ``QueuesChanged`` (the workload's
own tree is the config's, as it is before any plan fires); a plan firing again over itself
changes nothing and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from ..config import ServerConfig, plan_times
from ..model import Admission, Queue

if TYPE_CHECKING:  # the workload holds the changes: imported for the types only
    from .workload import Workload


_EPOCH = datetime(1970, 1, 2, tzinfo=timezone.utc)  # a day in: a date in every zone


@dataclass(frozen=True)
class QueueChange:
    """From ``at_s`` on, the queues are ``root``: ``plan`` (``plan_times.describe``) fired."""

    at_s: float
    root: Queue
    plan: str


def planned(config: ServerConfig, start: datetime, span_s: float) -> tuple[QueueChange, ...]:
    """The config's plans as they change its queues over a run whose 0 is ``start`` (an aware
    date and time) and that lasts ``span_s`` seconds. ValueError when they would fire past
    all reason (``plan_times.firings``)."""
    if start < _EPOCH:  # APScheduler's triggers answer nonsense before it
        raise ValueError(f"a run from {start.isoformat()}: plans are worked out from 1970 on")
    plans = config.plans
    trees: dict[int, Queue] = {}
    last = plan_times.current_plan(plans, start)
    fired = [] if last is None else [(start, last)]
    try:
        end = start + timedelta(seconds=span_s)
    except OverflowError:
        raise ValueError(f"a run from {start.isoformat()} of max_time_s {span_s:g} s ends past "
                         "the calendar's end (year 9999)") from None
    fired += plan_times.firings(plans, start, end)
    changes = []
    for at, i in fired:
        if changes and i == last:
            continue
        if i not in trees:
            trees[i] = config.queue_tree(plans[i])
        changes.append(QueueChange((at - start).total_seconds(), trees[i],
                                   plan_times.describe(plans[i])))
        last = i
    return tuple(changes)


def upcoming(config: ServerConfig, now_s: float, span_s: float) -> tuple[QueueChange, ...]:
    """How the config's plans will change its queues within ``span_s`` seconds of ``now_s``
    (seconds since the epoch): for a forward run that starts from the queues as they are now,
    which the plan in force already made (the estimates': ``estimate.Live``)."""
    start = datetime.fromtimestamp(now_s, timezone.utc)
    return tuple(c for c in planned(config, start, span_s) if c.at_s > 0)


def with_admission(workload: Workload, admission: Admission) -> Workload:
    """The same workload with every leaf queue admitting by ``admission`` (to compare modes),
    under each of its plans too."""

    def rebuild(q: Queue) -> Queue:
        if q.is_leaf:
            return replace(q, admission=admission)
        return replace(q, children=tuple(rebuild(c) for c in q.children))

    return replace(workload, root=rebuild(workload.root),
                   queue_changes=tuple(replace(c, root=rebuild(c.root))
                                       for c in workload.queue_changes))
