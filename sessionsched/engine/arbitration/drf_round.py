"""A ``fairshare`` leaf's division by dominant share (``drf.leaf``) rounded to whole
executors: the shares rounded down, then the rest given one executor at a time to those
furthest behind by dominant share over weight."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from ...model.custom import Custom

_EPS = 1e-9


# A claim as the rounding reads it: app id, executor cores, floor, want, executor custom
# resources (``drf._leaf_inputs`` lays them out once for a leaf's claims).
Row = tuple[str, int, int, int, Custom]


def whole_executors(cores: int, rows: Sequence[Row], shares: Sequence[float],
                     left: dict[str, int], step: Sequence[float]) -> dict[str, int]:
    """Shares (cores) rounded down to whole executors between floor and want; overshoot from
    float error undone from the last in rank order; then the cores and budget left given one
    executor at a time, to the claims in the order of their dominant share / weight with one
    executor more (``step`` per executor; ties in rank order): the rounding's leftovers go to
    those furthest behind, as DRF's own filling would give them. ``rows``: the claims in rank
    order."""
    out: dict[str, int] = {}
    left_cores = cores
    for (app_id, size, floor, want, custom), share in zip(rows, shares, strict=True):
        k = int(share / size + _EPS)  # min(max(k, floor), want)
        if k < floor:
            k = floor
        if k > want:
            k = want
        out[app_id] = k
        left_cores -= k * size
        if custom:
            for name, amount in custom:
                if name in left:
                    left[name] -= k * amount
    # (nothing short, as is usual: no claim would give any back)
    for app_id, size, floor, _want, custom in (
            reversed(rows) if left_cores < 0 or any(v < 0 for v in left.values()) else ()):
        while out[app_id] > floor and (
                left_cores < 0 or any(left.get(k, 0) < 0 for k, _ in custom)):
            out[app_id] -= 1
            left_cores += size
            for name, amount in custom:
                if name in left:
                    left[name] += amount
    if left_cores <= 0:
        return out
    # Only the claims that could take one more executor now are ordered: the cores and
    # budget left only shrink, so the others would be passed over all along.
    behind = []
    for i, (app_id, size, _floor, want, custom) in enumerate(rows):
        k = out[app_id]
        if k < want and size <= left_cores and not (
                custom and any(name in left and left[name] < v for name, v in custom)):
            behind.append(((k + 1) * step[i], i))
    # in that order (a heap: the cores left usually run out after a few)
    heapq.heapify(behind)
    while behind:
        app_id, size, _floor, want, custom = rows[heapq.heappop(behind)[1]]
        if left_cores <= 0:
            break
        if out[app_id] >= want or size > left_cores:
            continue
        if any(name in left and left[name] < amount for name, amount in custom):
            continue
        out[app_id] += 1
        left_cores -= size
        for name, amount in custom:
            if name in left:
                left[name] -= amount
    return out
