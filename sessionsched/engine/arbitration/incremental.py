"""The incremental arbiter: the targets of the phases in ``arbitration`` (the package's header)
for a changing set of claims, reusing last cycle's work.

Why incremental: at 10k running apps a from-scratch pass costs more than a scheduling cycle
may. Phase 2 is cheap above the leaves (one water-fill per parent), and a leaf's result depends
only on its whole cores, its claims and its policy, so ``Arbiter`` keeps each leaf's result
(``leafbook.LeafBook``) and recomputes a leaf only when one of those changed; a leaf whose cores
cover every want (a cluster with room: its cores then follow its wants) only looks at the
claims that changed. Phases 1 and 3 normally have nothing to cut (checked from running sums);
when they do, phases 3 and 4 go over every claim that cycle, and phase 1's cut is walked in
rank order; a leaf keeps its result when phase 1 cut none of its floors, or cut them as it
did last time (the floors are part of the result's key). ``oracle`` computes the same targets
from scratch, independently: the tests hold the two to each other over random histories.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import NamedTuple

from sortedcontainers import SortedList

from ...model import Queue, Resources
from ..tree import QueueTree
from .decay import NO_PAST, Past
from .greedy import ORDERS as GREEDY_ORDERS
from .leafbook import LeafBook
from .policies import Claim, by_priority_then_seq, water_fill
from .users import divide_leaf

_EPS = 1e-9


class _Cut(NamedTuple):
    """Phase 1's cut: every claim's floor as cut, the leaves where one was cut (their floor
    cores: the others' results are kept, as uncut) and the room left above the floors."""

    floors: dict[str, int]
    low: dict[str, int]
    left: Resources


class Arbiter:
    """Targets for a changing set of claims, recomputing only the leaves that changed.

    Feed it with ``set_claim``/``drop``; ``compute`` returns the app ids whose target changed
    and leaves every target in ``targets``.
    """

    def __init__(self) -> None:
        self._claims: dict[str, Claim] = {}
        self._ranked = SortedList()  # rank keys of all claims, for the phases that go by rank
        self._books: dict[str, LeafBook] = {}
        self._floor_cores = 0
        self._floor_mem_mib = 0
        self.targets: dict[str, int] = {}
        self._bonus: dict[str, int] = {}  # remainders given by the last compute
        self._exact = True  # targets == leaf results + bonus (no phase 1/3 cut last time)

    def set_claim(self, c: Claim) -> None:
        old = self._claims.get(c.app_id)
        if old == c:
            return
        if (old is not None and old.queue == c.queue
                and by_priority_then_seq(old) == by_priority_then_seq(c)):
            # Its want or floor changed (the common case): its place in each order stays.
            self._claims[c.app_id] = c
            self._books[c.queue].replace(old, c)
            self._floor_cores += c.floor * c.executor.cores - old.floor * old.executor.cores
            self._floor_mem_mib += c.floor * c.executor.mem_mib - old.floor * old.executor.mem_mib
            return
        if old is not None:
            self._remove(old)
        self._claims[c.app_id] = c
        self._ranked.add(by_priority_then_seq(c))
        book = self._books.get(c.queue)
        if book is None:  # not ``setdefault``: a LeafBook (and its SortedList) is dear to build
            book = self._books[c.queue] = LeafBook()
        book.add(c)
        self._floor_cores += c.floor * c.executor.cores
        self._floor_mem_mib += c.floor * c.executor.mem_mib

    def drop(self, app_id: str) -> None:
        old = self._claims.pop(app_id, None)
        if old is not None:
            self._remove(old)
        self.targets.pop(app_id, None)
        self._bonus.pop(app_id, None)

    def _remove(self, c: Claim) -> None:
        self._ranked.remove(by_priority_then_seq(c))
        self._books[c.queue].add(c, -1)
        self._floor_cores -= c.floor * c.executor.cores
        self._floor_mem_mib -= c.floor * c.executor.mem_mib

    # --- the computation ----------------------------------------------------------------

    def compute(self, root: Queue, capacity: Resources, past: Past = NO_PAST) -> list[str]:
        """Targets for every claim (phases 1-4); returns the ids whose target changed.
        ``past``: decayed past usage (``decay``), the same the oracle is given."""
        tree = QueueTree.of(root)
        unknown = sorted(q for q, b in self._books.items() if b.claims and q not in tree.path)
        if unknown:
            raise ValueError(f"claims in queues that are not leaves: {', '.join(unknown)}")
        low, high = self._node_sums(tree, None)
        cut = None
        if not self._floors_fit(tree, capacity, low):
            cut = self._cut_floors(tree, capacity)
            low, high = self._node_sums(tree, cut)
        budget = min(self._cores_memory_backs(capacity), high[root.name])
        cores_of = _divide(tree, low, high, max(budget, low[root.name], 0), past)
        recomputed = self._leaf_results(tree, cores_of, cut, past)
        used_mem = sum(b.used_mem_mib for b in self._books.values())
        if cut is None and used_mem <= capacity.mem_mib:
            return self._finish_exact(tree, capacity, recomputed)
        return self._finish_cut(tree, capacity, cut)

    def _cores_memory_backs(self, capacity: Resources) -> float:
        """The cores phase 2 divides: all of them, or when the wanted executors need more
        memory than the cluster has, the cores its memory backs at their mean MiB per core.
        Dividing cores that memory cannot back would leave phase 3 to cut the shares in rank
        order: a fairshare queue would be run as fifo whenever memory is the scarce part."""
        want_cores = sum(b.want_cores for b in self._books.values())
        want_mem = sum(b.want_mem_mib for b in self._books.values())
        if want_mem <= capacity.mem_mib or want_cores <= 0:
            return capacity.cores
        return min(capacity.cores, capacity.mem_mib * want_cores / want_mem)

    def _floors_fit(self, tree: QueueTree, capacity: Resources, low: dict[str, int]) -> bool:
        if self._floor_cores > capacity.cores or self._floor_mem_mib > capacity.mem_mib:
            return False
        return all(q.max_cores is None or low[q.name] <= q.max_cores for q in tree.node.values())

    def _cut_floors(self, tree: QueueTree, capacity: Resources) -> _Cut:
        """Phase 1 when floors do not all fit: guaranteed first, then rank."""
        cores, mem = capacity.cores, capacity.mem_mib
        used: dict[str, int] = {}
        claims = self._claims
        out = dict.fromkeys(claims, 0)  # a floor of 0 stays 0: nothing to fit, nothing taken
        low: dict[str, int] = {}
        cut = set()
        # Two walks of the ranked keys: the guaranteed in rank order, then the rest (no sort).
        order = [c for k in self._ranked if (c := claims[k[2]]).floor]
        for c in [c for c in order if c.guaranteed] + [c for c in order if not c.guaranteed]:
            size = c.executor
            if cores <= 0 or (mem <= 0 and size.mem_mib):
                cut.add(c.queue)  # no room left for its size: cut to 0
                continue
            n = min(c.floor, max(cores, 0) // size.cores)
            if size.mem_mib:
                n = min(n, max(mem, 0) // size.mem_mib)
            for q in tree.capped_path(c.queue):
                n = min(n, max(q.max_cores - used.get(q.name, 0), 0) // size.cores)
            n = max(n, 0)
            out[c.app_id] = n
            if n != c.floor:
                cut.add(c.queue)
            low[c.queue] = low.get(c.queue, 0) + n * size.cores
            cores -= n * size.cores
            mem -= n * size.mem_mib
            for q in tree.capped_path(c.queue):
                used[q.name] = used.get(q.name, 0) + n * size.cores
        return _Cut(out, {q: low.get(q, 0) for q in cut}, Resources(cores, mem))

    def _node_sums(
        self, tree: QueueTree, cut: _Cut | None
    ) -> tuple[dict[str, int], dict[str, int]]:
        """Per queue: (floor cores, wanted cores cut to max_cores and at least the floors)."""
        low: dict[str, int] = {}
        high: dict[str, int] = {}
        for name in tree.postorder:
            q = tree.node[name]
            kids = tree.children[name]
            if kids:
                f = sum(low[k] for k in kids)
                w = sum(high[k] for k in kids)
            else:
                book = self._books.get(name)
                if book is None:
                    f = w = 0
                else:
                    w = book.want_cores
                    f = book.floor_cores if cut is None else cut.low.get(name, book.floor_cores)
            if q.max_cores is not None:
                w = min(w, q.max_cores)
            low[name] = f
            high[name] = max(w, f)
        return low, high

    def _leaf_results(
        self, tree: QueueTree, cores_of: dict[str, float], cut: _Cut | None, past: Past,
    ) -> list[str]:
        """Recompute the leaves whose cores, claims, policy or users' past usage changed, and
        those where phase 1 cut a floor (``cut``: their result is not kept); returns the apps
        whose leaf result changed."""
        changed: list[str] = []
        floors = cut.floors if cut is not None else {}
        for name, book in self._books.items():
            if not book.claims:
                if book.result or book.unsat_sizes or book.used_cores or book.used_mem_mib:
                    book.settle(None, {}, ())  # its last apps left: forget their results
                continue
            cores = max(math.floor(cores_of.get(name, 0.0) + _EPS), 0)
            policy = tree.node[name].policy
            users = past.users.get(name)
            kept = cut is None or name not in cut.low  # its claims are as they stand
            # A leaf whose floors phase 1 cut the same way again keeps its result too.
            cut_to = None if kept else tuple(floors[c.app_id] for c in book.ranked())
            key = (cores, book.version, policy,
                   None if users is None else tuple(sorted(users.items())), cut_to)
            if book.key == key:
                continue
            if kept and cores >= book.want_cores:
                changed += book.sate(key)
                continue
            if kept and policy in GREEDY_ORDERS and users is None:
                changed += book.walk(key, policy, cores)
                continue
            claims = book.ranked()
            if not kept:
                claims = [c if floors[c.app_id] == c.floor else replace(c, floor=floors[c.app_id])
                          for c in claims]
            result = divide_leaf(policy, cores, claims, users)
            changed += book.settle(key, result, claims)
        return changed

    def _finish_exact(
        self, tree: QueueTree, capacity: Resources, recomputed: list[str]
    ) -> list[str]:
        """Phase 4 when nothing was cut: targets are leaf results plus remainders.
        ``recomputed``: the apps whose leaf result changed this time."""
        books = self._books
        left_cores = capacity.cores - sum(b.used_cores for b in books.values())
        left_mem = capacity.mem_mib - sum(b.used_mem_mib for b in books.values())
        used_by_leaf = {name: b.used_cores for name, b in books.items()}
        unsat = [b for b in books.values() if b.unsat_sizes]
        smallest = min((b.unsat_min_cores for b in unsat), default=0)

        def base(c: Claim) -> int:
            return books[c.queue].result[c.app_id]

        bonus: dict[str, int] = {}
        if unsat and left_cores >= smallest:  # else no executor fits: skip the scan
            bonus = _remainders(
                lambda: heapq.merge(*(b.unsatisfied() for b in unsat),
                                    key=by_priority_then_seq),
                base, left_cores, left_mem, _capped_used(tree, used_by_leaf), tree,
            )
        if self._exact:
            candidates: Iterable[str] = set(recomputed) | self._bonus.keys() | bonus.keys()
        else:
            candidates = self._claims.keys()
        self._bonus = bonus
        self._exact = True
        return self._update(
            (a, base(self._claims[a]) + bonus.get(a, 0)) for a in candidates
        )

    def _finish_cut(
        self, tree: QueueTree, capacity: Resources, cut: _Cut | None
    ) -> list[str]:
        """Phases 3 and 4 over every claim (floors or memory were cut this cycle). The leaves'
        results stay valid unless a floor of theirs was cut (then they were not kept)."""
        claims, books = self._claims, self._books
        if cut is None:
            floors = None
            cores = capacity.cores - self._floor_cores
            mem = capacity.mem_mib - self._floor_mem_mib
        else:
            floors, cores, mem = cut.floors, cut.left.cores, cut.left.mem_mib
        final: dict[str, int] = {}
        used_by_leaf: dict[str, int] = {}
        below: list[Claim] = []  # below their want, in rank order
        for key in self._ranked:
            c = claims[key[2]]
            size = c.executor
            floor = c.floor if floors is None else floors[c.app_id]
            n = books[c.queue].result[c.app_id] - floor
            if n > 0:
                n = min(n, max(cores, 0) // size.cores)
                if size.mem_mib:
                    n = min(n, max(mem, 0) // size.mem_mib)
                n = max(n, 0)
                cores -= n * size.cores
                mem -= n * size.mem_mib
            t = floor + max(n, 0)
            final[c.app_id] = t
            used_by_leaf[c.queue] = used_by_leaf.get(c.queue, 0) + t * size.cores
            if t < c.want:
                below.append(c)
        bonus: dict[str, int] = {}
        if (
            below  # else no executor fits: skip the scan
            and min(c.executor.cores for c in below) <= cores
            and min(c.executor.mem_mib for c in below) <= mem
        ):
            bonus = _remainders(
                lambda: (c for c in below if final[c.app_id] < c.want),
                lambda c: final[c.app_id], cores, mem, _capped_used(tree, used_by_leaf), tree,
            )
        self._bonus = bonus
        self._exact = False
        return self._update((a, n + bonus.get(a, 0)) for a, n in final.items())

    def _update(self, pairs: Iterable[tuple[str, int]]) -> list[str]:
        changed = []
        for app_id, n in pairs:
            if self.targets.get(app_id) != n:
                self.targets[app_id] = n
                changed.append(app_id)
        return changed


def _divide(
    tree: QueueTree, low: dict[str, int], high: dict[str, int], cores: float,
    past: Past = NO_PAST,
) -> dict[str, float]:
    """Phase 2 above the leaves: leaf name -> cores (fractional); siblings levelled by
    (cores + decayed past usage) / weight."""
    queue_past = past.queues
    out: dict[str, float] = {}
    stack = [(tree.root.name, float(cores))]
    while stack:
        name, c = stack.pop()
        kids = [k for k in tree.children[name] if high[k] > 0]
        if not tree.children[name]:
            out[name] = c
            continue
        if not kids:
            continue
        weights = [tree.node[k].weight for k in kids]
        guarantee = [
            float(max(low[k], min(tree.node[k].min_share_cores, high[k]))) for k in kids
        ]
        p = [queue_past.get(k, 0.0) for k in kids] if queue_past else None
        if sum(guarantee) > c:
            shares = water_fill(c, weights, [float(low[k]) for k in kids], guarantee, p)
        else:
            shares = water_fill(c, weights, guarantee, [float(high[k]) for k in kids], p)
        stack.extend(zip(kids, shares, strict=True))
    return out


def _capped_used(tree: QueueTree, used_by_leaf: dict[str, int]) -> dict[str, int]:
    """Executor cores given under each queue that has ``max_cores``."""
    used: dict[str, int] = {}
    for leaf, cores in used_by_leaf.items():
        for q in tree.capped_path(leaf):
            used[q.name] = used.get(q.name, 0) + cores
    return used


def _remainders(
    order: Callable[[], Iterable[Claim]],
    base: Callable[[Claim], int],
    left_cores: int,
    left_mem: int,
    used: dict[str, int],
    tree: QueueTree,
) -> dict[str, int]:
    """Phase 4: app id -> extra executors. ``order()`` yields the claims below their want in
    rank order (their targets so far by ``base``); called once per pass."""
    bonus: dict[str, int] = {}
    progress = True
    while progress and left_cores > 0:
        progress = False
        for c in order():
            size = c.executor
            if size.cores > left_cores or size.mem_mib > left_mem:
                continue
            if base(c) + bonus.get(c.app_id, 0) >= c.want:
                continue
            capped = tree.capped_path(c.queue)
            if any(used.get(q.name, 0) + size.cores > q.max_cores for q in capped):
                continue
            bonus[c.app_id] = bonus.get(c.app_id, 0) + 1
            left_cores -= size.cores
            left_mem -= size.mem_mib
            for q in capped:
                used[q.name] = used.get(q.name, 0) + size.cores
            progress = True
            if left_cores <= 0:
                break
    return bonus
