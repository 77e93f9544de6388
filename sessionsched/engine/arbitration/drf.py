"""Weighted dominant-resource fair share (DRF): ``fairshare`` on a cluster with custom
resources (GPUs, FPGAs: ``model.custom``).

The dominant share of what an app (or a queue, or a user) holds is its largest share of any
one resource the cluster has: cores, memory and each custom resource, each divided by the
cluster's total. DRF levels dominant share / weight, as YuniKorn and Volcano do: a GPU app
whose executors take 1 of 4 GPUs and 2 of 32 cores has a dominant share of 1/4 per executor, a
CPU app's 2-core executor 1/16, so at equal weights the CPU app gets four executors for each
of the GPU app's.

How it fits the arbiter, which divides cores: every share is still given in cores, each
party's measured by its *ratio* - its dominant share times the cluster's cores, over its
cores (1 for a party whose cores are its largest share; 8 for the GPU app above). Levelling
(cores x ratio + past) / weight is levelling dominant share / weight, so the water-fill runs on
weights ``weight / ratio``. Each custom resource is a second budget beside the cores: a party
uses ``custom per core`` of it for each core it gets (its executors' GPUs over their cores).
Progressive filling (``fill``) raises the common level until some resource runs out, freezes
every party using that resource where it stands, and goes on with the others until each has
its want or every resource is used: the max-min fair division of the dominant shares.

Where it applies: where a custom resource is asked on a cluster that has one (``applies``).
Elsewhere - a cluster without custom resources, a parent or leaf where no app asks for one -
the division is exactly what it was (cores levelled by weight): for apps of one shape that
is the same division, and the cycle pays nothing for it. Memory counts in the dominant share
where DRF applies; elsewhere the memory phase (``memory_and_remainders``) sees to it as it
always has.

At each parent the children share the parent's cores and its custom budget this way
(``drf_tree``); a child's custom budget is what its cores carry (its cores x its custom per
core), cut to its ``max_resources``. A ``fairshare`` leaf divides its cores and budget among
its apps the same way (``leaf``), rounds to whole executors and gives the cores left one
executor at a time in rank order, within the budget. Guarantees (``min_share``,
``min_resources``) and caps (``max_cores``, ``max_resources``) are a queue's bounds in cores:
a custom amount counts as the cores that carry it at the queue's wanted custom per core.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from ...model import Resources
from ...model.custom import Custom
from .drf_round import Row
from .drf_round import whole_executors as _whole_executors
from .fairleaf import FairLeaf
from .policies import Claim, breakpoints, water_fill

DOMINANT = True  # private switch: benchmarks/drf_mixed.py turns it off to compare cores-only
_WHOLE = 1e-6  # a budget in float rounded down to whole units, less float error

Uses = dict[str, float]  # custom resource -> amount per core given


def applies(capacity: Resources) -> bool:
    """DRF may apply: the cluster has a custom resource (and the switch is on)."""
    return DOMINANT and bool(capacity.custom)


def ratio(cores: float, mem_mib: float, custom: Iterable[tuple[str, float]],
          capacity: Resources) -> float:
    """A bundle's dominant share times the cluster's cores, over its cores (>= 1); ``custom``:
    its (name, amount) pairs."""
    return ratio_of(cores, mem_mib, custom, capacity.cores, capacity.mem_mib,
                    dict(capacity.custom))


def ratio_of(cores: float, mem_mib: float, custom: Iterable[tuple[str, float]],
             total_cores: float, total_mem: float, totals: Mapping[str, int]) -> float:
    """``ratio`` with the cluster's figures taken apart, for a caller that asks it of many
    bundles (``drf_tree.children``: read once, not per child)."""
    if cores <= 0 or total_cores <= 0:
        return 1.0
    share = cores / total_cores
    if total_mem > 0 and mem_mib / total_mem > share:
        share = mem_mib / total_mem
    for name, want in custom:
        total = totals.get(name, 0)
        if total > 0 and want / total > share:
            share = want / total
    return share * total_cores / cores


def per_core(custom: Custom, cores: float) -> Uses:
    return {name: v / cores for name, v in custom} if cores > 0 else {}


def level(total: float, weights: Sequence[float], lo: Sequence[float],
          hi: Sequence[float], past: Sequence[float] | None) -> float:
    """The level L where sum clamp(w_i L - p_i, lo_i, hi_i) reaches ``total`` (``water_fill``'s
    sweep): ``math.inf`` if everyone's ``hi`` fits, 0 if not even the ``lo`` do."""
    if sum(hi) <= total:
        return math.inf
    if sum(lo) >= total:
        return 0.0
    at_level, filled, slope = 0.0, float(sum(lo)), 0.0
    for at, kind, i in breakpoints(weights, lo, hi, past):
        if at > at_level and slope > 0:
            reach = filled + slope * (at - at_level)
            if reach >= total:
                return at_level + (total - filled) / slope
            filled = reach
        if at > at_level:
            at_level = at
        slope -= kind * weights[i]
    return math.inf  # pragma: no cover - excluded by the sum(hi) check above


