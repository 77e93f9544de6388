"""Each leaf's first queued app, kept between cycles.

Admission starts from every queue's head, every cycle, and behind several clusters
(``clusters.federation``) every cluster's engine holds every queued app: reading a hundred
heads out of their sorted queues (and each head's record) is most of what a cycle of a full
cluster costs in admission. A leaf's head moves only when its queued apps do, and the books
say when that is (``Books``' ``listing_changed``; a gang that falls back to an ordinary app is
queued again for it, ``gang.phase``): only those leaves are read again, and admission is told
which they were (``take_read``).

It counts, too, each leaf's queued apps that need no room of the cluster (``off_cluster``:
no executor, the driver on the scheduler's host or with its user): where there is none, a
head waiting for the cluster's room holds back its whole queue, and admission need not read
the queue to find so (``admission.plan_admissions``) - which behind several clusters each
engine did for each queue whose head waited so, a thousand apps at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..host_room import needs_cluster
from ..ledger import AppRecord
from ..rank import Rank


class QueueHeads:
    """Leaf -> the rank key of its first queued app, for the leaves with apps queued, in the
    books' order of the leaves. ``moved`` is what the books tell of a leaf whose queued apps
    changed (it tells ``also`` too: the views are told the same), and the app that came in or
    left. ``off_cluster``: leaf -> its queued apps that need no cluster room (module doc;
    read, never changed, by the caller)."""

    def __init__(self, also: Callable[[str], None]) -> None:
        self._also = also
        self._moved: set[str] = set()
        self._all = True  # every leaf read again (the first cycle, a new tree)
        self._first: dict[str, Rank] = {}
        self._read: set[str] | None = None  # read again since ``take_read``; None: every leaf
        # Leaf -> the apps that came in since ``take_added``; None: any leaf, any app.
        self._added: dict[str, list[AppRecord]] | None = None
        self.off_cluster: dict[str, int] = {}

    def moved(self, leaf: str, added: AppRecord | None = None,
              left: AppRecord | None = None) -> None:
        self._moved.add(leaf)
        if added is not None:
            if self._added is not None:
                self._added.setdefault(leaf, []).append(added)
            if not needs_cluster(added.spec):
                self.off_cluster[leaf] = self.off_cluster.get(leaf, 0) + 1
        if left is not None and not needs_cluster(left.spec):
            self.off_cluster[leaf] -= 1
        self._also(leaf)

    def moved_all(self) -> None:
        self._all = True
        self._added = None

    def first(self, pending: Mapping[str, Sequence[Rank]]) -> dict[str, Rank]:
        """The heads as ``pending`` (leaf -> its queued apps' rank keys, head first) has them
        now. The caller reads, never changes, the dict it gets."""
        moved, first = self._moved, self._first
        if self._read is not None:
            self._read |= moved
        gained = self._all
        for name in moved if not gained else ():
            pend = pending.get(name)
            if pend:
                if name not in first:
                    gained = True  # its place among the others: the books' order, read whole
                    break
                first[name] = pend[0]
            else:
                first.pop(name, None)
        if gained:
            self._first = {name: pend[0] for name, pend in pending.items() if pend}
            if self._all:
                self._read = None
        self._all = False
        moved.clear()
        return self._first

    def take_read(self) -> set[str] | None:
        """The leaves whose head may have moved since the last call (None: any)."""
        read, self._read = self._read, set()
        return read

    def take_added(self) -> dict[str, list[AppRecord]] | None:
        """Leaf -> the apps that came into it since the last call (None: any)."""
        added, self._added = self._added, {}
        return added
