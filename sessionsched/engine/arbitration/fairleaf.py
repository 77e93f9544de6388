"""A ``fairshare`` leaf's division, prepared once for its claims and done again for any cores.

``policies.fairshare`` water-fills the leaf's cores among its claims (weight = priority, each
between its floor and its want in cores: ``policies.water_fill``), rounds each share down to
whole executors and gives the cores left one executor at a time in rank order. The sorted
breakpoints of the water-fill and the sweep over them - how much is filled at each breakpoint,
at which level, with which slope - depend on the claims only, not on the cores divided: only
where the sweep stops does. ``FairLeaf`` sweeps once for a set of claims and keeps the sweep;
for a number of cores it then finds the stop by bisection and only rounds. That is what a leaf
whose cores move while its claims stay needs: phase 2's shares follow the capacity, which
moves with the executors held every cycle while a gang reserves (``gang.book``).

The same float operations in the same order as ``water_fill`` and ``fairshare``: the same
results (``tests/engine/arbitration/test_fairleaf.py``). The cases ``water_fill`` treats apart
(no cores, floors above the cores, wants within them) go to ``fairshare`` itself.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from .policies import Claim, breakpoints, fair_inputs, fairshare, whole_executors


class FairLeaf:
    """``fairshare(cores, ranked)`` for any ``cores``, the sweep done once (``ranked``: the
    leaf's claims in rank order, as ``fairshare`` takes them; not changed while this is used)."""

    __slots__ = ("_ranked", "_rows", "_bounds", "_lo_sum", "_hi_sum", "_reach", "_at")

    def __init__(self, ranked: Sequence[Claim],
                 inputs: tuple[list[float], list[float], list[float]] | None = None) -> None:
        """``inputs``: the water-fill's weights, floors and wants in cores, where the caller
        has them (``drf.DomLeaf``: weights priority / ratio); its leaf is then divided by
        ``shares`` only."""
        self._ranked = ranked
        if inputs is None:
            weights, lo, hi, self._rows = fair_inputs(ranked)
        else:
            (weights, lo, hi), self._rows = inputs, []
        self._bounds = list(zip(weights, lo, hi, strict=True))
        self._lo_sum = sum(lo)
        self._hi_sum = sum(hi)
        # ``water_fill``'s sweep, run to the end: at each breakpoint where it would ask
        # whether ``total`` is reached, what it has filled there (``reach``, growing) and the
        # level, filled and slope it would finish from.
        reach_at: list[float] = []
        at_state: list[tuple[float, float, float]] = []
        level, filled, slope = 0.0, float(self._lo_sum), 0.0
        for at, kind, i in breakpoints(weights, lo, hi):
            if at > level and slope > 0:
                reach = filled + slope * (at - level)
                reach_at.append(reach)
                at_state.append((level, filled, slope))
                filled = reach
            if at > level:
                level = at
            slope -= kind * weights[i]
        self._reach = reach_at
        self._at = at_state

    def shares(self, cores: int) -> list[float] | None:
        """The water-fill's shares of ``cores`` (``drf.level``'s sweep, kept): each claim's
        floor where the floors take every core (progressive filling stops everyone at level
        0 there: the floors exactly, not a level times a weight), or None where it is not a
        sweep's stop: no claims or cores, the floors above the cores, every want within
        them."""
        total = float(cores)
        if self._bounds and total > 0 and self._lo_sum == total:
            return [low for _, low, _ in self._bounds]
        if not self._bounds or total <= 0 or self._lo_sum >= total or self._hi_sum <= total:
            return None
        j = bisect_left(self._reach, total)
        if j == len(self._reach):
            return None
        start, filled, slope = self._at[j]
        level = start + (total - filled) / slope
        return [min(max(w * level, low), high) for w, low, high in self._bounds]

    def divide(self, cores: int) -> dict[str, int]:
        """App id -> executors: what ``fairshare(cores, ranked)`` gives."""
        total = float(cores)
        rows = self._rows
        if not rows or total <= 0 or self._lo_sum > total or self._hi_sum <= total:
            return fairshare(cores, self._ranked)
        j = bisect_left(self._reach, total)  # the first breakpoint where it is reached
        if j == len(self._reach):  # not reached at all: as ``water_fill``'s for-else
            return fairshare(cores, self._ranked)
        start, filled, slope = self._at[j]
        level = start + (total - filled) / slope
        shares = []
        for w, low, high in self._bounds:
            x = w * level  # min(max(w * level, low), high), as ``water_fill``
            if low > x:
                x = low
            if high < x:
                x = high
            shares.append(x)
        return whole_executors(cores, self._rows, shares)
