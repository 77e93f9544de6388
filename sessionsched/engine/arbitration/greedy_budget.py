"""A ``fifo`` or ``priority`` leaf's walk within a custom budget (``custom_limits.greedy``),
kept up to date as ``greedy.GreedyLeaf`` keeps the walk within the cores.

``custom_limits.greedy`` is ``GreedyLeaf``'s walk with the leaf's custom budget beside the
cores: ``left`` is the cores and each custom resource left, a claim's extra executors are
also cut to what each resource left allows. A claim's result still depends only on ``left``
before its turn and on itself, so the same reasoning holds with ``left`` a tuple: walk from
the first changed place, stop past the last one where a claim sees the ``left`` it saw.
The same integer operations as ``custom_limits.greedy``: the same results
(``tests/engine/arbitration/test_greedy_budget.py`` checks it over random histories).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...model import Policy
from ...model.custom import Custom
from .greedy import Change, GreedyLeaf
from .policies import Claim


class BudgetGreedyLeaf(GreedyLeaf):
    """``GreedyLeaf`` within a custom budget of the resources ``names`` (sorted): ``walk``
    takes the budget and the floors' custom resources beside the cores."""

    def __init__(self, policy: Policy, claims: dict[str, Claim], result: dict[str, int],
                 names: tuple[str, ...]) -> None:
        self.names = names
        super().__init__(policy, claims, result)

    def _entry(self, c: Claim) -> tuple:
        # what one executor takes: its cores, then its amount of each resource of ``names``
        got = dict(c.executor.custom)
        need = (c.executor.cores, *(got.get(k, 0) for k in self.names))
        return (*self._key(c), c.floor, c.want - c.floor, need)

    def walk_within(self, cores: int, floor_cores: int, budget: Mapping[str, int],
                    floor_custom: Custom) -> list[Change]:
        """Results for ``cores`` and ``budget`` (the floors: ``floor_cores`` in cores and
        ``floor_custom`` of the custom resources, summed over the claims)."""
        floors = dict(floor_custom)
        start = (cores - floor_cores, *(budget[k] - floors.get(k, 0) for k in self.names))
        order, claims, result, seen = self._order, self._claims, self.result, self._left_before
        if start != self._start:
            at, left = 0, start  # everything may move: walk from the head
        elif self._lo is None:
            return []
        else:
            at = order.bisect_left(self._lo)
            left = start
            if at > 0:
                prev = order[at - 1]
                extra = result[prev[_APP_AT]] - prev[-3]
                left = tuple(a - extra * v for a, v in zip(seen[prev[_APP_AT]], prev[-1],
                                                           strict=True))
        past = 0 if self._hi is None else order.bisect_right(self._hi)  # after every change
        self._start, self._lo, self._hi = start, None, None
        out: list[Change] = []
        walk = _walk_pair if len(start) == 2 else _walk
        for app_id, n in walk(order.islice(at), at, past, left, seen):
            was = result.get(app_id)
            if was != n:
                result[app_id] = n
                out.append((claims[app_id], was, n))
        return out


_APP_AT = -4  # where an entry holds its app id (``GreedyLeaf._entry``)


def _walk(entries, at: int, past: int, left: tuple, seen: dict[str, tuple]):
    """Each entry's app id and result from ``left`` on (``walk_within``'s loop): stops past
    place ``past`` at the first claim that sees the ``left`` it saw (``seen``, updated)."""
    for i, key in enumerate(entries, at):
        app_id = key[_APP_AT]
        if i >= past and seen.get(app_id) == left:
            return
        floor, extra, need = key[-3], key[-2], key[-1]
        for a, v in zip(left, need, strict=True):
            if v:
                room = max(a, 0) // v
                if room < extra:
                    extra = room
        if extra < 0:
            extra = 0
        seen[app_id] = left
        if extra:
            left = tuple(a - extra * v for a, v in zip(left, need, strict=True))
        yield app_id, floor + extra


def _walk_pair(entries, at: int, past: int, left: tuple, seen: dict[str, tuple]):
    """``_walk`` for the cores and one custom resource (the usual leaf: GPUs), unrolled:
    the same integer operations; the steady benchmark's budget walks cost 40 % less. The twin
    is kept honest by ``tests/engine/arbitration/test_greedy_budget.py``, which holds each
    to ``custom_limits.greedy`` (a leaf of one resource walks here, of two in ``_walk``)."""
    cores, custom = left
    for i, key in enumerate(entries, at):
        app_id = key[_APP_AT]
        if i >= past and seen.get(app_id) == left:
            return
        floor, extra, (size, amount) = key[-3], key[-2], key[-1]
        if size:
            room = (cores if cores > 0 else 0) // size
            if room < extra:
                extra = room
        if amount:
            room = (custom if custom > 0 else 0) // amount
            if room < extra:
                extra = room
        if extra < 0:
            extra = 0
        seen[app_id] = left
        if extra:
            cores -= extra * size
            custom -= extra * amount
            left = (cores, custom)
        yield app_id, floor + extra
