"""What the running apps still want beyond their floors: the ``demand`` admission's book.

An admitted app's *elastic need* is the executors it wants above its floor, in cores, memory
and custom resources (GPUs and the like): ``(want - floor) x executor size`` where ``floor``
is ``AppRecord.floor`` (minExecutors, or a ``reserve`` app's outstanding reservation) and
``want`` is its reported demand, cut to what it may hold (maxExecutors,
``spark.ego.slots.max``). An app still STARTING without an executor has reported nothing yet
(its driver is starting or pre-processing): it wants at least its first executor,
``max(minExecutors, 1)``, as ``reserve`` would set aside - counted as a need, not set aside,
so other apps may use the cores until it asks. Floors are counted by the ledger already
(``ledger.Totals.floor_*``); this book holds the rest.

Kept per leaf queue and per priority, so admission can ask "what do the apps of this queue at
or above priority P still want" in O(distinct priorities) (``need_at_or_above``), and with
how many apps want it (``weight_at_or_above``: their ``fairshare`` weight, which is their
priority), and kept
up to date like the ledger: each app's last contribution is taken out and its current one put
in when it changes (``refresh``), so the sums always equal a sum over the books (``recount``).

Admission asks about each leaf's head every cycle, and a leaf's apps often have as many
distinct priorities as apps. So the book also keeps, per leaf, the answer to the last question
(the priority asked, and the sums at or above it), brought up to date in ``refresh`` like the
sums, and the leaf's priorities in order: asked with another priority, the answer slides to
it over the priorities in between only. A leaf's head rarely changes between cycles, and
within a cycle the heads come in rank order, highest priority first, so most questions cost
O(1) or a few priorities, not all of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from sortedcontainers import SortedList

from ..model import AppState, Resources
from ..model.custom import Custom, combine, scaled
from .ledger import AppRecord
from .placement import profiles

_NONE = Resources()
# (cores, MiB, custom): plain ints and the custom pairs, as this runs for every changed app;
# the custom pairs are empty for most apps, and the sums skip them then.
Need = tuple[int, int, Custom]
# (cores, MiB, apps, custom) of the apps of one priority that want more
Sums = tuple[int, int, int, Custom]
_NO_NEED: Need = (0, 0, ())
_NO_SUMS: Sums = (0, 0, 0, ())


def elastic_need(rec: AppRecord) -> Need:
    """What an admitted app wants above its floor (module doc); none for any other app."""
    if not rec.state.admitted:
        return _NO_NEED
    floor, spec = rec.floor, rec.spec
    want = rec.demand if rec.demand > floor else floor  # comparisons, not max/min calls
    if rec.state is AppState.STARTING and not rec.executors:
        first = spec.min_executors if spec.min_executors > 1 else 1
        want = want if want > first else first
    cap = spec.executor_cap
    if cap is not None and cap < want:
        want = cap
    n = want - floor
    if n <= 0:
        return _NO_NEED
    size = rec.spec.executor
    if rec.profiles:
        return _by_profile(rec, want, floor)
    return (n * size.cores, n * size.mem_mib, scaled(size.custom, n) if size.custom else ())


def _by_profile(rec: AppRecord, want: int, floor: int) -> Need:
    """An app with stage-level profiles: its ``want`` executors split over its profiles as
    its grant would be (``placement.profiles.split``), each by its profile's shape, less its
    floor, which the ledger counts by the app's own shape (each figure at least 0): a stage
    that asks for GPU executors wants GPUs though the app's own executors ask for none."""
    cores = mem = 0
    custom: Custom = ()
    for profile_id, k in profiles.split(rec, want):
        size = profiles.shape(rec, profile_id)
        cores += k * size.cores
        mem += k * size.mem_mib
        if size.custom:
            custom = combine(custom, scaled(size.custom, k), 1)
    own = rec.spec.executor
    if own.custom:
        custom = combine(custom, scaled(own.custom, floor), -1)
    custom = tuple((name, v) for name, v in custom if v > 0)
    cores, mem = max(cores - floor * own.cores, 0), max(mem - floor * own.mem_mib, 0)
    return (cores, mem, custom) if cores or mem or custom else _NO_NEED


