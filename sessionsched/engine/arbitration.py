"""Executor targets: how many executors each admitted application deserves this cycle.

Input is a tuple of ``Claim`` (one per admitted app) and the capacity left for executors
(cluster capacity minus in-cluster drivers). Output: app id -> target, in whole executors of the
app's own size. Pure and deterministic: same claims, same targets.

Phases:
  1. Floors. Every app first gets its floor (``minExecutors``, or its reservation under a
     ``reserve`` queue until met), in rank order, as far as capacity goes. Admission made sure
     the floors fit, so this only falls short if the cluster shrank.
  2. Shares. What is left is divided down the queue tree in cores: at each parent the children
     get a weighted max-min fair share, clamped between ``min_share`` (a guarantee, as far as
     the queue wants it) and the least of its wanted cores and ``max_cores`` (water-filling: what
     one queue does not want goes to its siblings). A leaf divides its cores among its apps by
     its ``policy`` (``LEAF_POLICIES``).
  3. Remainders. Cores left over by rounding to whole executors go one executor at a time to
     apps that still want more, by rank, within their queues' ``max_cores``.
Memory is checked at every grant of an executor: an executor that does not fit in the memory
left is not given, whatever its cores.

Rank (used by floors, fifo/priority leaves and remainders):
  1. priority, highest first; 2. submission sequence, oldest first; 3. app id.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model import Policy, Queue, Resources


@dataclass(frozen=True)
class Claim:
    """One admitted app's claim on executors this cycle.

    ``want`` is what it could use now: its demand (executors Spark needs for pending and running
    tasks), raised to its floor and cut to its cap (maxExecutors, spark.ego.slots.max).
    """

    app_id: str
    queue: str
    priority: int
    seq: int
    executor: Resources
    floor: int
    want: int


def by_priority_then_seq(c: Claim) -> tuple[int, int, str]:
    return (-c.priority, c.seq, c.app_id)


def by_seq(c: Claim) -> tuple[int, str]:
    return (c.seq, c.app_id)


def water_fill(total: float, weights: Sequence[float], lo: Sequence[float], hi: Sequence[float]) -> list[float]:
    """Weighted max-min fair division of ``total``: x_i = clamp(w_i * level, lo_i, hi_i), sum = total.

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
        return water_fill(total, weights, [0.0] * n, lo)
    if sum(hi) <= total:
        return list(hi)
    # Each i adds slope w_i to S(level) between lo_i/w_i and hi_i/w_i.
    points = []
    for i in range(n):
        points.append((lo[i] / weights[i], 1, i))
        points.append((hi[i] / weights[i], -1, i))
    points.sort(key=lambda p: (p[0], -p[1], p[2]))
    level, filled, slope = 0.0, float(sum(lo)), 0.0
    for at, kind, i in points:
        if at > level and slope > 0:
            reach = filled + slope * (at - level)
            if reach >= total:
                level += (total - filled) / slope
                break
            filled = reach
        level = max(level, at)
        slope += weights[i] if kind == 1 else -weights[i]
    else:  # pragma: no cover - excluded by the sum(hi) check above
        return list(hi)
    return [min(max(weights[i] * level, lo[i]), hi[i]) for i in range(n)]


