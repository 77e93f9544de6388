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
orders already out cover the deficit: no new order. An app above its target only because its
own demand dipped keeps its executors until Spark's own idle timeout releases them. The freed
capacity goes to the short apps by grants, in rank order.

Where the short apps ask for a custom resource (a GPU), freeing cores anywhere would not do:
their executors fit only where the GPUs are. Per custom resource, need = what the short apps
lack of it - what is free of it - what the orders out free of it; while that is above 0 the
victims are executors that hold it (they run where it is), from the apps above their target,
lowest rank first, and never executors elsewhere: idle CPU executors on other workers would
free nothing the waiting executor can use. The cores the GPU-short apps lack are left out of
the cores' need above for the same reason. And where the GPUs are free but the GPU workers'
cores are held (by CPU executors that came when the other workers were full), the victims
are executors on the GPU workers - the backend names each executor's worker - until the
cores free there cover what the GPU-short apps lack; never executors on the other workers.

One exception, whether anyone is short or not: an app above its target that still *wants*
more than its target (demand > target) is over what its queue allows it, not past a dip - a
plan or a config reload lowered a ``max_cores`` on its path (or the cluster shrank). Its whole
surplus is taken back, first, by the same rule (YuniKorn's YUNIKORN-3133: a lowered quota
must not wait for natural exits). Its freed capacity counts toward the need like any other.

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

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from sortedcontainers import SortedList

from ..model import Executor, Queue, ReclaimMode, Resources
from .events import Decision, Reclaim
from .grants import Grants
from .ledger import AppRecord
from .placement.free_now import Rooms
from .placement.workers import Workers
from .rank import Rank


@dataclass(frozen=True)
class ReclaimRule:
    """How a reclaim mode takes an executor back (the three modes in the module doc).

    ``deadline(now, timeout)``: when the executor must be gone, as the order says (None: never
    forced). ``kill_at_deadline``: the scheduler keeps the deadline and orders a kill of an
    executor still there at it. ``idle_only``: only idle executors are victims, and an order
    for one that got busy again is dropped (the agent skips it), so it is ordered again once
    it is idle.
    """

    deadline: Callable[[float, float], float | None]
    kill_at_deadline: bool = False
    idle_only: bool = False


RECLAIM_RULES: dict[ReclaimMode, ReclaimRule] = {
    ReclaimMode.KILL: ReclaimRule(deadline=lambda now, timeout_s: now),
    ReclaimMode.DECOMMISSION: ReclaimRule(deadline=lambda now, timeout_s: now + timeout_s,
                                          kill_at_deadline=True),
    ReclaimMode.IDLE: ReclaimRule(deadline=lambda now, timeout_s: None, idle_only=True),
}


def rule_of(queue: Queue) -> ReclaimRule:
    return RECLAIM_RULES[queue.reclaim_mode]


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
    if RECLAIM_RULES[mode].idle_only:
        candidates = [e for e in candidates if e.idle]
    return sorted(candidates, key=victim_order)[:surplus]


def deadline_for(mode: ReclaimMode, now: float, timeout_s: float) -> float | None:
    """When a reclaimed executor must be gone: now for KILL, now + timeout for DECOMMISSION."""
    return RECLAIM_RULES[mode].deadline(now, timeout_s)


def surplus(rec: AppRecord) -> int:
    """Executors held above the target and not yet ordered back."""
    return rec.held - len(rec.reclaiming) - rec.target


def over_allowed(rec: AppRecord) -> int:
    """The surplus of an app that still wants more than its target: its queue's caps, not a
    dip in its demand, put it above (the module doc's exception). 0 otherwise."""
    return surplus(rec) if rec.state.admitted and rec.demand > rec.target else 0


def executors_changed(rec: AppRecord, queue: Queue) -> None:
    """The app's executor list changed: orders for executors gone are settled, and under an
    ``idle_only`` rule an order for an executor that got busy again is dropped."""
    for eid in [e for e in rec.reclaiming if e not in rec.executors]:
        del rec.reclaiming[eid]
    if rule_of(queue).idle_only:
        for eid in [e for e, d in rec.reclaiming.items() if d is None]:
            if not rec.executors[eid].idle:
                del rec.reclaiming[eid]