class NeedBook:
    """Elastic needs of admitted apps, summed per leaf queue and priority, with the number of
    apps that have one."""

    def __init__(self) -> None:
        self.by_leaf: dict[str, dict[int, Sums]] = {}
        self.cores_in: dict[str, int] = {}  # leaf -> its apps' needs in cores, every priority
        self._last: dict[str, tuple[str, int, Need]] = {}
        self._priorities: dict[str, SortedList] = {}  # leaf -> the priorities in ``by_leaf``
        # leaf -> [priority asked, cores, MiB, weight, custom at or above it], kept up to date
        self._asked: dict[str, list] = {}

    def refresh(self, rec: AppRecord) -> None:
        """Take the app's previous need out and its current one (if any) in."""
        need = elastic_need(rec)
        new = (rec.spec.queue, rec.priority, need) if need != _NO_NEED else None
        old = self._last.get(rec.app_id)
        if new == old:
            return
        if old is not None:
            leaf, priority, (cores, mem, custom) = old
            sums = self.by_leaf[leaf]
            was_cores, was_mem, was_n, was_custom = sums[priority]
            if was_n == 1:
                del sums[priority]
                self._priorities[leaf].remove(priority)
                if not sums:
                    del self.by_leaf[leaf]
            else:
                sums[priority] = (was_cores - cores, was_mem - mem, was_n - 1,
                                  combine(was_custom, custom, -1))
            self._answer(leaf, priority, -cores, -mem, -1, custom)
            self.cores_in[leaf] -= cores
            del self._last[rec.app_id]
        if new is not None:
            leaf, priority, (cores, mem, custom) = new
            sums = self.by_leaf.setdefault(leaf, {})
            had_cores, had_mem, had_n, had_custom = sums.get(priority, _NO_SUMS)
            sums[priority] = (had_cores + cores, had_mem + mem, had_n + 1,
                              combine(had_custom, custom, 1))
            if not had_n:
                order = self._priorities.get(leaf)
                if order is None:  # not ``setdefault``: a SortedList is dear to build
                    order = self._priorities[leaf] = SortedList()
                order.add(priority)
            self._answer(leaf, priority, cores, mem, 1, custom)
            self.cores_in[leaf] = self.cores_in.get(leaf, 0) + cores
            self._last[rec.app_id] = new

    def _answer(self, leaf: str, priority: int, cores: int, mem: int, n: int,
                custom: Custom) -> None:
        """Bring the leaf's kept answer up to date with one app's need in (``n`` 1) or out
        (``n`` -1)."""
        asked = self._asked.get(leaf)
        if asked is not None and priority >= asked[0]:
            asked[1] += cores
            asked[2] += mem
            asked[3] += priority * n
            if custom:
                asked[4] = combine(asked[4], custom, n)

    def _at_or_above(self, leaf: str, priority: int) -> list:
        """The leaf's kept answer, slid to ``priority`` first: the sums of the priorities
        between the one asked last and this one are added (lower) or taken out (higher)."""
        asked = self._asked.get(leaf)
        if asked is None:  # nothing asked yet: the sums above every priority
            asked = self._asked[leaf] = [math.inf, 0, 0, 0, ()]
        was = asked[0]
        if priority != was and leaf in self.by_leaf:
            sums = self.by_leaf[leaf]
            sign, lo, hi = (1, priority, was) if priority < was else (-1, was, priority)
            for p in self._priorities[leaf].irange(lo, hi, inclusive=(True, False)):
                c, m, n, custom = sums[p]
                asked[1] += sign * c
                asked[2] += sign * m
                asked[3] += sign * p * n
                if custom:
                    asked[4] = combine(asked[4], custom, sign)
        asked[0] = priority
        return asked

    def need_at_or_above(self, leaf: str, priority: int) -> Resources:
        """What the leaf's admitted apps of ``priority`` or higher want above their floors."""
        _, cores, mem, _, custom = self._at_or_above(leaf, priority)
        return Resources(cores, mem, custom) if cores or mem or custom else _NONE

    def weight_at_or_above(self, leaf: str, priority: int) -> int:
        """The ``fairshare`` weight (the sum of their priorities) of the leaf's admitted apps of
        ``priority`` or higher that want more than their floors."""
        return self._at_or_above(leaf, priority)[3]

    def check(self) -> list[str]:
        """The kept answers that differ from a sum over the book (for ``selfcheck``)."""
        out = []
        for leaf, (priority, *kept) in self._asked.items():
            sums = self.by_leaf.get(leaf, {}).items()
            custom: Custom = ()
            for p, (_, _, _, c) in sums:
                if p >= priority:
                    custom = combine(custom, c, 1)
            fresh = [sum(c for p, (c, _, _, _) in sums if p >= priority),
                     sum(m for p, (_, m, _, _) in sums if p >= priority),
                     sum(p * n for p, (_, _, n, _) in sums if p >= priority), custom]
            if kept != fresh:
                out.append(f"need of {leaf} at or above {priority}: kept {kept}, sums {fresh}")
        for leaf, cores in self.cores_in.items():
            if cores != sum(c for c, _, _, _ in self.by_leaf.get(leaf, {}).values()):
                out.append(f"need of {leaf} in cores: kept {cores}, sums {self.by_leaf.get(leaf)}")
        return out

    @staticmethod
    def recount(records: Iterable[AppRecord]) -> dict[str, dict[int, Sums]]:
        """The sums from scratch (for ``selfcheck``)."""
        out: dict[str, dict[int, Sums]] = {}
        for rec in records:
            need = elastic_need(rec)
            if need != _NO_NEED:
                sums = out.setdefault(rec.spec.queue, {})
                had = sums.get(rec.priority, _NO_SUMS)
                sums[rec.priority] = (had[0] + need[0], had[1] + need[1], had[2] + 1,
                                      combine(had[3], need[2], 1))
        return out
