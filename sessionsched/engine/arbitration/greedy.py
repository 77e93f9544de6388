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
(``tests/engine/arbitration/test_greedy.py`` checks it over random histories); the walk's cost
follows the claims whose result changed, not the leaf's size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sortedcontainers import SortedList

from ...model import Policy
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
        # Order keys (each ends with the app id) with the claim's (floor, want - floor,
        # executor cores) after the id: the id is unique, so they never decide the order, and
        # the walk reads no claim. key[-4] is the app id.
        self._order = SortedList(self._entry(c) for c in claims.values())
        self._left_before: dict[str, int] = {}  # app id -> ``left`` at its turn, last walk
        self._start: int | None = None  # ``left`` at the head, last walk (None: never walked)
        self._lo: tuple | None = None  # first changed place since the last walk
        self._hi: tuple | None = None  # last changed place since the last walk
        result.clear()

    def _entry(self, c: Claim) -> tuple:
        return (*self._key(c), c.floor, c.want - c.floor, c.executor.cores)

    def changed(self, old: Claim | None, new: Claim | None) -> None:
        """A claim of the leaf was set (``new``), replaced or removed (``old``)."""
        for c in (old, new):
            if c is None:
                continue
            key = self._entry(c)
            if c is old:
                self._order.remove(key)
                self._left_before.pop(c.app_id, None)
            else:
                self._order.add(key)
            if self._lo is None or key < self._lo:
                self._lo = key
            if self._hi is None or key > self._hi:
                self._hi = key

    def forget_walk(self) -> None:
        """The results were set without a walk (``arbitration``: every claim got its want):
        the next walk starts at the head and compares nothing with this one."""
        self._left_before = {}
        self._start = None
        self._lo = self._hi = None

    def walk(self, cores: int, floor_cores: int) -> list[Change]:
        """Results for ``cores`` (``floor_cores``: the sum of the claims' floors in cores)."""
        start = cores - floor_cores
        order, claims, result, seen = self._order, self._claims, self.result, self._left_before
        app_at = -4
        if start != self._start:
            at, left = 0, start  # everything may move: walk from the head
        elif self._lo is None:
            return []
        else:
            at = order.bisect_left(self._lo)
            left = start
            if at > 0:
                prev = order[at - 1]
                left = seen[prev[app_at]] - (result[prev[app_at]] - prev[-3]) * prev[-1]
        past = 0 if self._hi is None else order.bisect_right(self._hi)  # after every change
        self._start, self._lo, self._hi = start, None, None
        out: list[Change] = []
        for i, key in enumerate(order.islice(at), at):
            app_id = key[app_at]
            # Past every change, a claim that sees what it saw last time gets what it got, and
            # so does every claim after it.
            if i >= past and seen.get(app_id) == left:
                break
            floor, span, size = key[-3], key[-2], key[-1]
            extra = max(left, 0) // size
            if extra > span:
                extra = span
            n = floor + extra
            seen[app_id] = left
            left -= extra * size
            was = result.get(app_id)
            if was != n:
                result[app_id] = n
                out.append((claims[app_id], was, n))
        return out

    def unsatisfied(self, ranked: Iterator[Claim]) -> Iterator[Claim]:
        """The claims below their want, in the order of ``ranked``."""
        result = self.result
        return (c for c in ranked if result[c.app_id] < c.want)
