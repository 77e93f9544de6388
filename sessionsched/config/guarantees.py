"""Queue guarantees that can never be met: said as the server starts, not refused.

A queue's ``min_share`` is given only up to what it may hold: the arbiter cuts each child's
guarantee to its wants capped by its own ``max_cores``, and a parent's cores, capped by its
``max_cores``, are all its children's guarantees can share (``engine.arbitration``: they are
shared by weight when they do not all fit). A configuration may still mean it - a cap lowered
by a plan, a guarantee kept for later - so nothing is refused; but an operator who wrote
``min_share: 40`` under ``max_cores: 20`` should hear that 20 is the most it gives.
"""

from __future__ import annotations

from ..model import Queue


def unreachable_guarantees(root: Queue) -> list[str]:
    """One line per queue whose ``min_share`` is above a ``max_cores`` on its path (its own or
    a parent's), and per parent whose children's ``min_share`` add up to more than its
    ``max_cores``."""
    out: list[str] = []

    def walk(q: Queue, cap: int | None, capped_by: str) -> None:
        if q.max_cores is not None and (cap is None or q.max_cores <= cap):
            cap, capped_by = q.max_cores, q.name
        if cap is not None and q.min_share_cores > cap:
            whose = "its" if capped_by == q.name else f"{capped_by}'s"
            out.append(f"queue {q.name}: min_share {q.min_share_cores} is above {whose} "
                       f"max_cores {cap}; it can give at most {cap} cores")
        wanted = sum(c.min_share_cores for c in q.children)
        if q.max_cores is not None and wanted > q.max_cores:
            out.append(f"queue {q.name}: its children's min_share add up to {wanted}, above its "
                       f"max_cores {q.max_cores}; they share at most {q.max_cores} cores by weight")
        for c in q.children:
            walk(c, cap, capped_by)

    walk(root, None, "")
    return out
