"""Phase 1 of the incremental arbiter (``incremental.Arbiter``) when the floors do not all fit:
the floors given in the order 1. guaranteed first, 2. rank, as the capacity and every
``max_cores`` on the app's path allow (the package's header; ``oracle.phase1_floors`` is the
same from scratch).

Why kept between cycles: on a cluster whose floors stay above its memory (running gangs keep
their ``N`` executors as their floor: after lost workers, or apps adopted as they are) the cut
is needed every cycle, and walking every claim with a floor each time cost more than the rest
of a memory-bound cycle. The walk has two parts. A *prefix* of the order where every claim gets
its whole floor - in it a claim's floor fits exactly when the floors up to and including it fit
(capacity and every ``max_cores``: sums that only grow along the order) - and the rest, from
the first claim that does not get its whole floor (the *boundary*) on. ``FloorCut`` keeps the
boundary and the prefix's sums (cores, memory, cores per leaf) as claims come and go: a claim
placed before the boundary is added to or taken from the sums at once. A cut then moves the
boundary back while the prefix does not fit, or on while the next claim does, by the claims
between the old place and the new one, and walks the rest claim by claim as the oracle does:
those are the claims it cuts (and the few smaller ones that still fit after the first cut).
The walk from the boundary is the oracle's own, so the cut is exact as long as every claim
before the boundary gets its whole floor; a boundary placed early would cost time, not
change a floor.
"""

from __future__ import annotations

from typing import NamedTuple

from sortedcontainers import SortedList

from ...model import Resources
from ..tree import QueueTree
from .policies import Claim, by_priority_then_seq

_END = (2,)  # after every key: (0 guaranteed / 1 not, *rank)
_ID = 3  # a key's app id


def _key(c: Claim) -> tuple:
    return (0 if c.guaranteed else 1, *by_priority_then_seq(c))


class Cut(NamedTuple):
    """A cut's outcome: the floors it cut (app id -> floor given, only those below their
    floor) and the room left above the floors given."""

    floors: dict[str, int]
    left: Resources


