"""A ``fairshare`` leaf's division by dominant share (``drf.leaf``) rounded to whole
executors: the shares rounded down, then the rest given one executor at a time to those
furthest behind by dominant share over weight."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from .policies import Claim

_EPS = 1e-9


def whole_executors(cores: int, ranked: Sequence[Claim], shares: Sequence[float],
                     left: dict[str, int], step: Sequence[float]) -> dict[str, int]:
    """Shares (cores) rounded down to whole executors between floor and want; overshoot from
    float error undone from the last in rank order; then the cores and budget left given one
    executor at a time, to the claims in the order of their dominant share / weight with one
    executor more (``step`` per executor; ties in rank order): the rounding's leftovers go to
    those furthest behind, as DRF's own filling would give them."""
    out: dict[str, int] = {}
    left_cores = cores
    for c, share in zip(ranked, shares, strict=True):
        s = c.executor
        k = int(share / s.cores + _EPS)  # min(max(k, floor), want)
        if k < c.floor:
            k = c.floor
        if k > c.want:
            k = c.want
        out[c.app_id] = k
        left_cores -= k * s.cores
        if s.custom:
            for name, amount in s.custom:
                if name in left:
                    left[name] -= k * amount
    # (nothing short, as is usual: no claim would give any back)
    for c in reversed(ranked) if left_cores < 0 or any(v < 0 for v in left.values()) else ():
        s = c.executor
        while out[c.app_id] > c.floor and (
                left_cores < 0 or any(left.get(k, 0) < 0 for k, _ in s.custom)):
            out[c.app_id] -= 1
            left_cores += s.cores
            for name, amount in s.custom:
                if name in left:
                    left[name] += amount
    if left_cores <= 0:
        return out
    # Only the claims that could take one more executor now are ordered: the cores and
    # budget left only shrink, so the others would be passed over all along.
    room = left_cores
    could = [i for i, c in enumerate(ranked) if out[c.app_id] < c.want
             and c.executor.cores <= room
             and not (c.executor.custom
                      and any(k in left and left[k] < v for k, v in c.executor.custom))]
    # in that order (a heap: the cores left usually run out after a few)
    behind = [((out[ranked[i].app_id] + 1) * step[i], i) for i in could]
    heapq.heapify(behind)
    while behind:
        c = ranked[heapq.heappop(behind)[1]]
        s = c.executor
        if left_cores <= 0:
            break
        if out[c.app_id] >= c.want or s.cores > left_cores:
            continue
        if any(name in left and left[name] < amount for name, amount in s.custom):
            continue
        out[c.app_id] += 1
        left_cores -= s.cores
        for name, amount in s.custom:
            if name in left:
                left[name] -= amount
    return out