class _Pool:
    """Capacity left to hand out, in cores and memory."""

    def __init__(self, capacity: Resources):
        self.cores = capacity.cores
        self.mem_mib = capacity.mem_mib

    def take(self, size: Resources, n: int) -> int:
        """Take up to ``n`` executors of ``size``; return how many were taken."""
        if n <= 0:
            return 0
        fit = n
        if size.cores > 0:
            fit = min(fit, self.cores // size.cores)
        if size.mem_mib > 0:
            fit = min(fit, self.mem_mib // size.mem_mib)
        fit = max(fit, 0)
        self.cores -= size.cores * fit
        self.mem_mib -= size.mem_mib * fit
        return fit


# --- leaf policies: (cores for the queue, claims with their extra wants) -> extra executors ---

LeafPolicy = Callable[[float, Sequence[Claim], dict[str, int]], dict[str, int]]


def _greedy(order: Callable[[Claim], tuple]) -> LeafPolicy:
    def policy(cores: float, claims: Sequence[Claim], extra: dict[str, int]) -> dict[str, int]:
        left = math.floor(cores + 1e-9)
        out = {}
        for c in sorted(claims, key=order):
            n = min(extra[c.app_id], left // max(c.executor.cores, 1))
            out[c.app_id] = n
            left -= n * c.executor.cores
        return out

    return policy


def fairshare(cores: float, claims: Sequence[Claim], extra: dict[str, int]) -> dict[str, int]:
    """Weighted max-min fair share with weight = priority; an app that wants less than its share
    returns the rest to the others. Shares are rounded down to whole executors; the cores left go
    one executor at a time by priority, then age."""
    ranked = sorted(claims, key=by_priority_then_seq)
    size = [max(c.executor.cores, 1) for c in ranked]
    shares = water_fill(
        cores,
        [float(c.priority) for c in ranked],
        [0.0] * len(ranked),
        [float(extra[c.app_id] * s) for c, s in zip(ranked, size)],
    )
    out = {c.app_id: int(sh // s + 1e-9) for c, sh, s in zip(ranked, shares, size)}
    left = math.floor(cores + 1e-9) - sum(out[c.app_id] * s for c, s in zip(ranked, size))
    for c, s in zip(ranked, size):
        if left < s:
            continue
        if out[c.app_id] < extra[c.app_id]:
            out[c.app_id] += 1
            left -= s
    return out


LEAF_POLICIES: dict[Policy, LeafPolicy] = {
    Policy.FIFO: _greedy(by_seq),
    Policy.PRIORITY: _greedy(by_priority_then_seq),
    Policy.FAIRSHARE: fairshare,
}


def compute_targets(root: Queue, capacity: Resources, claims: Sequence[Claim]) -> dict[str, int]:
    """Targets for every claim. Never more than capacity, ``want`` or the queues' ``max_cores``."""
    pool = _Pool(capacity)
    ranked = sorted(claims, key=by_priority_then_seq)
    target = {c.app_id: pool.take(c.executor, min(c.floor, c.want)) for c in ranked}

    by_leaf: dict[str, list[Claim]] = defaultdict(list)
    for c in claims:
        by_leaf[c.queue].append(c)
    extra = {c.app_id: c.want - target[c.app_id] for c in claims}

    # Cores each queue holds after floors, and cores it still wants, bottom-up.
    held: dict[str, float] = {}
    wants: dict[str, float] = {}

    def sums(q: Queue) -> None:
        if q.is_leaf:
            cs = by_leaf.get(q.name, ())
            held[q.name] = float(sum(target[c.app_id] * c.executor.cores for c in cs))
            wants[q.name] = float(sum(extra[c.app_id] * c.executor.cores for c in cs))
        else:
            for ch in q.children:
                sums(ch)
            held[q.name] = sum(held[ch.name] for ch in q.children)
            wants[q.name] = sum(wants[ch.name] for ch in q.children)
        if q.max_cores is not None:
            wants[q.name] = min(wants[q.name], max(q.max_cores - held[q.name], 0.0))

    sums(root)

    def divide(q: Queue, cores: float) -> None:
        if q.is_leaf:
            cs = by_leaf.get(q.name)
            if cs:
                for app_id, n in LEAF_POLICIES[q.policy](cores, cs, extra).items():
                    target[app_id] += n
            return
        kids = [ch for ch in q.children if wants[ch.name] > 0]
        shares = water_fill(
            cores,
            [ch.weight for ch in kids],
            [min(max(ch.min_share_cores - held[ch.name], 0.0), wants[ch.name]) for ch in kids],
            [wants[ch.name] for ch in kids],
        )
        for ch, share in zip(kids, shares):
            divide(ch, share)

    share_pool = _Pool(Resources(pool.cores, pool.mem_mib))
    before = dict(target)
    divide(root, min(float(pool.cores), wants[root.name]))
    # Memory is not divided down the tree: take what the shares gave, in rank order, as memory allows.
    for c in ranked:
        grown = target[c.app_id] - before[c.app_id]
        target[c.app_id] = before[c.app_id] + share_pool.take(c.executor, grown)

    _hand_out_remainders(root, ranked, target, share_pool, by_leaf)
    return target


def _hand_out_remainders(
    root: Queue,
    ranked: Sequence[Claim],
    target: dict[str, int],
    pool: _Pool,
    by_leaf: dict[str, list[Claim]],
) -> None:
    ancestry: dict[str, list[Queue]] = {}

    def walk(q: Queue, path: list[Queue]) -> None:
        path = path + [q]
        if q.is_leaf:
            ancestry[q.name] = [n for n in path if n.max_cores is not None]
        for ch in q.children:
            walk(ch, path)

    walk(root, [])
    used: dict[str, int] = defaultdict(int)
    for leaf, cs in by_leaf.items():
        cores = sum(target[c.app_id] * c.executor.cores for c in cs)
        for node in ancestry.get(leaf, ()):
            used[node.name] += cores
    progress = True
    while progress:
        progress = False
        for c in ranked:
            if target[c.app_id] >= c.want:
                continue
            capped = ancestry.get(c.queue, ())
            if any(used[n.name] + c.executor.cores > n.max_cores for n in capped):
                continue
            if pool.take(c.executor, 1):
                target[c.app_id] += 1
                for n in capped:
                    used[n.name] += c.executor.cores
                progress = True
