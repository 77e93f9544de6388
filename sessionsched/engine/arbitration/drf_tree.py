"""Weighted dominant-resource fair share above the leaves (``drf``, whose doc gives the rule):
each parent's cores and custom budget divided among its children, the DRF context a cycle
carries down the tree (``Dom``), and each queue's wants summed from its leaves' (``Want``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...model import Resources
from ...model.custom import Custom, amount, custom_of
from .drf import Uses, fill, ratio_of, whole
from .policies import water_fill


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
    for w in wants:
        if w[0].custom:
            break
    else:
        return None
    n = len(weights)
    hi = list(high)
    guar = list(guarantee)
    uses: list[Uses] = []
    dom_weights: list[float] = []  # weight / ratio (``drf.ratio``)
    capped: list[dict[str, float]] = []  # each child's wants, cut to the parent's budget
    total_cores, total_mem = capacity.cores, capacity.mem_mib
    totals = dict(capacity.custom)
    for i, (w, custom_cores, _floors) in enumerate(wants):
        want = {}
        part = 1.0  # the least part of a custom want the parent's budget covers
        for k, v in w.custom:  # (no amount is 0: ``model.custom``)
            have = budget.get(k, 0.0)
            x = want[k] = float(v) if v <= have else have
            if x / v < part:
                part = x / v
        useful = w.cores - custom_cores + custom_cores * part
        h = hi[i] if hi[i] <= useful else useful
        h = hi[i] = h if h >= low[i] else low[i]
        use = {k: v / useful for k, v in want.items() if v} if useful > 0 else {}
        if maxes[i] or mins[i]:
            for name, cap in maxes[i]:  # cut to the cores that carry the cap
                u = use.get(name)
                if u:
                    h = hi[i] = max(min(h, cap / u), low[i])
            for name, least in mins[i]:  # raised to the cores that carry the guarantee
                u = use.get(name)
                if u:
                    guar[i] = max(guar[i], min(least / u, h))
        g = guar[i]
        if g < low[i]:  # min(max(g, low), hi)
            g = low[i]
        guar[i] = g if g <= h else h
        uses.append(use)
        capped.append(want)
        scale = useful / w.cores if w.cores else 1.0  # its memory in the part it can use
        dom_weights.append(weights[i] / ratio_of(useful, w.mem_mib * scale, want.items(),
                                                 total_cores, total_mem, totals))
    if sum(guar) > cores:
        shares = water_fill(cores, weights, list(low), guar, past)
    else:
        shares = fill(cores, dom_weights, guar, hi, past, uses, budget)
    budgets: list[dict[str, float]] = [{} for _ in range(n)]
    limited = any(mins) or any(maxes)
    for name, total in budget.items():
        top = [c.get(name, 0.0) for c in capped]
        if limited:
            top = [min(t, amount(m, name, math.inf)) for t, m in zip(top, maxes, strict=True)]
        floors = [min(float(amount(w[2], name)), t) for w, t in zip(wants, top, strict=True)]
        if limited:
            least = [max(min(float(amount(m, name)), t), f)
                     for m, t, f in zip(mins, top, floors, strict=True)]
        else:  # max(min(0.0, t), f): the floor (t and f are at least 0)
            least = floors
        if sum(least) > total:  # floors kept, the guarantees share the rest (as the cores)
            split = water_fill(total, weights, floors, least)
        else:
            split = water_fill(total, weights, least, top)
        for b, x in zip(budgets, split, strict=True):
            b[name] = x
    return shares, budgets


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

    def asks(self, name: str) -> bool:
        """Whether a queue's wants ask a custom resource (a parent's: some child's do)."""
        return bool(self.wants.get(name, NO_WANT)[0].custom)

    def split_on(self, tree, name: str, kids: Sequence[str]) -> tuple:
        """What ``split`` reads here beside the tree and its arguments: the totals, the
        parent's budget and the children's wants (a split worked out from the same is the
        same: ``parents.divide`` keeps it)."""
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
    """A parent's wants: its children's summed (in whole numbers, each part at once)."""
    cores = mem_mib = custom_cores = 0
    custom: dict[str, int] = {}
    floors: dict[str, int] = {}
    for total, cc, floor in wants:
        cores += total.cores
        mem_mib += total.mem_mib
        custom_cores += cc
        for k, v in total.custom:
            custom[k] = custom.get(k, 0) + v
        for k, v in floor:
            floors[k] = floors.get(k, 0) + v
    return (Resources(cores, mem_mib, custom_of(custom)), custom_cores, custom_of(floors))
