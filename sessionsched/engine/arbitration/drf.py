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

At each parent the children share the parent's cores and its custom budget this way; a
child's custom budget is what its cores carry (its cores x its custom per core), cut to its
``max_resources``. A ``fairshare`` leaf divides its cores and budget among its apps the same
way (``leaf``), rounds to whole executors and gives the cores left one executor at a time in
rank order, within the budget. Guarantees (``min_share``, ``min_resources``) and caps
(``max_cores``, ``max_resources``) are a queue's bounds in cores: a custom amount counts as
the cores that carry it at the queue's wanted custom per core.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...model import Resources
from ...model.custom import Custom, combine
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


def ratio(cores: float, mem_mib: float, custom: Custom, capacity: Resources) -> float:
    """A bundle's dominant share times the cluster's cores, over its cores (>= 1)."""
    if cores <= 0 or capacity.cores <= 0:
        return 1.0
    share = cores / capacity.cores
    if capacity.mem_mib > 0 and mem_mib / capacity.mem_mib > share:
        share = mem_mib / capacity.mem_mib
    if custom:
        totals = dict(capacity.custom)
        for name, amount in custom:
            total = totals.get(name, 0)
            if total > 0 and amount / total > share:
                share = amount / total
    return share * capacity.cores / cores


def per_core(custom: Custom, cores: float) -> Uses:
    return {name: amount / cores for name, amount in custom} if cores > 0 else {}


def level(total: float, weights: Sequence[float], lo: Sequence[float],
          hi: Sequence[float], past: Sequence[float]) -> float:
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
         past: Sequence[float], uses: Sequence[Uses], budgets: Mapping[str, float]
         ) -> list[float]:
    """Progressive filling (module doc): each party's cores x_i = clamp(w_i L - p_i, lo_i,
    hi_i), L raised until a resource - the ``cores`` or a custom one in ``budgets``, of which
    party i uses ``uses[i][name]`` per core - runs out; the parties using it stop there, the
    others go on. The ``lo`` always fit the cores (the caller's guarantee)."""
    n = len(weights)
    out = [0.0] * n
    left: dict[str, float] = {"": cores, **budgets}  # "": the cores
    active = list(range(n))
    while active:
        best, short = math.inf, ""
        for name, budget in left.items():
            if not name:  # the cores: 1 per core (x * 1.0 is x, so not multiplied)
                if len(active) == n:
                    at = level(max(budget, 0.0), weights, lo, hi, past)
                else:
                    at = level(max(budget, 0.0), [weights[i] for i in active],
                               [lo[i] for i in active], [hi[i] for i in active],
                               [past[i] for i in active])
            else:
                pairs = [(i, uses[i][name]) for i in active if uses[i].get(name)]
                if not pairs:
                    continue
                at = level(max(budget, 0.0), [weights[i] * u for i, u in pairs],
                           [lo[i] * u for i, u in pairs], [hi[i] * u for i, u in pairs],
                           [past[i] * u for i, u in pairs])
            if at < best:
                best, short = at, name
        if best == math.inf:
            for i in active:
                out[i] = hi[i]
            break
        stop = [i for i in active if not short or uses[i].get(short)]
        for i in stop:
            x = min(max(weights[i] * best - past[i], lo[i]), hi[i])
            out[i] = x
            left[""] -= x
            for name, u in uses[i].items():
                if name in left:
                    left[name] -= x * u
        active = [i for i in active if short and not uses[i].get(short)]
    return out


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


