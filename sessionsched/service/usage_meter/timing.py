"""When a report's changes happened: the levels between two agent reports, placed in time by
what the agent says it saw (docs/operator/usage.md, "How the figures are timed"). Pure: plain data
in, plain data out.

A report of an agent that times its look (``observed_at``) changes the app's levels not all
at once when the scheduler takes it, but each change at the closest time the driver can tell:

1. an executor new since the last report came at its registration with its driver
   (``started_at``: the time Spark's ``ExecutorAdded`` carries);
2. an executor gone since the last report left when its driver removed it (``removed``: the
   time Spark's ``ExecutorRemoved`` carries, from the driver's status store), else at the
   look that found it gone (an executor the agent killed itself is left out at once; its
   driver's removal comes with a later report: ``meter``);
3. busy or idle flags changed between the agent's look before (``changed_after``: its last
   read of the facts, or its last check of the demand and the running tasks when their
   change -- a task's start or end -- brought this look) and this one (``observed_at``): halfway,
   the middle of the span it cannot see into (Spark keeps no time for them); without
   ``changed_after``, at the look. The agent looks within ``TICK_S`` of a change of the
   demand or of the running tasks (a task's start or end), so the span is a tick, not a
   heartbeat, for every change a task brings. A new executor seen busy at its first look
   counts busy from the same halfway point, not before its registration: an executor takes
   its first task only once it has started up inside (measured here: 0.4-1.5 s after its
   registration with the driver). A gone one stops being busy when it leaves.

Every time is bounded by the scheduler's own: never before ``lo`` (the app's last counted
change, the previous report's look), never after the look itself, and the look never after
``hi`` (the scheduler's now): a driver's clock ahead of the scheduler's cannot count the
future, one behind it cannot count again what was counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sessionsched.model import Executor

Step = tuple[float, int, int]  # (from, executors, busy executors)


def clamp(t: float, lo: float, hi: float) -> float:
    return min(max(t, lo), hi)


def timed_steps(before: Mapping[str, bool], after: Sequence[Executor], observed_at: float,
                removed: Mapping[str, float], lo: float, hi: float,
                changed_after: float | None = None) -> list[Step]:
    """The levels from ``before`` (executor id -> busy, as the last report had them) to the
    report ``after``, as steps in time order, each the levels from its time on; the last one
    is the report's own (at the look). ``removed``: executor id -> when its driver removed it;
    ``changed_after``: the agent's look before (flags change halfway from it to the look)."""
    lo = min(lo, hi)
    look = clamp(observed_at, lo, hi)
    flip = flag_time(observed_at, changed_after, lo, hi)
    changes: list[tuple[float, int, int]] = []  # (at, executors +-, busy +-)
    ids = set()
    for e in after:
        ids.add(e.executor_id)
        was = before.get(e.executor_id)
        if was is None:
            arrived = arrived_at(e, lo, look)
            changes.append((arrived, 1, 0))
            if not e.idle:
                changes.append((max(arrived, flip), 0, 1))
        elif was != (not e.idle):
            changes.append((flip, 0, -1 if was else 1))
    for eid, busy in before.items():
        if eid not in ids:
            changes.append((gone_at(eid, removed, observed_at, lo, hi), -1, -1 if busy else 0))
    held, busy = len(before), sum(before.values())
    steps: list[Step] = []
    for at, d_held, d_busy in sorted(changes, key=lambda c: c[0]):
        held, busy = held + d_held, busy + d_busy
        if steps and steps[-1][0] == at:
            steps[-1] = (at, held, busy)
        else:
            steps.append((at, held, busy))
    if not steps or steps[-1][0] != look:
        steps.append((look, held, busy))
    return steps


def arrived_at(e: Executor, lo: float, look: float) -> float:
    """When a new executor (not in the last report) joined: its registration (rule 1),
    bounded by the last counted change and the look."""
    return clamp(e.started_at, lo, look)


def busy_since(before: Mapping[str, bool], after: Sequence[Executor], observed_at: float,
               lo: float, hi: float, changed_after: float | None = None) -> dict[str, float]:
    """When each busy executor of ``after`` became busy, by the rules ``timed_steps`` places
    its steps by: when its flag changed, a new one not before its registration (an executor
    busy in both reports keeps the time its caller already has)."""
    lo = min(lo, hi)
    look = clamp(observed_at, lo, hi)
    flip = flag_time(observed_at, changed_after, lo, hi)
    return {e.executor_id: flip if e.executor_id in before else max(arrived_at(e, lo, look), flip)
            for e in after if not e.idle}


def flag_time(observed_at: float, changed_after: float | None, lo: float, hi: float) -> float:
    """When busy or idle flags changed (rule 3, bounded the same way)."""
    lo = min(lo, hi)
    look = clamp(observed_at, lo, hi)
    return look if changed_after is None else clamp((changed_after + look) / 2, lo, look)


def gone_at(eid: str, removed: Mapping[str, float], observed_at: float, lo: float,
            hi: float) -> float:
    """When an executor the report no longer lists left (rule 2, bounded the same way)."""
    lo = min(lo, hi)
    look = clamp(observed_at, lo, hi)
    return clamp(removed.get(eid, look), lo, look)
