"""The queues whose apps all need a room their head waits for, kept between cycles.

A head that waits for a room (``host_room.WAIT_ROOM``: the cluster's, the host's) lets the
apps behind it that need none of it be looked at (``admission.plan_admissions``): the walk
reads on through the queue for one. When the cluster's room is what is short, usually no app
of the queue is such (every app with an executor needs it), and the walk reads the whole
queue to find so, cycle after cycle, queue after queue - behind several clusters
(``clusters.federation``) in every cluster's engine, each holding every queued app. What it
found holds while each app that comes into that queue (a submission, a new priority, a gang
falling back: ``QueueHeads.take_added``) needs one of those rooms too or comes ahead of where
it holds from; apps leaving the queue take nothing from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..host_room import rooms_needed
from ..ledger import AppRecord
from ..rank import Rank


class ShutOut:
    """Leaf -> (a rank key, rooms): every app of the leaf from that key on needs one of the
    rooms."""

    def __init__(self) -> None:
        self._found: dict[str, tuple[Rank, frozenset[str]]] = {}

    def came_in(self, added: Mapping[str, Sequence[AppRecord]] | None) -> None:
        """Apps came into queues (``added``: leaf -> those apps; None: any, or the queues
        changed)."""
        if added is None:
            self._found.clear()
            return
        found = self._found
        for leaf, recs in added.items():
            kept = found.get(leaf)
            if kept is not None and any(rec.rank >= kept[0] and not rooms_needed(rec.spec)
                                        & kept[1] for rec in recs):
                del found[leaf]

    def all_need(self, leaf: str, key: Rank, rooms: frozenset[str]) -> bool:
        """Whether every app of ``leaf`` from ``key`` on is known to need one of ``rooms``."""
        found = self._found.get(leaf)
        return found is not None and found[0] <= key and found[1] <= rooms

    def found(self, leaf: str, key: Rank, rooms: frozenset[str]) -> None:
        """Every app of ``leaf`` from ``key`` on needs one of ``rooms``."""
        self._found[leaf] = (key, rooms)