def _leaf_inputs(ranked: Sequence[Claim], capacity: Resources,
                 weight_of: Sequence[float] | None = None) -> LeafInputs:
    # One pass over the claims (a leaf's are prepared again whenever one changes), each
    # shape's figures worked out once: a leaf's executors come in a few shapes, keyed by their
    # fields (a tuple hashes and compares in C, the dataclass's ``__hash__`` in Python).
    shapes: dict[tuple, tuple[float, Uses, int, float]] = {}
    weights: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    uses: list[Uses] = []  # read only: shared by a shape's claims
    step: list[float] = []
    rows: list[Row] = []
    add_w, add_lo, add_hi, add_use, add_step, add_row = (
        weights.append, lo.append, hi.append, uses.append, step.append, rows.append)
    for i, c in enumerate(ranked):
        s = c.executor
        key = (s.cores, s.mem_mib, s.custom)
        got = shapes.get(key)
        if got is None:
            r = ratio(s.cores, s.mem_mib, s.custom, capacity)
            got = shapes[key] = (r, per_core(s.custom, s.cores), s.cores, s.cores * r)
        r, use, cores, dom_cores = got
        w = weight_of[i] if weight_of is not None else float(c.priority)
        add_w(w / r)
        add_lo(float(c.floor * cores))
        add_hi(float(c.want * cores))
        add_use(use)
        # an executor more, in dominant share over weight: who is furthest behind gets the rest
        add_step(dom_cores / w)
        add_row((c.app_id, cores, c.floor, c.want, s.custom))
    return weights, lo, hi, uses, step, rows


def _divide_leaf(cores: int, ranked: Sequence[Claim], inputs: LeafInputs,
                 budget: Mapping[str, int], past: Sequence[float] | None) -> dict[str, int]:
    weights, lo, hi, uses, step, rows = inputs
    budgets = {k: float(v) for k, v in budget.items()}
    if sum(lo) > cores:  # floors first, as every policy (the caller's contract keeps them in)
        shares = water_fill(float(cores), [float(c.priority) for c in ranked], lo, hi)
    else:
        shares = fill(float(cores), weights, lo, hi, past or [0.0] * len(ranked), uses,
                      budgets)
    return _whole_executors(cores, rows, shares, dict(budget), step)


class DomLeaf:
    """``leaf`` for one set of claims and totals, for any cores and budget, with the sweep of
    its cores kept (``fairleaf.FairLeaf`` on the weights priority / ratio): where no custom
    budget binds at the cores' level - progressive filling's first stop is the cores'; what
    a leaf whose GPUs are not short sees every cycle - only the rounding is done again.
    Elsewhere ``leaf``'s filling, on the inputs prepared here. The same float operations as
    ``fill``: the same results."""

    __slots__ = ("ranked", "totals", "_inputs", "_fair", "_uses")

    def __init__(self, ranked: Sequence[Claim], totals: Resources) -> None:
        self.ranked, self.totals = ranked, totals
        self._inputs = inputs = _leaf_inputs(ranked, totals)
        self._fair = FairLeaf(ranked, inputs[:3])
        # the claims that use a custom resource, with what they use per core
        self._uses = [(i, tuple(use.items())) for i, use in enumerate(inputs[3]) if use]

    def divide(self, cores: int, budget: Mapping[str, int]) -> dict[str, int]:
        shares = self._fair.shares(cores)
        if shares is not None:
            used: dict[str, float] = {}
            for i, use in self._uses:  # in rank order, as summed over every claim
                x = shares[i]
                for k, u in use:
                    used[k] = used.get(k, 0.0) + x * u
            if all(v < budget.get(k, 0) - _WHOLE for k, v in used.items() if k in budget):
                return _whole_executors(cores, self._inputs[5], shares, dict(budget),
                                        self._inputs[4])
        return _divide_leaf(cores, self.ranked, self._inputs, budget, None)


def root_budget(capacity: Resources, root_caps: Custom) -> dict[str, float]:
    """The custom resources the root's children share: the cluster's, cut to the root's
    ``max_resources``."""
    caps = dict(root_caps)
    return {name: float(min(v, caps.get(name, v))) for name, v in capacity.custom}


# A queue's wanted executors summed, the cores of those that ask for a custom resource, and
# the custom resources of its floors.
Want = tuple[Resources, int, Custom]


