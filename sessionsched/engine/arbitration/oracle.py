"""The arbiter's phases from scratch: plain functions over the claims, one per phase of the
package's header, numbered the same. Nothing is kept between calls and nothing is shared with
``incremental`` but the leaf policies and the water-fill (``policies``, which the incremental
leaves are held to in their own tests): this is the spec as code, slow and simple, that the
self-check (``selfcheck``) and the tests hold the engine's ``Arbiter`` to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ...model import Queue, Resources
from ...model.custom import combine, scaled
from ..tree import QueueTree
from . import drf, drf_tree
from .custom_limits import CustomCaps
from .decay import NO_PAST, Past
from .policies import Claim, by_priority_then_seq, water_fill
from .users import divide_leaf

_EPS = 1e-9  # a leaf's fractional cores are rounded down, less float error


def targets(root: Queue, capacity: Resources, claims: Sequence[Claim],
            past: Past = NO_PAST, totals: Resources | None = None) -> dict[str, int]:
    """Targets for every claim, from scratch. Never more than capacity, ``want`` or the queues'
    ``max_cores`` (floors are cut to fit them). ``past``: decayed past usage (``decay``);
    ``totals``: what dominant shares are shares of (``drf``; None: ``capacity``)."""
    tree = QueueTree.of(root)
    unknown = sorted({c.queue for c in claims if c.queue not in tree.path})
    if unknown:
        raise ValueError(f"claims in queues that are not leaves: {', '.join(unknown)}")
    ranked = sorted(claims, key=by_priority_then_seq)
    floors, cut = phase1_floors(tree, capacity, ranked)
    shares = phase2_shares(tree, capacity, ranked, floors, past, totals)
    given = phase3_memory(capacity, ranked, floors, shares, cut)
    return phase4_remainders(tree, capacity, ranked, given)


def capped(tree: QueueTree, leaf: str) -> list[Queue]:
    """The queues on a leaf's path (root to leaf) that have ``max_cores``."""
    return [q for q in tree.path[leaf] if q.max_cores is not None]


def cores_under(tree: QueueTree, ranked: Sequence[Claim], n: dict[str, int]) -> dict[str, int]:
    """Executor cores of ``n`` (app -> executors) under each queue."""
    out = {name: 0 for name in tree.node}
    for c in ranked:
        for q in tree.path[c.queue]:
            out[q.name] += n[c.app_id] * c.executor.cores
    return out


# 1. Floors


