"""The heads that wait for a count of running apps (``max_running_apps``), kept between cycles.

Most queues of a busy cluster are full: their head waits for one of the apps of its queue (or
of a parent) to end, cycle after cycle, and behind several clusters (``clusters.federation``)
every cluster's engine looks at every queue's head each cycle. That wait is the first check
of every admission mode (``admission_checks.queue_limits``) and depends on nothing but the head,
the queues on its path and their counts (this cluster's and the others'): while those stand,
and the workers the head was found to fit (``placement.held_now``) are the same, admission
takes the kept wait instead of looking at the head again: the engine builds no view of that
queue (``Scheduler._admit``), and the walk starts without it (``admission.plan_admissions``).

That first check reads the counts and nothing of the head. So the counts are compared once a
cycle, queue by limited queue, not leaf by leaf (``start``), and where one moved the waits kept
below its queue are worked out again by that check alone: a queue still full keeps its wait
(its numbers as they stand), one with room again drops it and its head is looked at. And a new
head of a queue still full (a submission or a priority change ahead of the last one) waits as
the last one did, once the workers are found to hold it (``split``). Behind several clusters
each of these reaches every cluster's engine: an app ending on one moves its queue's count in
all of them, and every engine holds a copy of every queued app.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from ...model import AppSpec
from ..admission_checks import queue_limits
from ..placement import Workers, held_now
from ..rank import Rank
from ..tree import QueueTree
from ..waits import Wait, WaitCode

if TYPE_CHECKING:
    from ..admission import Room
    from ..ledger import AppRecord

_FOR_A_COUNT = (WaitCode.QUEUE_LIMIT, WaitCode.PARENT_QUEUE_FULL)


class LimitWaits:
    """Leaf -> (its head, the head's wait), each kept on the tree, the workers and the counts
    of the last ``start``."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[AppSpec, Wait]] = {}
        self._tree: QueueTree | None = None
        self._workers: Workers | None = None
        self._below: dict[str, tuple[str, ...]] = {}  # limited queue -> the leaves below it
        self._counts: dict[str, int] = {}  # limited queue -> its apps, here and elsewhere
        self._taken: dict[str, tuple[AppSpec, Wait]] = {}  # what the last ``split`` took
        self._looked: list[str] = []  # the leaves the last ``split`` had looked at
        self._dirty: set[str] = set()  # leaves whose kept wait changed since that ``split``
        self._whole = True  # the next ``split`` goes through every head

    def start(self, tree: QueueTree, room: Room) -> None:
        """A cycle's admission starts on ``room`` (nothing admitted yet): the waits kept on
        another tree or other workers go, and those below a queue whose count moved are worked
        out again (gone if it has room now)."""
        kept = self._kept
        if tree is not self._tree or room.workers is not self._workers:
            kept.clear()
            self._whole = True
            self._tree, self._workers = tree, room.workers
            below: dict[str, list[str]] = {}
            for leaf in tree.leaves:
                for q in tree.path[leaf]:
                    if q.max_running_apps is not None:
                        below.setdefault(q.name, []).append(leaf)
            self._below = {name: tuple(leaves) for name, leaves in below.items()}
            self._counts = {}
        admitted, elsewhere, was = room.admitted_in, room.elsewhere, self._counts
        counts = {name: admitted.get(name, 0) + elsewhere.get(name, 0) for name in self._below}
        if counts == was:
            return
        self._counts = counts
        moved = {leaf for name, n in counts.items() if was.get(name) != n
                 for leaf in self._below[name] if leaf in kept}
        self._dirty |= moved
        for leaf in moved:
            head = kept[leaf][0]
            wait = queue_limits(None, head, tree.path[leaf], room)  # type: ignore[arg-type]
            if wait is None:
                del kept[leaf]
            else:
                kept[leaf] = (head, wait)

    def split(self, heads: Mapping[str, Rank], read: Collection[str] | None,
              apps: Mapping[str, AppRecord]) -> tuple[list[str], dict[str, tuple[AppSpec, Wait]]]:
        """The leaves of ``heads`` (leaf -> its head's rank key) whose head must be looked at,
        in name order; and the others, with their head and its kept wait (the caller reads,
        never changes, that dict). ``read``: the leaves whose head may have moved since the
        last split (``QueueHeads.take_read``; None: any).

        Only those leaves, the ones whose kept wait changed since (``start``, ``keep``) and
        the ones looked at last time are gone through again; every other leaf keeps what the
        last split took for it, without a look at its head's record. A full cluster's cycle
        moves a few heads of a hundred, and behind several clusters every engine splits them.
        """
        kept, workers, path = self._kept, self._workers, self._tree.path  # type: ignore[union-attr]
        if read is None or self._whole:
            names: Iterable[str] = heads
            out: dict[str, tuple[AppSpec, Wait]] = {}
            self._whole = False
        else:
            names = {*read, *self._dirty, *self._looked}
            out = self._taken
            for name in names:
                out.pop(name, None)
        self._dirty = set()
        look: list[str] = []
        for name in names:
            key = heads.get(name)
            if key is None:
                continue
            k = kept.get(name)
            if k is None:
                look.append(name)
                continue
            head = apps[key[2]].spec
            if k[0] is not head:
                # A new head in a queue still full waits as the last one did, once the workers
                # are found to hold it (else the walk holds it aside and looks behind it).
                if workers is not None and held_now(head, path[name], workers) is not None:
                    look.append(name)
                    continue
                k = kept[name] = (head, k[1])
            out[name] = k
        look.sort()
        self._taken, self._looked = out, look
        return look, out

    def keep(self, leaf: str, head: AppSpec, wait: Wait) -> None:
        """The wait of the leaf's first queued app, which the workers can hold, as the cycle
        starts (no app admitted yet): kept if it is for a count."""
        self._dirty.add(leaf)
        if wait.code in _FOR_A_COUNT:
            self._kept[leaf] = (head, wait)
        else:
            self._kept.pop(leaf, None)
