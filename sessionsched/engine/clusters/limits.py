"""``max_running_apps`` over every cluster: each engine is told, before it steps, how many apps
of each limited queue run on the other clusters (``Scheduler.elsewhere``), and its admission
counts them with its own (``admission_checks.queue_limits``).

The engines step one after another, so an engine that steps later in a cycle counts the apps
the earlier ones launched in it: the limit is never passed by two clusters launching at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...model import Queue
from ..scheduler import Scheduler


def limited_queues(root: Queue) -> dict[str, tuple[str, ...]]:
    """Each queue with a ``max_running_apps``, and the leaves below it (itself, for a leaf)."""
    return {q.name: tuple(leaf.name for leaf in q.leaves())
            for q in root.walk() if q.max_running_apps is not None}


def running_in(engine: Scheduler, limited: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    """Limited queue -> its apps admitted (starting or running) on ``engine``'s cluster."""
    leaf = engine.books.ledger.leaf  # each engine after each step: most limited queues, leaves
    return {queue: leaf(leaves[0]).live if len(leaves) == 1 else sum(leaf(n).live for n in leaves)
            for queue, leaves in limited.items()}


def elsewhere(counts: Mapping[str, Mapping[str, int]], here: str) -> dict[str, int]:
    """Limited queue -> its apps on every cluster but ``here`` (``counts``: per cluster, as
    ``running_in`` gives them)."""
    out: dict[str, int] = {}
    for name, mine in counts.items():
        if name != here:
            for queue, n in mine.items():
                if n:
                    out[queue] = out.get(queue, 0) + n
    return out