def fill(cores: float, weights: Sequence[float], lo: Sequence[float], hi: Sequence[float],
         past: Sequence[float] | None, uses: Sequence[Uses], budgets: Mapping[str, float]
         ) -> list[float]:
    """Progressive filling (module doc): each party's cores x_i = clamp(w_i L - p_i, lo_i,
    hi_i), L raised until a resource - the ``cores`` or a custom one in ``budgets``, of which
    party i uses ``uses[i][name]`` per core - runs out; the parties using it stop there, the
    others go on. The ``lo`` always fit the cores (the caller's guarantee); ``past`` None: no
    one's past counts (the sweeps then skip the additions)."""
    n = len(weights)
    out = [0.0] * n
    left: dict[str, float] = {"": cores, **budgets}  # "": the cores
    active: Sequence[int] = range(n)
    while True:
        best, short = math.inf, ""
        for name, budget in left.items():
            if budget < 0.0:
                budget = 0.0
            if not name:  # the cores: 1 per core (x * 1.0 is x, so not multiplied)
                if len(active) == n:
                    at = level(budget, weights, lo, hi, past)
                else:
                    at = level(budget, [weights[i] for i in active], [lo[i] for i in active],
                               [hi[i] for i in active],
                               None if past is None else [past[i] for i in active])
            else:
                pairs = [(i, u) for i in active if (u := uses[i].get(name))]
                if not pairs:
                    continue
                at = level(budget, [weights[i] * u for i, u in pairs],
                           [lo[i] * u for i, u in pairs], [hi[i] * u for i, u in pairs],
                           None if past is None else [past[i] * u for i, u in pairs])
            if at < best:
                best, short = at, name
        if best == math.inf:
            for i in active:
                out[i] = hi[i]
            return out
        rest = []  # the parties that do not use the resource that ran out: they go on
        for i in active:
            use = uses[i]
            if short and not use.get(short):
                rest.append(i)
                continue
            x = weights[i] * best if past is None else weights[i] * best - past[i]
            if x < lo[i]:  # min(max(x, lo), hi)
                x = lo[i]
            if x > hi[i]:
                x = hi[i]
            out[i] = x
            left[""] -= x
            for name, u in use.items():
                if name in left:
                    left[name] -= x * u
        if not rest:
            return out
        active = rest


def whole(budget: Mapping[str, float]) -> dict[str, int]:
    return {name: max(int(v + _WHOLE), 0) for name, v in budget.items()}


def wants_custom(ranked: Sequence[Claim]) -> bool:
    """Some claim wants executors that ask for a custom resource."""
    return any(c.want and c.executor.custom for c in ranked)


def leaf(cores: int, ranked: Sequence[Claim], capacity: Resources,
         budget: Mapping[str, int], past: Sequence[float] | None = None,
         weight_of: Sequence[float] | None = None) -> dict[str, int]:
    """A ``fairshare`` leaf's division by dominant share: app id -> executors, each between
    its floor and its want, within ``cores`` and the leaf's custom ``budget``. ``ranked``: the
    claims in rank order; weights: the priorities (or ``weight_of``); ``past``: per claim, in
    cores (a user's decayed usage, when users share a leaf)."""
    return _divide_leaf(cores, ranked, _leaf_inputs(ranked, capacity, weight_of), budget, past)


# A leaf's division's inputs (``leaf``): per claim its weight (priority / ratio), floor and
# want in cores, custom resources per core, and ``step`` and its row (``_whole_executors``).
LeafInputs = tuple[list[float], list[float], list[float], list[Uses], list[float], list[Row]]
# A leaf's claims' figures for ``_leaf_inputs``, by app id: (the claim, its figures).
ClaimInputs = dict[str, tuple[Claim, tuple]]


