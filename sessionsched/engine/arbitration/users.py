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

from ...model import Policy
from .policies import LEAF_POLICIES, Claim, fairshare, water_fill

_EPS = 1e-9


def divide_leaf(policy: Policy, cores: int, ranked: Sequence[Claim],
                users: Mapping[str, float] | None) -> dict[str, int]:
    """The leaf's result. ``users``: None when the leaf does not share by user, else user ->
    decayed past usage in cores (a user not named has none)."""
    if users is None or policy is not Policy.FAIRSHARE:
        return LEAF_POLICIES[policy](cores, ranked)
    return by_user(cores, ranked, users)


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