class FloorCut:
    """The claims with a floor, their sums, and phase 1's walk kept between cycles.

    Feed it every claim set or dropped (``add``/``remove``; a claim without a floor is ignored).
    ``fits`` says whether every floor fits as it is (phase 1 has nothing to cut); ``cut`` walks.
    """

    def __init__(self) -> None:
        self._claims: dict[str, Claim] = {}  # the claims with a floor, by app id
        self._order = SortedList()  # their keys: guaranteed first, then rank
        self.cores = 0  # every floor, in cores and memory
        self.mem_mib = 0
        self._leaf_cores: dict[str, int] = {}  # every floor's cores, by leaf
        self._at: tuple = ()  # the boundary: the prefix is every key below it
        self._pre_cores = 0  # the prefix's floors
        self._pre_mem = 0
        self._pre_leaf: dict[str, int] = {}
        self._fits: tuple = ()  # ``fits``' last answer, by what it read: most cycles ask again
        self._version = 0  # of the floors: moved by every ``add``

    def add(self, c: Claim, sign: int = 1) -> None:
        """A claim set (``sign`` 1) or dropped (-1): the exact claim that was added."""
        if not c.floor:
            return
        key = _key(c)
        if sign > 0:
            self._claims[c.app_id] = c
            self._order.add(key)
        else:
            del self._claims[c.app_id]
            self._order.remove(key)
        cores, mem = sign * c.floor * c.executor.cores, sign * c.floor * c.executor.mem_mib
        self._version += 1
        self.cores += cores
        self.mem_mib += mem
        _bump(self._leaf_cores, c.queue, cores)
        if key < self._at:
            self._pre_cores += cores
            self._pre_mem += mem
            _bump(self._pre_leaf, c.queue, cores)

    def fits(self, tree: QueueTree, capacity: Resources) -> bool:
        """Every floor fits the capacity and every ``max_cores`` (the oracle's test)."""
        if self.cores > capacity.cores or self.mem_mib > capacity.mem_mib:
            return False
        kept = self._fits
        if kept and kept[0] is tree and kept[1] == self._version:
            return kept[2]
        under = _capped(tree, self._leaf_cores)
        fit = all(q.max_cores is None or under.get(q.name, 0) <= q.max_cores
                  for q in tree.node.values())
        self._fits = (tree, self._version, fit)
        return fit

    def cut(self, tree: QueueTree, capacity: Resources) -> Cut:
        """Phase 1's cut for ``capacity`` (call it when the floors do not ``fit``)."""
        used = _capped(tree, self._pre_leaf)
        self._back(tree, capacity, used)
        self._on(tree, capacity, used)
        cores = capacity.cores - self._pre_cores
        mem = capacity.mem_mib - self._pre_mem
        out: dict[str, int] = {}
        for key in self._order.irange(minimum=self._at):
            c = self._claims[key[_ID]]
            size = c.executor
            capped = tree.capped_path(c.queue)
            if cores <= 0 or (mem <= 0 and size.mem_mib):
                out[c.app_id] = 0  # no room left for its size: cut to 0
                continue
            n = min(c.floor, max(cores, 0) // size.cores)
            if size.mem_mib:
                n = min(n, max(mem, 0) // size.mem_mib)
            for q in capped:
                n = min(n, max(q.max_cores - used.get(q.name, 0), 0) // size.cores)
            n = max(n, 0)
            if n != c.floor:
                out[c.app_id] = n
            cores -= n * size.cores
            mem -= n * size.mem_mib
            for q in capped:
                used[q.name] = used.get(q.name, 0) + n * size.cores
        return Cut(out, Resources(cores, mem))

    def _back(self, tree: QueueTree, capacity: Resources, used: dict[str, int]) -> None:
        """Move the boundary back while the prefix does not fit."""
        if _fit(self._pre_cores, self._pre_mem, used, tree, capacity):
            return
        for key in self._order.irange(maximum=self._at, inclusive=(True, False), reverse=True):
            c = self._claims[key[_ID]]
            self._take(c, tree, used, -1)
            self._at = key
            if _fit(self._pre_cores, self._pre_mem, used, tree, capacity):
                return
        self._at = ()

    def _on(self, tree: QueueTree, capacity: Resources, used: dict[str, int]) -> None:
        """Move the boundary on while the next claim's whole floor fits after the prefix."""
        for key in self._order.irange(minimum=self._at):
            c = self._claims[key[_ID]]
            size = c.executor
            cores = self._pre_cores + c.floor * size.cores
            mem = self._pre_mem + c.floor * size.mem_mib
            if cores > capacity.cores or (size.mem_mib and mem > capacity.mem_mib):
                self._at = key
                return
            if any(used.get(q.name, 0) + c.floor * size.cores > q.max_cores
                   for q in tree.capped_path(c.queue)):
                self._at = key
                return
            self._take(c, tree, used, 1)
        self._at = _END

    def _take(self, c: Claim, tree: QueueTree, used: dict[str, int], sign: int) -> None:
        """Put a claim's floor into the prefix (``sign`` 1) or take it out (-1)."""
        cores = sign * c.floor * c.executor.cores
        self._pre_cores += cores
        self._pre_mem += sign * c.floor * c.executor.mem_mib
        _bump(self._pre_leaf, c.queue, cores)
        for q in tree.capped_path(c.queue):
            used[q.name] = used.get(q.name, 0) + cores


def _fit(cores: int, mem: int, used: dict[str, int], tree: QueueTree,
         capacity: Resources) -> bool:
    """The prefix's claims all get their whole floor: the sums fit (a sum of 0 fits anything:
    no claim in the prefix needs that resource; every executor has cores)."""
    return ((not cores or cores <= capacity.cores)
            and (not mem or mem <= capacity.mem_mib)
            and all(not n or n <= tree.node[q].max_cores for q, n in used.items()))


def _capped(tree: QueueTree, by_leaf: dict[str, int]) -> dict[str, int]:
    """Queue (with ``max_cores``) name -> the cores of ``by_leaf`` under it."""
    used: dict[str, int] = {}
    for leaf, cores in by_leaf.items():
        for q in tree.capped_path(leaf):
            used[q.name] = used.get(q.name, 0) + cores
    return used


def _bump(d: dict[str, int], k: str, n: int) -> None:
    v = d.get(k, 0) + n
    if v:
        d[k] = v
    else:
        d.pop(k, None)
