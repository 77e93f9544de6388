"""What the running apps still want beyond their floors: the ``demand`` admission's book.

An admitted app's *elastic need* is the executors it wants above its floor, in cores and
memory: ``(want - floor) x executor size`` where ``floor`` is ``AppRecord.floor``
(minExecutors, or a ``reserve`` app's outstanding reservation) and ``want`` is its reported
demand, cut to what it may hold (maxExecutors, ``spark.ego.slots.max``). An app still STARTING
without an executor has reported nothing yet (its driver is starting or pre-processing): it
wants at least its first executor, ``max(minExecutors, 1)``, as ``reserve`` would set aside -
counted as a need, not set aside, so other apps may use the cores until it asks. Floors are
counted by the ledger already (``books.Totals.floor_*``); this book holds the rest.

Kept per leaf queue and per priority, so admission can ask "what do the apps of this queue at
or above priority P still want" in O(distinct priorities) (``need_at_or_above``), and with
how many apps want it (``weight_at_or_above``: their ``fairshare`` weight, which is their
priority), and kept
up to date like the ledger: each app's last contribution is taken out and its current one put
in when it changes (``refresh``), so the sums always equal a sum over the books (``recount``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import AppState, Resources
from .books import AppRecord

_NONE = Resources()
Need = tuple[int, int]  # (cores, MiB): plain ints, as this runs for every changed app
Sums = tuple[int, int, int]  # (cores, MiB, apps) of the apps of one priority that want more


def elastic_need(rec: AppRecord) -> Need:
    """What an admitted app wants above its floor (module doc); (0, 0) for any other app."""
    if not rec.state.admitted:
        return (0, 0)
    floor = rec.floor
    want = max(rec.demand, floor)
    if rec.state is AppState.STARTING and not rec.executors:
        want = max(want, rec.spec.min_executors, 1)
    cap = rec.spec.executor_cap
    if cap is not None:
        want = min(want, cap)
    n = want - floor
    if n <= 0:
        return (0, 0)
    size = rec.spec.executor
    return (n * size.cores, n * size.mem_mib)


class NeedBook:
    """Elastic needs of admitted apps, summed per leaf queue and priority, with the number of
    apps that have one."""

    def __init__(self) -> None:
        self.by_leaf: dict[str, dict[int, Sums]] = {}
        self._last: dict[str, tuple[str, int, Need]] = {}

    def refresh(self, rec: AppRecord) -> None:
        """Take the app's previous need out and its current one (if any) in."""
        need = elastic_need(rec)
        new = (rec.spec.queue, rec.priority, need) if need != (0, 0) else None
        old = self._last.get(rec.app_id)
        if new == old:
            return
        if old is not None:
            leaf, priority, (cores, mem) = old
            sums = self.by_leaf[leaf]
            was_cores, was_mem, was_n = sums[priority]
            if was_n == 1:
                del sums[priority]
                if not sums:
                    del self.by_leaf[leaf]
            else:
                sums[priority] = (was_cores - cores, was_mem - mem, was_n - 1)
            del self._last[rec.app_id]
        if new is not None:
            leaf, priority, (cores, mem) = new
            sums = self.by_leaf.setdefault(leaf, {})
            had_cores, had_mem, had_n = sums.get(priority, (0, 0, 0))
            sums[priority] = (had_cores + cores, had_mem + mem, had_n + 1)
            self._last[rec.app_id] = new

    def need_at_or_above(self, leaf: str, priority: int) -> Resources:
        """What the leaf's admitted apps of ``priority`` or higher want above their floors."""
        cores = mem = 0
        for p, (c, m, _) in self.by_leaf.get(leaf, {}).items():
            if p >= priority:
                cores += c
                mem += m
        return Resources(cores, mem) if cores or mem else _NONE

    def weight_at_or_above(self, leaf: str, priority: int) -> int:
        """The ``fairshare`` weight (the sum of their priorities) of the leaf's admitted apps of
        ``priority`` or higher that want more than their floors."""
        return sum(p * n for p, (_, _, n) in self.by_leaf.get(leaf, {}).items() if p >= priority)

    @staticmethod
    def recount(records: Iterable[AppRecord]) -> dict[str, dict[int, Sums]]:
        """The sums from scratch (for ``audit``)."""
        out: dict[str, dict[int, Sums]] = {}
        for rec in records:
            need = elastic_need(rec)
            if need != (0, 0):
                sums = out.setdefault(rec.spec.queue, {})
                had = sums.get(rec.priority, (0, 0, 0))
                sums[rec.priority] = (had[0] + need[0], had[1] + need[1], had[2] + 1)
        return out
