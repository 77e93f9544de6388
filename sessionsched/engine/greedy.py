"""The ``fifo`` and ``priority`` leaf policies, kept up to date instead of recomputed.

Both are one greedy walk (``policies._greedy``): ``left = cores - floors``, then for each claim
in the policy's order (``fifo``: submission sequence, then app id; ``priority``: rank)
``n = floor + min(want - floor, max(left, 0) // executor cores)`` and ``left -= (n - floor) x
executor cores``. A claim's result depends only on ``left`` before its turn and on itself, so
``GreedyLeaf`` keeps, per claim, the ``left`` it saw and its result. When claims change it
walks again from the first changed place only (the claims before it see what they saw), and
stops as soon as it has passed the last changed place and a claim sees the same ``left`` as
last time: from there on every claim would get what it has. When the leaf's cores or floors
change, the walk starts at the head and stops the same way: where the claims all get what
they want, ``left`` differs by the change all along, so the walk goes to where the cores run
out (the apps whose result moves) and a few claims beyond.

Results are identical to the from-scratch policy, whatever the history
(``tests/engine/test_greedy.py`` checks it over random histories); the walk's cost follows
the claims whose result changed, not the leaf's size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sortedcontainers import SortedList

from ..model import Policy
from .policies import Claim, by_priority_then_seq, by_seq

Change = tuple[Claim, int | None, int]  # claim, its result before (None: none yet), after

ORDERS: dict[Policy, Callable[[Claim], tuple]] = {
    Policy.FIFO: by_seq,
    Policy.PRIORITY: by_priority_then_seq,
}


class GreedyLeaf:
    """One leaf's greedy walk under ``policy`` (``fifo`` or ``priority``), kept between cycles.

    ``claims`` is the leaf's own dict of claims (app id -> claim), shared, not copied: call
    ``changed(old, new)`` whenever an entry is set or removed. ``walk`` writes the results
    into ``result`` and returns what changed.
    """

    def __init__(self, policy: Policy, claims: dict[str, Claim], result: dict[str, int]):
        self.policy = policy
        self._key = ORDERS[policy]
        self._claims = claims
        self.result = result  # app id -> executors (the leaf book's dict, updated in place)
        self._order = SortedList(self._key(c) for c in claims.values())
        self._left_before: dict[str, int] = {}  # app id -> ``left`` at its turn, last walk
        self._start: int | None = None  # ``left`` at the head, last walk (None: never walked)
        self._lo: tuple | None = None  # first changed place since the last walk
        self._hi: tuple | None = None  # last changed place since the last walk
        result.clear()

    def changed(self, old: Claim | None, new: Claim | None) -> None:
        """A claim of the leaf was set (``new``), replaced or removed (``old``)."""
        for c in (old, new):
            if c is None:
                continue
            key = self._key(c)
            if c is old:
                self._order.remove(key)
                self._left_before.pop(c.app_id, None)
            else:
                self._order.add(key)
            if self._lo is None or key < self._lo:
                self._lo = key
            if self._hi is None or key > self._hi:
                self._hi = key

    def walk(self, cores: int, floor_cores: int) -> list[Change]:
        """Results for ``cores`` (``floor_cores``: the sum of the claims' floors in cores)."""
        start = cores - floor_cores
        order, claims, result, seen = self._order, self._claims, self.result, self._left_before
        if start != self._start:
            at, left, hi = 0, start, self._hi  # everything may move: walk from the head
        elif self._lo is None:
            return []
        else:
            at = order.bisect_left(self._lo)
            left, hi = start, self._hi
            if at > 0:
                prev = claims[order[at - 1][-1]]
                n = result[prev.app_id]
                left = seen[prev.app_id] - (n - prev.floor) * prev.executor.cores
        self._start, self._lo, self._hi = start, None, None
        out: list[Change] = []
        for key in order.islice(at):
            app_id = key[-1]
            if hi is None or key > hi:
                # Past every change: a claim that sees what it saw last time gets what it got,
                # and so does every claim after it.
                if seen.get(app_id) == left:
                    break
            c = claims[app_id]
            size = c.executor.cores
            extra = min(c.want - c.floor, max(left, 0) // size)
            n = c.floor + extra
            seen[app_id] = left
            left -= extra * size
            was = result.get(app_id)
            if was != n:
                result[app_id] = n
                out.append((c, was, n))
        return out

    def unsatisfied(self, ranked: Iterator[Claim]) -> Iterator[Claim]:
        """The claims below their want, in the order of ``ranked``."""
        result = self.result
        return (c for c in ranked if result[c.app_id] < c.want)
