"""Each leaf's first queued app, kept between cycles.

Admission starts from every queue's head, every cycle, and behind several clusters
(``clusters.federation``) every cluster's engine holds every queued app: reading a hundred
heads out of their sorted queues is most of what a cycle of a full cluster costs in admission.
A leaf's head moves only when its queued apps do, and the books say when that is
(``Books``' ``listing_changed``): only those leaves are read again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..rank import Rank


class QueueHeads:
    """Leaf -> the rank key of its first queued app, for the leaves with apps queued, in the
    books' order of the leaves. ``moved`` is what the books tell of a leaf whose queued apps
    changed (it tells ``also`` too: the views are told the same)."""

    def __init__(self, also: Callable[[str], None]) -> None:
        self._also = also
        self._moved: set[str] = set()
        self._all = True  # every leaf read again (the first cycle, a new tree)
        self._first: dict[str, Rank] = {}

    def moved(self, leaf: str) -> None:
        self._moved.add(leaf)
        self._also(leaf)

    def moved_all(self) -> None:
        self._all = True

    def first(self, pending: Mapping[str, Sequence[Rank]]) -> dict[str, Rank]:
        """The heads as ``pending`` (leaf -> its queued apps' rank keys, head first) has them
        now. The caller reads, never changes, the dict it gets."""
        moved, old = self._moved, self._first
        if self._all:
            self._first = {name: pend[0] for name, pend in pending.items() if pend}
        elif moved:
            new: dict[str, Rank] = {}
            for name, pend in pending.items():
                if name in moved:
                    if pend:
                        new[name] = pend[0]
                elif (key := old.get(name)) is not None:
                    new[name] = key
            self._first = new
        self._all = False
        moved.clear()
        return self._first
