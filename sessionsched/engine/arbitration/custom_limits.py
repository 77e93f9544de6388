"""Custom resources' limits outside the dominant-share division (``drf``): a ``fifo`` or
``priority`` leaf's greedy walk within the leaf's custom budget, and the queues'
``max_resources`` kept by the remainders (phase 4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ...model.custom import Custom
from .policies import Claim


class CustomCaps:
    """The custom resources granted under each queue that has ``max_resources``, for the
    remainders (phase 4) to keep under them as they keep under ``max_cores``."""

    def __init__(self, tree, used_by_leaf: Mapping[str, Custom]) -> None:
        self._path = {leaf: tuple(q for q in path if q.max_resources)
                      for leaf, path in tree.path.items()}
        self._used: dict[str, dict[str, int]] = {}
        for leaf, custom in used_by_leaf.items():
            self.take(leaf, custom)

    @staticmethod
    def of(tree, used_by_leaf: Mapping[str, Custom]) -> CustomCaps | None:
        """None when no queue has ``max_resources``."""
        if not any(q.max_resources for q in tree.node.values()):
            return None
        return CustomCaps(tree, used_by_leaf)

    def fits(self, leaf: str, custom: Custom) -> bool:
        for q in self._path.get(leaf, ()):
            used = self._used.get(q.name, {})
            caps = dict(q.max_resources)
            if any(k in caps and used.get(k, 0) + v > caps[k] for k, v in custom):
                return False
        return True

    def take(self, leaf: str, custom: Custom) -> None:
        for q in self._path.get(leaf, ()):
            used = self._used.setdefault(q.name, {})
            for k, v in custom:
                used[k] = used.get(k, 0) + v


def greedy(cores: int, ranked: Sequence[Claim], budget: Mapping[str, int],
           order: Callable[[Claim], tuple] | None) -> dict[str, int]:
    """A ``fifo`` or ``priority`` leaf whose apps ask for a custom resource: floors, then each
    claim in ``order`` up to its want as the cores and the leaf's custom ``budget`` left
    allow (``policies._greedy`` with the budget beside the cores): an app whose executor's
    GPUs are gone is passed over for one behind it that needs none."""
    ordered = ranked if order is None else sorted(ranked, key=order)  # None: rank order
    left = cores - sum(c.floor * c.executor.cores for c in ordered)
    left_custom = dict(budget)
    for c in ordered:
        for k, v in c.executor.custom:
            if k in left_custom:
                left_custom[k] -= c.floor * v
    out = {}
    for c in ordered:
        size = c.executor
        extra = min(c.want - c.floor, max(left, 0) // size.cores)
        for k, v in size.custom:
            if k in left_custom:
                extra = min(extra, max(left_custom[k], 0) // v)
        extra = max(extra, 0)
        out[c.app_id] = c.floor + extra
        left -= extra * size.cores
        for k, v in size.custom:
            if k in left_custom:
                left_custom[k] -= extra * v
    return out