def children(cores: float, weights: Sequence[float], low: Sequence[float],
             guarantee: Sequence[float], high: Sequence[float], past: Sequence[float] | None,
             wants: Sequence[Want], mins: Sequence[Custom], maxes: Sequence[Custom],
             capacity: Resources, budget: Mapping[str, float],
             ) -> tuple[list[float], list[dict[str, float]]] | None:
    """A parent's cores and custom ``budget`` among its children (module doc): their cores
    and custom budgets, or None where no child wants a custom resource (the caller divides
    the cores as it always has). ``mins``/``maxes``: each child's ``min_resources`` and
    ``max_resources``.

    For its cores a child is taken as one bundle: its wanted executors, with each custom
    resource cut to what the parent has of it, and its cores cut to those it can use with
    that much (the executors that ask for none, and of those that do the part the cut
    leaves). Each custom resource of the parent is then shared by the children that want it
    by weight, each between its ``min_resources`` and its want cut to its
    ``max_resources``: the child's custom budget. (A bundle's custom resource per core is a
    mean over its apps, too thin where a child's GPU app sits beside CPU apps to give it
    GPUs by its cores.)"""
    if not any(w[0].custom for w in wants):
        return None
    n = len(weights)
    hi = list(high)
    guar = list(guarantee)
    uses: list[Uses] = []
    ratios: list[float] = []
    capped: list[dict[str, float]] = []  # each child's wants, cut to the parent's budget
    for i, (w, custom_cores, _floors) in enumerate(wants):
        want = {k: min(float(v), budget.get(k, 0.0)) for k, v in w.custom}
        part = min((want[k] / v for k, v in w.custom if v), default=1.0)
        useful = w.cores - custom_cores + custom_cores * part
        hi[i] = max(min(hi[i], useful), low[i])
        use = {k: v / useful for k, v in want.items() if v} if useful > 0 else {}
        for name, cap in maxes[i]:  # cut to the cores that carry the cap
            u = use.get(name)
            if u:
                hi[i] = max(min(hi[i], cap / u), low[i])
        for name, least in mins[i]:  # raised to the cores that carry the guarantee
            u = use.get(name)
            if u:
                guar[i] = max(guar[i], min(least / u, hi[i]))
        guar[i] = min(max(guar[i], low[i]), hi[i])
        uses.append(use)
        capped.append(want)
        scale = useful / w.cores if w.cores else 1.0
        ratios.append(ratio(useful, w.mem_mib * scale, tuple(
            (k, v) for k, v in want.items()), capacity))
    p = list(past) if past is not None else [0.0] * n
    if sum(guar) > cores:
        shares = water_fill(cores, weights, list(low), guar, past)
    else:
        shares = fill(cores, [w / r for w, r in zip(weights, ratios, strict=True)],
                      guar, hi, p, uses, budget)
    budgets: list[dict[str, float]] = [{} for _ in range(n)]
    for name, total in budget.items():
        top = [min(c.get(name, 0.0), _amount_or(m, name, math.inf))
               for c, m in zip(capped, maxes, strict=True)]
        floors = [min(float(_amount_or(w[2], name, 0)), t) for w, t in zip(wants, top,
                                                                           strict=True)]
        least = [max(min(float(_amount_or(m, name, 0)), t), f)
                 for m, t, f in zip(mins, top, floors, strict=True)]
        if sum(least) > total:  # floors kept, the guarantees share the rest (as the cores)
            split = water_fill(total, weights, floors, least)
        else:
            split = water_fill(total, weights, least, top)
        for b, x in zip(budgets, split, strict=True):
            b[name] = x
    return shares, budgets


def _amount_or(custom: Custom, name: str, default: float) -> float:
    """``dict(custom).get(name, default)``, without the dict (a pair or none, usually)."""
    for k, v in custom:
        if k == name:
            return v
    return default


