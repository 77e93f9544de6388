"""``max_running_apps`` over every cluster: each engine is told, before it steps, how many apps
of each limited queue run on the other clusters (``Scheduler.elsewhere``), and its admission
counts them with its own (``admission_checks.queue_limits``).

The engines step one after another, so an engine that steps later in a cycle counts the apps
the earlier ones launched in it: the limit is never passed by two clusters launching at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...model import Queue
from ..ledger import Ledger
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


class Counts:
    """Each cluster's apps per limited queue (``of``: as ``running_in`` gives them), and their
    sum over every cluster, kept from one step to the next: what an engine is told runs on the
    others is the sum less its own, not a walk of the other clusters' counts per engine. A
    cluster's are counted again only for the limited queues above the leaves whose totals
    changed in its engine's books (``Ledger.watch``): a step moves a few of a hundred."""

    def __init__(self, limited: Mapping[str, tuple[str, ...]]):
        self._watched: dict[str, tuple[Ledger, set[str]]] = {}  # cluster -> its ledger's watch
        self.retree(limited)

    def retree(self, limited: Mapping[str, tuple[str, ...]]) -> None:
        """Another tree's limited queues: every cluster is counted whole at its next recount."""
        self.limited = limited
        self.of: dict[str, dict[str, int]] = {}
        self._sum: dict[str, int] = {}
        self._above: dict[str, list[str]] = {}  # leaf -> the limited queues over it
        for queue, leaves in limited.items():
            for leaf in leaves:
                self._above.setdefault(leaf, []).append(queue)

    def recount(self, name: str, engine: Scheduler) -> None:
        """Cluster ``name``'s counts as its engine's books stand."""
        ledger = engine.books.ledger
        watched = self._watched.get(name)
        if watched is None or watched[0] is not ledger:
            watched = self._watched[name] = (ledger, ledger.watch())
        moved, mine = watched[1], self.of.get(name)
        if mine is None:
            mine = self.of[name] = {}
            was: dict[str, int] = {}
            now = running_in(engine, self.limited)
        else:
            queues = {q for leaf in moved for q in self._above.get(leaf, ())}
            now = running_in(engine, {q: self.limited[q] for q in queues}) if queues else {}
            was = mine
        moved.clear()
        total = self._sum
        for queue, n in now.items():
            before = was.get(queue, 0)
            if n != before:
                total[queue] = total.get(queue, 0) + n - before
        mine.update(now)

    def check(self, engines: Mapping[str, Scheduler]) -> list[str]:
        """The kept counts against a count of every cluster's books (``Federation.check``)."""
        out = [f"{name}: apps per limited queue {mine}, its books say {now}"
               for name, mine in self.of.items()
               if mine != (now := running_in(engines[name], self.limited))]
        summed: dict[str, int] = {}
        for mine in self.of.values():
            for queue, n in mine.items():
                summed[queue] = summed.get(queue, 0) + n
        if {q: n for q, n in summed.items() if n} != {q: n for q, n in self._sum.items() if n}:
            out.append(f"apps per limited queue over every cluster {self._sum}, not {summed}")
        return out

    def elsewhere(self, here: str) -> dict[str, int]:
        """Limited queue -> its apps on every cluster but ``here``; the queues with none left
        out."""
        mine = self.of.get(here, {})
        return {queue: n - m for queue, n in self._sum.items() if n != (m := mine.get(queue, 0))}
