"""The heads that wait for a count of running apps (``max_running_apps``), kept between cycles.

Most queues of a busy cluster are full: their head waits for one of the apps of its queue (or
of a parent) to end, cycle after cycle, and behind several clusters (``clusters.federation``)
every cluster's engine looks at every queue's head each cycle. That wait is the first check
of every admission mode (``admission_checks.queue_limits``) and depends on nothing but the head,
the queues on its path and their counts (this cluster's and the others'): while those stand,
and the workers the head was found to fit (``placement.held_now``) are the same, admission
takes the kept wait instead of looking at the head again: the engine builds no view of that
queue (``Scheduler._admit``), and the walk starts without it (``admission.plan_admissions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...model import AppSpec, Queue
from ..waits import Wait, WaitCode

if TYPE_CHECKING:
    from ..admission import Room

_FOR_A_COUNT = (WaitCode.QUEUE_LIMIT, WaitCode.PARENT_QUEUE_FULL)


class LimitWaits:
    """Leaf -> (its head, its path, the workers, the counts, the head's wait)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple] = {}
        self._limited: dict[str, tuple] = {}  # leaf -> (its path, the limited queues on it)

    def _counts(self, leaf: str, path: tuple[Queue, ...], room: Room) -> tuple[int, ...]:
        """What ``queue_limits`` compares with the limits of ``path``: each limited queue's
        apps, here and on the other clusters."""
        limited = self._limited.get(leaf)
        if limited is None or limited[0] is not path:
            names = tuple(q.name for q in path if q.max_running_apps is not None)
            limited = self._limited[leaf] = (path, names)
        admitted, elsewhere = room.admitted_in, room.elsewhere
        return tuple([admitted.get(n, 0) + elsewhere.get(n, 0) for n in limited[1]])

    def get(self, leaf: str, head: AppSpec, path: tuple[Queue, ...], room: Room) -> Wait | None:
        """The head's wait for a count if it was kept for all it depends on, else None."""
        kept = self._kept.get(leaf)
        if (kept is None or kept[0] is not head or kept[1] is not path
                or kept[2] is not room.workers or kept[3] != self._counts(leaf, path, room)):
            return None
        return kept[4]

    def keep(self, leaf: str, head: AppSpec, path: tuple[Queue, ...], room: Room,
             wait: Wait) -> None:
        """The wait of the leaf's first queued app, which the workers can hold, as the cycle
        starts (no app admitted yet): kept if it is for a count."""
        if wait.code in _FOR_A_COUNT:
            self._kept[leaf] = (head, path, room.workers, self._counts(leaf, path, room), wait)
        else:
            self._kept.pop(leaf, None)
