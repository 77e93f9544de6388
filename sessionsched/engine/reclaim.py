"""Reclaim: turning a target below what an app holds into orders to give executors back.

The queue's ``reclaim_timeout`` picks the mode (Conductor's three reclaim behaviours):
  * ``0``  KILL: the surplus is killed now; Spark retries its running tasks elsewhere.
  * ``>0`` DECOMMISSION: graceful decommission now (running tasks finish, shuffle blocks
    migrate); any executor still there at ``now + timeout`` is killed then.
  * ``-1`` IDLE: non-preemptive. Only executors that are idle are released; busy ones are left
    to finish their tasks and are taken when they go idle.

Victims, in order: idle executors first (nothing is lost), then the youngest (least cached
data, least work done), then by executor id. The driver is never a victim: it is not an
executor.

An executor already under a reclaim order is not ordered again, except that a decommissioned
one still alive at its deadline is ordered killed (the scheduler keeps the deadlines in a heap).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..model import Executor, ReclaimMode


def victim_order(e: Executor) -> tuple[bool, float, str]:
    return (not e.idle, -e.started_at, e.executor_id)


def choose_victims(
    executors: Iterable[Executor],
    reclaiming: Mapping[str, float | None],
    surplus: int,
    mode: ReclaimMode,
) -> list[Executor]:
    """Up to ``surplus`` executors to take back, not counting those already being reclaimed."""
    if surplus <= 0:
        return []
    candidates = [e for e in executors if e.executor_id not in reclaiming]
    if mode is ReclaimMode.IDLE:
        candidates = [e for e in candidates if e.idle]
    return sorted(candidates, key=victim_order)[:surplus]


def deadline_for(mode: ReclaimMode, now: float, timeout_s: float) -> float | None:
    """When a reclaimed executor must be gone: now for KILL, now + timeout for DECOMMISSION."""
    if mode is ReclaimMode.KILL:
        return now
    if mode is ReclaimMode.DECOMMISSION:
        return now + timeout_s
    return None

