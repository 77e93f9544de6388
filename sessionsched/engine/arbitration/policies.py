"""Leaf queue policies and the weighted water-filling they and the queue tree share.

A leaf policy divides a leaf queue's whole cores among its apps' claims. Contract of every
policy (``LeafPolicy``): given ``cores`` (an int, at least the sum of the claims' floors in
cores) and the claims in rank order (``by_priority_then_seq``: the caller keeps them sorted,
so a leaf whose share moved is recomputed without sorting again), it returns app id ->
executors ``n`` with ``floor <= n <= want`` and ``sum(n * executor cores) <= cores``.
Floors (``minExecutors``, reservations) always come first.

  * ``fifo``: floors, then each app up to its want in submission order (oldest first, then
    app id). An app whose executor does not fit in what is left is passed over for a smaller
    one behind it.
  * ``priority``: the same in rank order (1. priority, highest first; 2. submission sequence;
    3. app id): the higher-priority app gets all it wants, the others the rest.
  * ``fairshare``: weighted max-min fair share in cores with weight = priority, each app
    between its floor and its want (an app that wants less than its share returns the rest to
    the others: IBM Conductor's fairshare). Shares are rounded down to whole executors; the
    cores left go one executor at a time in rank order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...model import Policy, Resources
from ..rank import Rank, rank


@dataclass(frozen=True, slots=True)
class Claim:
    """One admitted app's claim on executors this cycle.

    ``want`` is what it could use now: its demand (executors Spark needs for pending and running
    tasks), raised to its floor and cut to its cap (maxExecutors, spark.ego.slots.max).
    ``floor`` (<= ``want``) is given before any share: ``minExecutors``, or the reservation of a
    ``reserve`` queue until it is met. ``guaranteed`` floors (apps of ``reserve`` queues, whose
    floors admission made room for) are given before the others when floors do not all fit.
    """

    app_id: str
    queue: str
    priority: int
    seq: int
    executor: Resources
    floor: int
    want: int
    guaranteed: bool = False
    user: str = ""  # who submitted it: a fairshare leaf that decays shares by user (``users``)


def by_priority_then_seq(c: Claim) -> Rank:
    return rank(c.priority, c.seq, c.app_id)


def by_seq(c: Claim) -> tuple[int, str]:
    return (c.seq, c.app_id)


def water_fill(
    total: float, weights: Sequence[float], lo: Sequence[float], hi: Sequence[float],
    past: Sequence[float] | None = None,
) -> list[float]:
    """Weighted max-min fair division: x_i = clamp(w_i * level - p_i, lo_i, hi_i),
    sum x_i = total, with ``past`` p_i >= 0 (decayed past usage, ``decay``; none: 0), so that
    (x_i + p_i) / w_i is levelled.

    If even the guarantees ``lo`` do not fit, they are shared the same way with ``lo`` as caps.
    If ``total`` exceeds what everyone wants, everyone gets ``hi``. ``hi`` may be ``math.inf``.
    Exact (sweep over the breakpoints of the piecewise-linear sum), O(n log n).
    """
    n = len(weights)
    if n == 0:
        return []
    if total <= 0:
        return [0.0] * n
    if sum(lo) > total:
        return water_fill(total, weights, [0.0] * n, lo, past)
    if sum(hi) <= total:
        return list(hi)
    level, filled, slope = 0.0, float(sum(lo)), 0.0
    for at, kind, i in breakpoints(weights, lo, hi, past):
        if at > level and slope > 0:
            reach = filled + slope * (at - level)
            if reach >= total:
                level += (total - filled) / slope
                break
            filled = reach
        if at > level:
            level = at
        slope -= kind * weights[i]
    else:  # pragma: no cover - excluded by the sum(hi) check above
        return list(hi)
    if past is None:
        return [min(max(weights[i] * level, lo[i]), hi[i]) for i in range(n)]
    return [min(max(weights[i] * level - past[i], lo[i]), hi[i]) for i in range(n)]


def breakpoints(weights: Sequence[float], lo: Sequence[float], hi: Sequence[float],
                past: Sequence[float] | None = None) -> list[tuple[float, int, int]]:
    """``water_fill``'s breakpoints, sorted: each i adds slope w_i to S(level) between
    (lo_i + p_i)/w_i and (hi_i + p_i)/w_i. Points (level, -1: starts / 1: ends, i) sort as
    tuples, starts before ends at one level (no key function: the sort is the costly part of a
    fairshare leaf)."""
    n = len(weights)
    if past is None:  # the common case, kept free of the additions (fairshare leaves)
        points = [(lo[i] / weights[i], -1, i) for i in range(n)]
        points += [(hi[i] / weights[i], 1, i) for i in range(n)]
    else:
        points = [((lo[i] + past[i]) / weights[i], -1, i) for i in range(n)]
        points += [((hi[i] + past[i]) / weights[i], 1, i) for i in range(n)]
    points.sort()
    return points


LeafPolicy = Callable[[int, Sequence[Claim]], dict[str, int]]


def _greedy(order: Callable[[Claim], tuple] | None) -> LeafPolicy:
    """Floors, then each claim up to its want in ``order`` (None: rank order, as given)."""

    def policy(cores: int, claims: Sequence[Claim]) -> dict[str, int]:
        ordered = claims if order is None else sorted(claims, key=order)
        left = cores - sum(c.floor * c.executor.cores for c in ordered)
        out = {}
        for c in ordered:
            extra = min(c.want - c.floor, max(left, 0) // c.executor.cores)
            out[c.app_id] = c.floor + extra
            left -= extra * c.executor.cores
        return out

    return policy


def fairshare(cores: int, ranked: Sequence[Claim]) -> dict[str, int]:
    weights, lo, hi, rows = fair_inputs(ranked)
    return whole_executors(cores, rows, water_fill(float(cores), weights, lo, hi))


Row = tuple[str, int, int, int]  # app id, executor cores, floor, want


def fair_inputs(ranked: Sequence[Claim]) -> tuple[list[float], list[float], list[float],
                                                  list[Row]]:
    """A fairshare leaf's water-fill in cores (weights: the priorities; each claim between its
    floor and its want times its executor's cores) and its rows for ``whole_executors``."""
    sizes = [c.executor.cores for c in ranked]  # each at least 1 (``validate``)
    weights = [float(c.priority) for c in ranked]
    lo = [float(c.floor * s) for c, s in zip(ranked, sizes, strict=True)]
    hi = [float(c.want * s) for c, s in zip(ranked, sizes, strict=True)]
    rows = [(c.app_id, s, c.floor, c.want) for c, s in zip(ranked, sizes, strict=True)]
    return weights, lo, hi, rows


def whole_executors(cores: int, rows: Sequence[Row], shares: Sequence[float]) -> dict[str, int]:
    """Each claim's share of cores (``rows``: app id, executor cores, floor, want; in rank
    order) rounded down to whole executors between its floor and want, then the cores left
    given one executor at a time in rank order."""
    out = {}
    left = cores
    for (app_id, s, floor, want), share in zip(rows, shares, strict=True):
        n = int(share / s + 1e-9)
        if n < floor:
            n = floor
        elif n > want:
            n = want
        out[app_id] = n
        left -= n * s
    if left < 0:  # float error may round a share up past ``cores``: undo it
        for app_id, s, floor, _want in reversed(rows):
            while left < 0 and out[app_id] > floor:
                out[app_id] -= 1
                left += s
    for app_id, s, _floor, want in rows:
        if left <= 0:
            break  # no executor has under 1 core: nothing more fits
        if left < s:
            continue
        if out[app_id] < want:
            out[app_id] += 1
            left -= s
    return out


fifo = _greedy(by_seq)
priority = _greedy(None)

LEAF_POLICIES: dict[Policy, LeafPolicy] = {
    Policy.FIFO: fifo,
    Policy.PRIORITY: priority,
    Policy.FAIRSHARE: fairshare,
}