class Dom:
    """One cycle's DRF context down the tree: the capacity divided (its custom resources the
    root's budget), the totals the dominant shares are of (the cluster's: they move only
    with the workers, so a leaf whose claims and budget stay keeps its result), each
    queue's wants (``Want``), and the custom budget each queue was given."""

    __slots__ = ("capacity", "totals", "wants", "budgets")

    def __init__(self, capacity: Resources, wants: Mapping[str, Want],
                 totals: Resources | None = None) -> None:
        self.capacity = capacity
        self.totals = capacity if totals is None else totals
        self.wants = wants
        self.budgets: dict[str, dict[str, float]] = {}

    def split(self, tree, name: str, kids: Sequence[str], cores: float,
              weights: Sequence[float], low: Sequence[float], guarantee: Sequence[float],
              high: Sequence[float], past: Sequence[float] | None,
              ) -> tuple[list[float], list[dict[str, float]]] | None:
        """``children`` for the children ``kids`` of queue ``name`` (None: divide the cores
        as always)."""
        budget = self._budget(tree, name)
        nodes = [tree.node[k] for k in kids]
        out = children(cores, weights, low, guarantee, high, past,
                       [self.wants.get(k, NO_WANT) for k in kids],
                       [q.min_resources for q in nodes], [q.max_resources for q in nodes],
                       self.totals, budget)
        if out is not None:
            for k, b in zip(kids, out[1], strict=True):
                self.budgets[k] = b
        return out

    def split_on(self, tree, name: str, kids: Sequence[str]) -> tuple:
        """What ``split`` reads here beside the tree and its arguments: the totals, the
        parent's budget and the children's wants (a split worked out from the same is the
        same: ``incremental._divide`` keeps it)."""
        return (self.totals, self._budget(tree, name),
                tuple([self.wants.get(k, NO_WANT) for k in kids]))

    def took(self, kids: Sequence[str], budgets: Sequence[dict[str, float]]) -> None:
        """The children's budgets of a split kept from an earlier cycle (``split_on``)."""
        for k, b in zip(kids, budgets, strict=True):
            self.budgets[k] = b

    def _budget(self, tree, name: str) -> dict[str, float]:
        if name == tree.root.name and name not in self.budgets:
            self.budgets[name] = root_budget(self.capacity, tree.node[name].max_resources)
        return self.budgets.get(name, {})

    def leaf_budget(self, leaf: str) -> dict[str, int]:
        return whole(self.budgets.get(leaf, _NO_BUDGET))

    def leaf_view(self, leaf: str, want: Custom) -> tuple[dict[str, int], bool, Custom]:
        """A leaf's custom budget in whole units; whether it binds (the leaf wants more of a
        resource than that); and the budget as far as it binds, each amount cut to the
        leaf's ``want`` (a leaf that wants fewer GPUs than it may have gets the same result
        for any budget above its want)."""
        budget = self.leaf_budget(leaf)
        bound = False
        for k, v in want:
            if v > budget.get(k, 0):
                bound = True
                break
        if len(want) == 1 and len(budget) == 1:  # one custom resource: the usual case
            (k, v), = budget.items()
            seen: Custom = ((k, min(v, want[0][1] if want[0][0] == k else 0)),)
        else:
            wanted = dict(want)
            seen = tuple(sorted((k, min(v, wanted.get(k, 0))) for k, v in budget.items()))
        return budget, bound, seen


NO_WANT: Want = (Resources(), 0, ())
_NO_BUDGET: dict[str, float] = {}


def queue_wants(tree, leaf_wants: Mapping[str, Want]) -> dict[str, Want]:
    """Every queue's wants summed from its leaves' (``tree``: a ``QueueTree``)."""
    out: dict[str, Want] = {}
    for name in tree.postorder:
        kids = tree.children[name]
        out[name] = summed([out[k] for k in kids]) if kids else leaf_wants.get(name, NO_WANT)
    return out


def summed(wants: Sequence[Want]) -> Want:
    """A parent's wants: its children's summed."""
    total, custom_cores, floors = Resources(), 0, ()
    for w in wants:
        total = total + w[0]
        custom_cores += w[1]
        floors = combine(floors, w[2], 1)
    return (total, custom_cores, floors)
