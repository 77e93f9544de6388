"""Reclaim: taking executors back from apps above their target for apps that need them.

When: only for another app's unmet target. An app's target drops whenever its own demand dips
(the tail of a stage, a pause in a notebook); taking its executors then would kill busy ones
(their tasks rerun) and, a moment later, start new ones for its next stage - churn, not
arbitration. As in Conductor and YuniKorn, executors are taken back to give them to a more
deserving app that needs them. So each step (``Scheduler``, phase 6):

  need = deficit - free - freeing, in cores and in memory, where
    deficit = sum over the short apps of (target - grant): what free capacity could not grant
              them (``grants``);
    free    = executor capacity - sum over apps of max(held, grant), after grants;
    freeing = what the orders already out (and the executors of ended apps) will give back.

While need > 0 (cores or memory), victims are taken from the apps holding more than their
target, lowest rank first (1. lowest priority; 2. most recent submission; 3. app id,
reversed), each up to its surplus (held - already ordered - target). Nobody short, or the
orders already out cover the deficit: no new order. An app above its target that nobody needs
keeps its executors until Spark's own idle timeout releases them. The freed capacity goes to
the short apps by grants, in rank order.

The queue's ``reclaim_timeout`` picks the mode (Conductor's three reclaim behaviours):
  * ``0``  KILL: the victims are killed now; Spark retries its running tasks elsewhere.
  * ``>0`` DECOMMISSION: graceful decommission now (running tasks finish, shuffle blocks
    migrate); any executor still there at ``now + timeout`` is killed then.
  * ``-1`` IDLE: non-preemptive. Only executors that are idle are released; busy ones are left
    to finish their tasks and are taken when they go idle, if they are still needed then.

Victims inside an app, in order: idle executors first (nothing is lost), then the youngest
(least cached data, least work done), then by executor id. The driver is never a victim: it is
not an executor.

An executor already under a reclaim order is not ordered again, except that a decommissioned
one still alive at its deadline is ordered killed (the scheduler keeps the deadlines in a heap),
even if the need has gone meanwhile: it takes no new task since its order, so it is leaving.
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
    """Up to ``surplus`` executors to take back, not counting those already being reclaimed,
    in victim order (the caller stops when the need is met)."""
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