class Reclaimer:
    """Phase 6 of a step, and what it keeps between steps: the decommission deadlines (a heap
    of ``(deadline, app, executor)``), the admitted apps above their target, by rank (taken
    from the lowest rank first), and of those the ones above what they are allowed
    (``over_allowed``), kept true by ``index`` after every change to an app.
    """

    def __init__(self) -> None:
        self._deadlines: list[tuple[float, str, str]] = []
        self._over: dict[str, Rank] = {}
        self._over_ranked = SortedList()
        self._over_allowed: dict[str, Rank] = {}

    def next_deadline(self) -> float | None:
        return self._deadlines[0][0] if self._deadlines else None

    def index(self, rec: AppRecord) -> None:
        """Keep the apps-above-target index true for one app after a change to it."""
        old = self._over.pop(rec.app_id, None)
        if old is not None:
            self._over_ranked.remove(old)
        if rec.state.admitted and surplus(rec) > 0:
            self._over[rec.app_id] = rec.rank
            self._over_ranked.add(rec.rank)
        if over_allowed(rec) > 0:
            self._over_allowed[rec.app_id] = rec.rank
        else:
            self._over_allowed.pop(rec.app_id, None)

    def check(self, recs: Iterable[AppRecord]) -> list[str]:
        recs = list(recs)
        over = {r.app_id: r.rank for r in recs if r.state.admitted and surplus(r) > 0}
        if self._over.keys() != over.keys() or list(self._over_ranked) != sorted(over.values()):
            return [f"apps above their target {sorted(self._over)} != {sorted(over)}"]
        allowed = {r.app_id: r.rank for r in recs if over_allowed(r) > 0}
        if self._over_allowed != allowed:
            return [f"apps above what they are allowed {sorted(self._over_allowed)}"
                    f" != {sorted(allowed)}"]
        return []

    def step(
        self, now: float, apps: Mapping[str, AppRecord], leaves: Mapping[str, Queue],
        changed: Iterable[str], grants: Grants, capacity: Resources, out: list[Decision],
        workers: Workers | None = None, rooms: Rooms | None = None,
    ) -> None:
        """Deadline kills, then new orders driven by the deficit of the apps still short
        (the module doc's rule). ``changed``: the apps changed this step; ``capacity``: what
        executors may use; ``grants``: this step's grants (their running sums are read, and
        rebased on what new orders will free)."""
        late: dict[str, list[str]] = {}
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, app_id, eid = heapq.heappop(self._deadlines)
            rec = apps.get(app_id)
            if rec is None:  # forgotten since: it ended with its executors gone
                continue
            if rec.state.admitted and eid in rec.executors and rec.reclaiming.get(eid) == deadline:
                late.setdefault(app_id, []).append(eid)
        for app_id in changed:
            self.index(apps[app_id])
        victims = self._choose(apps, leaves, grants, capacity, workers, rooms)
        for app_id in sorted(late.keys() | victims.keys(), key=lambda a: apps[a].rank):
            rec = apps[app_id]
            if app_id in late:
                for eid in late[app_id]:
                    rec.reclaiming[eid] = None
                out.append(Reclaim(app_id, tuple(sorted(late[app_id])), ReclaimMode.KILL, now))
            chosen = victims.get(app_id)
            if not chosen:
                continue
            queue = leaves[rec.spec.queue]
            rule = rule_of(queue)
            deadline = rule.deadline(now, queue.reclaim_timeout_s)
            for e in chosen:
                if rule.kill_at_deadline:
                    rec.reclaiming[e.executor_id] = deadline
                    heapq.heappush(self._deadlines, (deadline, app_id, e.executor_id))
                else:
                    rec.reclaiming[e.executor_id] = None
            out.append(Reclaim(app_id, tuple(e.executor_id for e in chosen), queue.reclaim_mode,
                               deadline))
            grants.rebase(rec, rec.target)  # what its orders will free
            self.index(rec)

    def _choose(self, apps: Mapping[str, AppRecord], leaves: Mapping[str, Queue], g: Grants,
                capacity: Resources, workers: Workers | None = None,
                rooms: Rooms | None = None) -> dict[str, list[Executor]]:
        """app -> executors to order back this step: every app's ``over_allowed`` first, then
        for the deficit. O(apps over what they are allowed) when nobody is short or the orders
        already out cover the deficit (almost always none)."""
        out: dict[str, list[Executor]] = {}
        # The apps short of a custom resource are served by the custom pass below: their cores
        # are not a need the other apps' executors could meet.
        need_cores = (g.short_cores - g.short_custom_cores - (capacity.cores - g.cores)
                      - g.freeing_cores)
        need_mem = g.short_mem_mib - (capacity.mem_mib - g.mem_mib) - g.freeing_mem_mib
        need_custom = _custom_need(g, capacity) if g.short_custom_cores else {}
        # Where the GPU-short apps' executors go: an app's surplus is taken there first.
        where = (_custom_workers(workers) if g.short_custom_cores and workers is not None
                 else frozenset())
        for key in sorted(self._over_allowed.values(), reverse=True):
            rec = apps[key[2]]
            mode = leaves[rec.spec.queue].reclaim_mode
            n = over_allowed(rec)
            if where:
                there = [e for e in rec.executors.values() if e.worker in where]
                chosen = choose_victims(there, rec.reclaiming, n, mode)
                ids = {e.executor_id for e in chosen}
                chosen += choose_victims([e for e in rec.executors.values()
                                          if e.executor_id not in ids],
                                         rec.reclaiming, n - len(chosen), mode)
            else:
                chosen = choose_victims(rec.executors.values(), rec.reclaiming, n, mode)
            if chosen:
                out[rec.app_id] = chosen
                need_cores -= len(chosen) * rec.spec.executor.cores
                need_mem -= len(chosen) * rec.spec.executor.mem_mib
                for k, v in rec.spec.executor.custom:
                    if k in need_custom:
                        need_custom[k] -= len(chosen) * v
        if not g.short:
            return out
        if any(v > 0 for v in need_custom.values()):
            self._choose_custom(apps, leaves, need_custom, out)
        if where and rooms is not None:
            self._choose_room(apps, leaves, g, where, rooms, out)
        for key in reversed(self._over_ranked):
            if need_cores <= 0 and need_mem <= 0:
                break
            if key[2] in self._over_allowed or key[2] in out:
                continue  # its whole surplus is taken above, or its GPU executors are
            rec = apps[key[2]]
            size = rec.spec.executor
            mode = leaves[rec.spec.queue].reclaim_mode
            chosen = []
            for e in choose_victims(rec.executors.values(), rec.reclaiming, surplus(rec), mode):
                if need_cores <= 0 and need_mem <= 0:
                    break
                chosen.append(e)
                need_cores -= size.cores
                need_mem -= size.mem_mib
            if chosen:
                out[rec.app_id] = chosen
        return out

    def _choose_custom(self, apps: Mapping[str, AppRecord], leaves: Mapping[str, Queue],
                       need: dict[str, int], out: dict[str, list[Executor]]) -> None:
        """Victims for the apps short of a custom resource: only executors that hold it -
        executors on workers that have it, where the short app's executor can go - lowest
        rank first, until each short resource is freed; never executors elsewhere, which
        would free nothing it can use."""
        for key in reversed(self._over_ranked):
            if all(v <= 0 for v in need.values()):
                return
            if key[2] in self._over_allowed:
                continue
            rec = apps[key[2]]
            size = rec.spec.executor
            if not any(need.get(k, 0) > 0 for k, _ in size.custom):
                continue
            chosen = []
            for e in choose_victims(rec.executors.values(), rec.reclaiming, surplus(rec),
                                    leaves[rec.spec.queue].reclaim_mode):
                if not any(need.get(k, 0) > 0 for k, _ in size.custom):
                    break
                chosen.append(e)
                for k, v in size.custom:
                    if k in need:
                        need[k] -= v
            if chosen:
                out[rec.app_id] = chosen

    def _choose_room(self, apps: Mapping[str, AppRecord], leaves: Mapping[str, Queue],
                     g: Grants, where: frozenset[str], rooms: Rooms,
                     out: dict[str, list[Executor]]) -> None:
        """Victims for the GPU-short apps' cores: their executors go only to the workers with
        GPUs, so when the GPUs are there but those workers' cores are held, the executors
        taken back are executors on those workers (the backend names each executor's
        worker), lowest rank first - never executors on the other workers."""
        free = sum(cores * n for (cores, _mem, custom), n in rooms.count.items() if custom)
        need = g.short_custom_cores - free
        for app_id, chosen in out.items():
            size = apps[app_id].spec.executor
            need -= sum(size.cores for e in chosen if e.worker in where)
        # (Orders out from earlier steps are not looked for: an app's surplus counts them,
        # so no executor is ordered twice, and a kill is carried out within a step or two.)
        for key in reversed(self._over_ranked):
            if need <= 0:
                return
            if key[2] in self._over_allowed or key[2] in out:
                continue
            rec = apps[key[2]]
            there = [e for e in rec.executors.values() if e.worker in where]
            if not there:
                continue
            chosen = []
            for e in choose_victims(there, rec.reclaiming, surplus(rec),
                                    leaves[rec.spec.queue].reclaim_mode):
                if need <= 0:
                    break
                chosen.append(e)
                need -= rec.spec.executor.cores
            if chosen:
                out[rec.app_id] = chosen


def _custom_workers(workers: Workers) -> frozenset[str]:
    return frozenset(w.name for w in workers.workers if w.size.custom)


def _custom_need(g: Grants, capacity: Resources) -> dict[str, int]:
    """Per custom resource: what the short apps lack, less what is free of it and what the
    orders out will free."""
    free, freeing = g.free_custom(capacity), g.freeing_custom
    return {k: v - free.get(k, 0) - freeing.get(k, 0) for k, v in g.short_custom.items() if v > 0}
