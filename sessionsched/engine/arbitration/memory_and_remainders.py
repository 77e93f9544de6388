"""Phases 3 and 4 of the incremental arbiter (``incremental.Arbiter``): from the leaves' results
to the targets.

Two forms, as the cycle needs: ``exact_remainders`` when nothing was cut (the targets are the
leaves' results plus the remainders, and only the claims whose result or remainder moved are
looked at by the caller), ``memory_cut`` when phase 1 cut floors or the leaves' results need
more memory than there is (phase 3 over every claim in rank order, then the remainders).
Plain functions over the arbiter's books: nothing is kept here between cycles.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from sortedcontainers import SortedList

from ...model import Resources
from ...model.custom import Custom, combine, scaled
from ..tree import QueueTree
from .custom_limits import CustomCaps
from .leafbook import BelowWant, LeafBook
from .policies import Claim


def exact_remainders(
    tree: QueueTree, left_cores: int, left_mem: int, books: Mapping[str, LeafBook],
    below: BelowWant, held: Mapping[str, Claim], left_custom: dict[str, int] | None = None,
) -> dict[str, int]:
    """Phase 4 when nothing was cut: app id -> extra executors for the cores and memory
    ``left`` after every leaf's result. ``below``: the claims below their want in the
    ``books``, ``held``: each claim as its book holds it."""
    if not below.sizes or min(below.sizes) > left_cores:  # no executor fits
        return {}

    def base(c: Claim) -> int:
        return books[c.queue].result[c.app_id]

    return _remainders(
        (held[key[2]] for key in below.keys),
        base, left_cores, left_mem, _UsedUnderCaps(tree, books), tree, left_custom,
        None if left_custom is None else CustomCaps.of(
            tree, {name: b.used_custom for name, b in books.items() if b.used_custom}),
    )


class _UsedUnderCaps(dict):
    """``_capped_used`` of the leaves' results, summed for a capped queue when the remainders
    first ask (they ask of a few: the queues above the claims they reach)."""

    def __init__(self, tree: QueueTree, books: Mapping[str, LeafBook]):
        super().__init__()
        self._tree, self._books = tree, books

    def __missing__(self, name: str) -> int:
        books = self._books
        n = self[name] = sum(books[leaf].used_cores for leaf in self._tree.under_cap[name]
                             if leaf in books)
        return n


def memory_cut(
    tree: QueueTree,
    ranked: SortedList,
    claims: Mapping[str, Claim],
    books: Mapping[str, LeafBook],
    cores: int,
    mem: int,
    custom: dict[str, int] | None = None,
) -> tuple[dict[str, int], dict[str, int]]:
    """Phases 3 and 4 over every claim (``ranked``: rank keys, the app id last; ``claims``:
    with their floors as phase 1 gave them): each claim's floor, then the growth above it in
    its leaf's result in rank order as the ``cores`` and ``mem`` left above the floors allow,
    then the remainders. Returns (app id -> target before remainders, app id ->
    remainder)."""
    final: dict[str, int] = {}
    used_by_leaf: dict[str, int] = {}
    below: list[Claim] = []  # below their want, in rank order
    for key in ranked:
        c = claims[key[2]]
        size = c.executor
        floor = c.floor
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
            (c for c in below if final[c.app_id] < c.want),
            lambda c: final[c.app_id], cores, mem, _capped_used(tree, used_by_leaf), tree,
            left_after(custom, ((c.executor, final[c.app_id]) for c in claims.values())),
            None if custom is None else CustomCaps.of(tree, _custom_by_leaf(claims, final)),
        )
    return final, bonus


def _capped_used(tree: QueueTree, used_by_leaf: dict[str, int]) -> dict[str, int]:
    """Executor cores given under each queue that has ``max_cores``."""
    used: dict[str, int] = defaultdict(int)
    for leaf, cores in used_by_leaf.items():
        for q in tree.capped_path(leaf):
            used[q.name] = used.get(q.name, 0) + cores
    return used


def _custom_by_leaf(claims: Mapping[str, Claim], n: Mapping[str, int]) -> dict[str, Custom]:
    out: dict[str, Custom] = {}
    for c in claims.values():
        if c.executor.custom and n.get(c.app_id):
            out[c.queue] = combine(out.get(c.queue, ()), scaled(c.executor.custom, n[c.app_id]), 1)
    return out


def left_after(custom: dict[str, int] | None, given: Iterable[tuple[Resources, int]]
               ) -> dict[str, int] | None:
    """The custom resources ``custom`` less what ``given`` (executor, count) holds; None
    stays None (custom resources not counted: no dominant share, ``drf``)."""
    if custom is None:
        return None
    left = dict(custom)
    for size, n in given:
        for k, v in size.custom:
            if k in left:
                left[k] -= n * v
    return left


def _remainders(
    claims: Iterable[Claim],
    base: Callable[[Claim], int],
    left_cores: int,
    left_mem: int,
    used: dict[str, int],
    tree: QueueTree,
    left_custom: dict[str, int] | None = None,
    caps: CustomCaps | None = None,
) -> dict[str, int]:
    """Phase 4: app id -> extra executors. ``claims`` yields the claims below their want in
    rank order (their targets so far by ``base``). ``left_custom``: the custom
    resources left (None: not counted), an executor asking for more skipped, as one that
    would pass a ``max_resources`` on its path (``caps``).

    A pass gives each claim one executor more, in rank order, until nothing is left. A claim
    passed over once is passed over for good: what is left only shrinks, what the caps hold
    only grows, and its target only rises towards its want. So a pass after the first walks
    only the claims the one before gave to - not, say, every GPU claim again once the GPUs
    are gone and cores are still left."""
    bonus: dict[str, int] = {}
    while left_cores > 0:
        given: list[Claim] = []
        for c in claims:
            size = c.executor
            if size.cores > left_cores or size.mem_mib > left_mem:
                continue
            if base(c) + bonus.get(c.app_id, 0) >= c.want:
                continue
            capped = tree.capped_path(c.queue)
            if any(used[q.name] + size.cores > q.max_cores for q in capped):
                continue
            if size.custom and left_custom is not None:
                if any(left_custom.get(k, 0) < v for k, v in size.custom):
                    continue
                if caps is not None:
                    if not caps.fits(c.queue, size.custom):
                        continue
                    caps.take(c.queue, size.custom)
                for k, v in size.custom:
                    left_custom[k] -= v
            bonus[c.app_id] = bonus.get(c.app_id, 0) + 1
            left_cores -= size.cores
            left_mem -= size.mem_mib
            for q in capped:
                used[q.name] = used[q.name] + size.cores
            given.append(c)
            if left_cores <= 0:
                break
        if not given:
            break
        claims = given
    return bonus
