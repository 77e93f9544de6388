"""A leaf's cores among its claims: by its policy, or - a ``fairshare`` leaf that decays
(``decay``) - by user first.

Per user (Spark's job scheduling guide: fair scheduler pools give users equal shares
"regardless of how many concurrent jobs they have"): the claims are grouped by
``Claim.user``; the users share the leaf's cores by ``water_fill`` with equal weights and their
decayed past usage, each between the cores of its apps' floors and of their wants; each user's
whole cores go to its apps by ``fairshare`` (weight = priority); cores left over by rounding go
one executor at a time to the claims below their want in rank order (passes repeated while any
is given). The ``LeafPolicy`` contract holds: ``floor <= n <= want``, at most ``cores`` in all.

Why only with decay on: sharing by user changes who gets what in every fairshare leaf where
users have different numbers of apps; a queue that does not ask for fairness over time keeps
the per-app shares it had (and its tests), and one that does gets fairness between its users
with the same setting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...model import Policy, Resources
from . import drf
from .custom_limits import greedy
from .greedy import ORDERS
from .policies import LEAF_POLICIES, Claim, fairshare, water_fill

_EPS = 1e-9


Dominant = tuple[Resources, Mapping[str, int]]  # (capacity, the leaf's custom budget)


def divide_leaf(policy: Policy, cores: int, ranked: Sequence[Claim],
                users: Mapping[str, float] | None,
                dominant: Dominant | None = None) -> dict[str, int]:
    """The leaf's result. ``users``: None when the leaf does not share by user, else user ->
    decayed past usage in cores (a user not named has none). ``dominant``: on a cluster with
    custom resources, what a leaf whose apps ask for one divides: by dominant share in a
    ``fairshare`` leaf, within its custom budget in the others (``drf``)."""
    if policy is not Policy.FAIRSHARE:
        if dominant is not None and drf.wants_custom(ranked):
            return greedy(cores, ranked, dominant[1],
                          ORDERS[policy] if policy is Policy.FIFO else None)
        return LEAF_POLICIES[policy](cores, ranked)
    if dominant is not None and drf.wants_custom(ranked):
        if users is None:
            return drf.leaf(cores, ranked, dominant[0], dominant[1])
        return by_user_dominant(cores, ranked, users, *dominant)
    if users is None:
        return fairshare(cores, ranked)
    return by_user(cores, ranked, users)


def by_user_dominant(cores: int, ranked: Sequence[Claim], past: Mapping[str, float],
                     capacity: Resources, budget: Mapping[str, int]) -> dict[str, int]:
    """``by_user`` by dominant share: the users levelled by (dominant share + decayed past
    usage at the user's ratio) with equal weights, each user's cores and custom budget then
    divided among its apps by dominant share; what rounding leaves goes in rank order."""
    groups: dict[str, list[Claim]] = {}
    for c in ranked:
        groups.setdefault(c.user, []).append(c)
    names = list(groups)
    wants = []
    for u in names:
        total = Resources()
        for c in groups[u]:
            total = total + c.executor.times(c.want)
        wants.append(total)
    lo = [float(sum(c.floor * c.executor.cores for c in groups[u])) for u in names]
    hi = [float(w.cores) for w in wants]
    ratios = [drf.ratio(w.cores, w.mem_mib, w.custom, capacity) for w in wants]
    uses = [drf.per_core(w.custom, w.cores) for w in wants]
    if sum(lo) > cores:
        shares = water_fill(float(cores), [1.0] * len(names), [0.0] * len(names), lo)
    else:
        shares = drf.fill(float(cores), [1.0 / r for r in ratios], lo, hi,
                          [past.get(u, 0.0) for u in names], uses,
                          {k: float(v) for k, v in budget.items()})
    out: dict[str, int] = {}
    for u, low, high, share, use in zip(names, lo, hi, shares, uses, strict=True):
        given = min(max(int(share + _EPS), int(low)), int(high))
        mine = drf.whole({k: min(share * use.get(k, 0.0), v) for k, v in budget.items()})
        out.update(drf.leaf(given, groups[u], capacity, mine))
    return _rest(cores, ranked, out, budget)


def _rest(cores: int, ranked: Sequence[Claim], out: dict[str, int],
          budget: Mapping[str, int]) -> dict[str, int]:
    """The cores and budget left after the users' divisions, one executor at a time in rank
    order to the claims below their want."""
    left = cores - sum(out[c.app_id] * c.executor.cores for c in ranked)
    left_custom = dict(budget)
    for c in ranked:
        for k, v in c.executor.custom:
            if k in left_custom:
                left_custom[k] -= out[c.app_id] * v
    progress = True
    while progress:
        progress = False
        for c in ranked:
            s = c.executor
            if out[c.app_id] >= c.want or s.cores > left:
                continue
            if any(k in left_custom and left_custom[k] < v for k, v in s.custom):
                continue
            out[c.app_id] += 1
            left -= s.cores
            for k, v in s.custom:
                if k in left_custom:
                    left_custom[k] -= v
            progress = True
    return out


def by_user(cores: int, ranked: Sequence[Claim], past: Mapping[str, float]) -> dict[str, int]:
    groups: dict[str, list[Claim]] = {}  # by the rank of each user's first claim
    for c in ranked:
        groups.setdefault(c.user, []).append(c)
    names = list(groups)
    lo = [float(sum(c.floor * c.executor.cores for c in groups[u])) for u in names]
    hi = [float(sum(c.want * c.executor.cores for c in groups[u])) for u in names]
    shares = water_fill(float(cores), [1.0] * len(names), lo, hi,
                        [past.get(u, 0.0) for u in names])
    out: dict[str, int] = {}
    for u, low, high, share in zip(names, lo, hi, shares, strict=True):
        given = min(max(int(share + _EPS), int(low)), int(high))
        out.update(fairshare(given, groups[u]))
    left = cores - sum(out[c.app_id] * c.executor.cores for c in ranked)
    for c in reversed(ranked):  # float error may round a share up past ``cores``: undo it
        while left < 0 and out[c.app_id] > c.floor:
            out[c.app_id] -= 1
            left += c.executor.cores
    progress = True
    while progress:
        progress = False
        for c in ranked:
            if out[c.app_id] < c.want and c.executor.cores <= left:
                out[c.app_id] += 1
                left -= c.executor.cores
                progress = True
    return out