def _leaf_inputs(ranked: Sequence[Claim], capacity: Resources,
                 weight_of: Sequence[float] | None = None,
                 kept: ClaimInputs | None = None) -> LeafInputs:
    # One pass over the claims (a leaf's are prepared again whenever one changes), each
    # shape's figures worked out once: a leaf's executors come in a few shapes, keyed by their
    # fields (a tuple hashes and compares in C, the dataclass's ``__hash__`` in Python).
    # ``kept``: each claim's figures as last worked out for these totals, taken again for a
    # claim that is the same object (a cycle sets a few of a leaf's claims).
    shapes: dict[tuple, tuple[float, Uses, int, float]] = {}
    per: list[tuple] = []
    add = per.append
    for i, c in enumerate(ranked):
        if kept is not None:
            got = kept.get(c.app_id)
            if got is not None and got[0] is c:
                add(got[1])
                continue
        s = c.executor
        key = (s.cores, s.mem_mib, s.custom)
        shape = shapes.get(key)
        if shape is None:
            r = ratio(s.cores, s.mem_mib, s.custom, capacity)
            shape = shapes[key] = (r, per_core(s.custom, s.cores), s.cores, s.cores * r)
        r, use, cores, dom_cores = shape
        w = weight_of[i] if weight_of is not None else float(c.priority)
        # an executor more, in dominant share over weight (``step``): who is furthest
        # behind gets the rest
        row = (w / r, float(c.floor * cores), float(c.want * cores), use, dom_cores / w,
               (c.app_id, cores, c.floor, c.want, s.custom))
        if kept is not None:
            kept[c.app_id] = (c, row)
        add(row)
    if not per:
        return [], [], [], [], [], []
    weights, lo, hi, uses, step, rows = (list(x) for x in zip(*per, strict=True))
    return weights, lo, hi, uses, step, rows


def _divide_leaf(cores: int, ranked: Sequence[Claim], inputs: LeafInputs,
                 budget: Mapping[str, int], past: Sequence[float] | None) -> dict[str, int]:
    weights, lo, hi, uses, step, rows = inputs
    budgets = {k: float(v) for k, v in budget.items()}
    if sum(lo) > cores:  # floors first, as every policy (the caller's contract keeps them in)
        shares = water_fill(float(cores), [float(c.priority) for c in ranked], lo, hi)
    else:
        shares = fill(float(cores), weights, lo, hi, past, uses, budgets)
    return _whole_executors(cores, rows, shares, dict(budget), step)


class DomLeaf:
    """``leaf`` for one set of claims and totals, for any cores and budget, with the sweep of
    its cores kept (``fairleaf.FairLeaf`` on the weights priority / ratio): where no custom
    budget binds at the cores' level - progressive filling's first stop is the cores'; what
    a leaf whose GPUs are not short sees every cycle - only the rounding is done again.
    Elsewhere ``leaf``'s filling, on the inputs prepared here. The same float operations as
    ``fill``: the same results."""

    __slots__ = ("ranked", "totals", "_inputs", "_fair", "_uses")

    def __init__(self, ranked: Sequence[Claim], totals: Resources,
                 kept: ClaimInputs | None = None) -> None:
        """``kept``: the claims' figures (``_leaf_inputs``) for these ``totals``, kept by the
        caller from one leaf's ``DomLeaf`` to the next."""
        self.ranked, self.totals = ranked, totals
        self._inputs = inputs = _leaf_inputs(ranked, totals, kept=kept)
        self._fair = FairLeaf(ranked, inputs[:3])
        # the claims that use a custom resource, with what they use per core
        self._uses = [(i, tuple(use.items())) for i, use in enumerate(inputs[3]) if use]

    def divide(self, cores: int, budget: Mapping[str, int]) -> dict[str, int]:
        inputs = self._inputs
        shares = self._fair.shares(cores)
        if shares is not None:
            used: dict[str, float] = {}
            for i, use in self._uses:  # in rank order, as summed over every claim
                x = shares[i]
                for k, u in use:
                    used[k] = used.get(k, 0.0) + x * u
            if all(v < budget.get(k, 0) - _WHOLE for k, v in used.items() if k in budget):
                return _whole_executors(cores, inputs[5], shares, dict(budget), inputs[4])
        return _divide_leaf(cores, self.ranked, inputs, budget, None)
