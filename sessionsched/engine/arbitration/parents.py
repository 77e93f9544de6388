"""Phase 2 above the leaves (the package's header): each parent's cores split among its
children, for the incremental arbiter (``incremental.Arbiter``), which keeps each split
between computes (``Split``).

A cycle moves the wants of a few queues, and behind several clusters every cluster's engine
divides the whole tree: so a parent's split is taken again while the figures it was worked
out from stand, and a parent none of whose leaves moved since, given the cores it was
given last time, is not even compared.
"""

from __future__ import annotations

from ..tree import QueueTree
from . import drf_tree
from .decay import NO_PAST, Past
from .policies import water_fill

# A parent's split as ``divide`` keeps it: what it was worked out from, the children's shares
# of cores and (by dominant share) their custom budgets, None where divided by cores alone.
Split = tuple[tuple, list[float], list[dict[str, float]] | None]


def divide(
    tree: QueueTree, low: dict[str, int], high: dict[str, int], cores: float,
    past: Past = NO_PAST, dom: drf_tree.Dom | None = None,
    kept: dict[str, Split] | None = None, fresh: set[str] | None = None,
) -> dict[str, float]:
    """Phase 2 above the leaves: leaf name -> cores (fractional); siblings levelled by
    (cores + decayed past usage) / weight. ``kept``: each parent's split by the figures it
    was worked out from, taken again while they stand (a cycle moves the wants of a few
    queues; behind several clusters every cluster's engine divides the whole tree). By
    dominant share too: what a split reads of ``dom`` is part of what it was worked out
    from (``drf_tree.Dom.split_on``). ``fresh``: the queues whose sums were worked out again
    since the last call (None: all); a parent that is not, given the cores it was last time,
    splits them as it did, with nothing to compare (no past usage or dominant share read)."""
    queue_past = past.queues
    same = kept is not None and fresh is not None and dom is None and not queue_past
    out: dict[str, float] = {}
    stack = [(tree.root.name, float(cores))]
    while stack:
        name, c = stack.pop()
        children = tree.children[name]
        if not children:
            out[name] = c
            continue
        if same and name not in fresh:  # type: ignore[operator]
            was = kept.get(name)  # type: ignore[union-attr]
            if _stands(was, tree, c):
                stack.extend(zip(was[0][2], was[1], strict=True))  # type: ignore[index]
                continue
        kids = [k for k in children if high[k] > 0]
        if not kids:
            continue
        p = [queue_past.get(k, 0.0) for k in kids] if queue_past else None
        # By dominant share only where a child asks a custom resource: elsewhere the split
        # by dominant share is the cores' (``drf_tree.children``), so it is not even looked at.
        by_dom = dom if dom is not None and dom.asks(name) else None
        memo = None
        if kept is not None:  # weights and min shares: the tree's (``tree``)
            memo = (tree, c, tuple(kids), tuple([low[k] for k in kids]),
                    tuple([high[k] for k in kids]), None if p is None else tuple(p))
            if by_dom is not None:
                memo = (*memo, *by_dom.split_on(tree, name, kids))
            was = kept.get(name)
            if was is not None and was[0] == memo:
                if was[2] is not None:
                    by_dom.took(kids, was[2])  # type: ignore[union-attr]
                stack.extend(zip(kids, was[1], strict=True))
                continue
        weights = [tree.node[k].weight for k in kids]
        guarantee = [
            float(max(low[k], min(tree.node[k].min_share_cores, high[k]))) for k in kids
        ]
        split = None if by_dom is None else by_dom.split(
            tree, name, kids, c, weights, [float(low[k]) for k in kids], guarantee,
            [float(high[k]) for k in kids], p)
        if split is not None:  # a custom resource is wanted below: by dominant share
            shares = split[0]
        elif sum(guarantee) > c:
            shares = water_fill(c, weights, [float(low[k]) for k in kids], guarantee, p)
        else:
            shares = water_fill(c, weights, guarantee, [float(high[k]) for k in kids], p)
        if memo is not None:
            kept[name] = (memo, shares, None if split is None else split[1])
        stack.extend(zip(kids, shares, strict=True))
    return out


def _stands(was: Split | None, tree: QueueTree, c: float) -> bool:
    """A kept split worked out on ``tree`` for ``c`` cores from the tree's figures alone: its
    memo (``divide``: tree, cores, children, their floors and wants, past usage, then what
    it read of the dominant shares) holds no past usage and nothing of ``Dom``."""
    if was is None:
        return False
    memo = was[0]
    return memo[0] is tree and memo[1] == c and len(memo) == 6 and memo[5] is None