def phase1_floors(
    tree: QueueTree, capacity: Resources, ranked: Sequence[Claim]
) -> tuple[dict[str, int], bool]:
    """Every floor, if they all fit capacity and every ``max_cores``; else the floors given
    in the order 1. guaranteed first, 2. rank, as capacity and ``max_cores`` allow.
    Returns (app -> floor given, whether any was cut)."""
    floors = {c.app_id: c.floor for c in ranked}
    under = cores_under(tree, ranked, floors)
    fits = (sum(c.floor * c.executor.cores for c in ranked) <= capacity.cores
            and sum(c.floor * c.executor.mem_mib for c in ranked) <= capacity.mem_mib
            and all(q.max_cores is None or under[q.name] <= q.max_cores
                    for q in tree.node.values()))
    if fits:
        return floors, False
    cores, mem = capacity.cores, capacity.mem_mib
    used = {name: 0 for name in tree.node}
    out = {}
    for c in sorted(ranked, key=lambda c: not c.guaranteed):  # stable: rank within each
        size = c.executor
        n = min(c.floor, max(cores, 0) // size.cores)
        if size.mem_mib:
            n = min(n, max(mem, 0) // size.mem_mib)
        for q in capped(tree, c.queue):
            n = min(n, max(q.max_cores - used[q.name], 0) // size.cores)
        n = max(n, 0)
        out[c.app_id] = n
        cores -= n * size.cores
        mem -= n * size.mem_mib
        for q in capped(tree, c.queue):
            used[q.name] += n * size.cores
    return out, True


# 2. Shares


def cores_memory_backs(capacity: Resources, ranked: Sequence[Claim]) -> float:
    """Phase 3's first half: the cores to divide are all of them, or, when the wanted
    executors need more memory than there is, the cores memory backs at their mean MiB per
    core."""
    want_cores = sum(c.want * c.executor.cores for c in ranked)
    want_mem = sum(c.want * c.executor.mem_mib for c in ranked)
    if want_mem <= capacity.mem_mib or want_cores <= 0:
        return capacity.cores
    return min(capacity.cores, capacity.mem_mib * want_cores / want_mem)


def floors_and_wants(
    tree: QueueTree, ranked: Sequence[Claim], floors: dict[str, int]
) -> tuple[dict[str, int], dict[str, int]]:
    """Per queue: its floor cores, and what it wants - its children's (a leaf: its apps')
    wants, cut to its ``max_cores``, and never below its floors."""
    low = cores_under(tree, ranked, floors)
    wanted: dict[str, list[Claim]] = {}
    for c in ranked:
        wanted.setdefault(c.queue, []).append(c)
    high: dict[str, int] = {}

    def want(name: str) -> int:
        kids = tree.children[name]
        if kids:
            w = sum(want(k) for k in kids)
        else:
            w = sum(c.want * c.executor.cores for c in wanted.get(name, ()))
        q = tree.node[name]
        if q.max_cores is not None:
            w = min(w, q.max_cores)
        high[name] = max(w, low[name])
        return high[name]

    want(tree.root.name)
    return low, high


def divide(tree: QueueTree, name: str, cores: float, low: dict[str, int],
           high: dict[str, int], out: dict[str, float], past: Past = NO_PAST,
           dom: drf_tree.Dom | None = None) -> None:
    """Water-fill ``cores`` among the children of ``name`` that want anything, each between
    its guarantee (floors, or ``min_share`` as far as it wants that much) and its want, so
    that (cores + decayed past usage) / weight is levelled; if the guarantees do not fit,
    floors kept and the guarantees shared. Leaf -> cores in ``out``."""
    if not tree.children[name]:
        out[name] = cores
        return
    kids = [k for k in tree.children[name] if high[k] > 0]
    if not kids:
        return
    weights = [tree.node[k].weight for k in kids]
    guarantee = [float(max(low[k], min(tree.node[k].min_share_cores, high[k]))) for k in kids]
    p = [past.queues.get(k, 0.0) for k in kids]
    split = None if dom is None else dom.split(
        tree, name, kids, cores, weights, [float(low[k]) for k in kids], guarantee,
        [float(high[k]) for k in kids], p)
    if split is not None:  # a custom resource is wanted below: by dominant share (``drf``)
        shares = split[0]
    elif sum(guarantee) > cores:
        shares = water_fill(cores, weights, [float(low[k]) for k in kids], guarantee, p)
    else:
        shares = water_fill(cores, weights, guarantee, [float(high[k]) for k in kids], p)
    for k, share in zip(kids, shares, strict=True):
        divide(tree, k, share, low, high, out, past, dom)


def phase2_shares(tree: QueueTree, capacity: Resources, ranked: Sequence[Claim],
                  floors: dict[str, int], past: Past = NO_PAST,
                  totals: Resources | None = None) -> dict[str, int]:
    """The cores divided down the tree; each leaf's whole cores divided among its claims (with
    the floors given) by its policy (by user first in a fairshare leaf that decays: ``users``).
    Returns app -> executors."""
    low, high = floors_and_wants(tree, ranked, floors)
    root = tree.root.name
    total = max(min(cores_memory_backs(capacity, ranked), high[root]), low[root], 0)
    cores_of: dict[str, float] = {}
    dom = None
    if drf.applies(capacity):
        leaf_wants: dict[str, drf_tree.Want] = {}
        for c in ranked:
            summed, custom_cores, floor_custom = leaf_wants.get(c.queue, (Resources(), 0, ()))
            wanted = c.executor.times(c.want)
            leaf_wants[c.queue] = (
                summed + wanted, custom_cores + (wanted.cores if c.executor.custom else 0),
                combine(floor_custom, scaled(c.executor.custom, floors[c.app_id]), 1))
        dom = drf_tree.Dom(capacity, drf_tree.queue_wants(tree, leaf_wants), totals)
    divide(tree, root, float(total), low, high, cores_of, past, dom)
    by_leaf: dict[str, list[Claim]] = {}
    for c in ranked:
        by_leaf.setdefault(c.queue, []).append(replace(c, floor=floors[c.app_id]))
    out: dict[str, int] = {}
    for leaf, leaf_claims in by_leaf.items():
        cores = max(math.floor(cores_of.get(leaf, 0.0) + _EPS), 0)
        out.update(divide_leaf(tree.node[leaf].policy, cores, leaf_claims,
                               past.users.get(leaf),
                               None if dom is None else (dom.totals, dom.leaf_budget(leaf))))
    return out


# 3. Memory


def phase3_memory(capacity: Resources, ranked: Sequence[Claim], floors: dict[str, int],
                  shares: dict[str, int], cut: bool) -> dict[str, int]:
    """The shares as they are if no floor was cut and their executors fit in memory; else the
    floors, and the growth above them in rank order as the cores and memory left allow."""
    if not cut and sum(shares[c.app_id] * c.executor.mem_mib for c in ranked) <= capacity.mem_mib:
        return dict(shares)
    cores = capacity.cores - sum(floors[c.app_id] * c.executor.cores for c in ranked)
    mem = capacity.mem_mib - sum(floors[c.app_id] * c.executor.mem_mib for c in ranked)
    out = {}
    for c in ranked:
        size = c.executor
        n = shares[c.app_id] - floors[c.app_id]
        if n > 0:
            n = min(n, max(cores, 0) // size.cores)
            if size.mem_mib:
                n = min(n, max(mem, 0) // size.mem_mib)
            n = max(n, 0)
            cores -= n * size.cores
            mem -= n * size.mem_mib
        out[c.app_id] = floors[c.app_id] + max(n, 0)
    return out


# 4. Remainders


def phase4_remainders(tree: QueueTree, capacity: Resources, ranked: Sequence[Claim],
                      given: dict[str, int]) -> dict[str, int]:
    """One executor at a time, in rank order, to the apps below their want whose executor
    fits in the cores and memory left and under every ``max_cores`` on their path; passes
    repeated while any is given."""
    out = dict(given)
    left_cores = capacity.cores - sum(out[c.app_id] * c.executor.cores for c in ranked)
    left_mem = capacity.mem_mib - sum(out[c.app_id] * c.executor.mem_mib for c in ranked)
    used = cores_under(tree, ranked, out)
    left_custom, caps = None, None
    if drf.applies(capacity):  # custom resources counted, as in the leaves (``drf``)
        left_custom = dict(capacity.custom)
        by_leaf: dict[str, tuple] = {}
        for c in ranked:
            for k, v in c.executor.custom:
                if k in left_custom:
                    left_custom[k] -= out[c.app_id] * v
            if c.executor.custom and out[c.app_id]:
                by_leaf[c.queue] = combine(by_leaf.get(c.queue, ()),
                                           scaled(c.executor.custom, out[c.app_id]), 1)
        caps = CustomCaps.of(tree, by_leaf)
    progress = True
    while progress and left_cores > 0:
        progress = False
        for c in ranked:
            size = c.executor
            if out[c.app_id] >= c.want or size.cores > left_cores or size.mem_mib > left_mem:
                continue
            path = capped(tree, c.queue)
            if any(used[q.name] + size.cores > q.max_cores for q in path):
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
            out[c.app_id] += 1
            left_cores -= size.cores
            left_mem -= size.mem_mib
            for q in path:
                used[q.name] += size.cores
            progress = True
            if left_cores <= 0:
                break
    return out
