"""The simulated workers indexed by their free room, so that placing a driver or an executor
costs O(log distinct free rooms), not O(workers).

``sorting.pick`` reads every worker's free room for each pick. The memory cluster places every
driver and executor of a simulated run (a run of 2,000 apps on 2,000 workers made about 30,000
picks, each over a new list of the workers' free room: minutes of a simulation whose engine
took one second). Here the workers are grouped by free room (cores, MiB, custom amounts), the
rooms kept in order; a pick walks the rooms from the end its node sort prefers and takes the
first worker (by index) of the best room - the same worker ``sorting.pick`` chooses, keep-off
included (``tests/backends/memory/test_rooms.py`` holds the two to each other).
"""

from __future__ import annotations

from sortedcontainers import SortedList

from ...model import NodeSort, Resources
from ...model.custom import Custom, covers

Key = tuple[int, int, Custom]  # a free room: cores, MiB, custom amounts


def key_of(room: Resources) -> Key:
    return (room.cores, room.mem_mib, room.custom)


class WorkerIndex:
    """Alive workers by free room: ``add``/``remove`` a worker's room as it changes; ``pick``
    as ``sorting.pick`` over the workers added."""

    __slots__ = ("_at", "_keys")

    def __init__(self) -> None:
        self._at: dict[Key, SortedList] = {}  # room -> the workers with it, by index
        self._keys = SortedList()  # the rooms, in (cores, MiB, custom) order

    def add(self, worker: int, room: Resources) -> None:
        k = key_of(room)
        at = self._at.get(k)
        if at is None:
            at = self._at[k] = SortedList()
            self._keys.add(k)
        at.add(worker)

    def remove(self, worker: int, room: Resources) -> None:
        k = key_of(room)
        at = self._at[k]
        at.remove(worker)
        if not at:
            del self._at[k]
            self._keys.remove(k)

    def pick(self, size: Resources, sort: NodeSort) -> int | None:
        """The worker ``size`` goes to by ``sort``, None when none holds it. A ``size`` asking
        for no custom resource keeps off the rooms with custom resources free while another
        room holds it (``sorting``'s keep-off)."""
        if size.custom:
            return self._best(size, sort, None)
        found = self._best(size, sort, False)
        return found if found is not None else self._best(size, sort, True)

    def _best(self, size: Resources, sort: NodeSort, with_custom: bool | None) -> int | None:
        """The first worker of the best rooms that hold ``size`` (``with_custom``: only rooms
        with custom resources free, or only rooms without; None: any). Rooms of equal cores and
        MiB tie, as ``sorting.more_free`` has it: the first worker among them wins."""
        cores, mem, custom = size.cores, size.mem_mib, size.custom
        keys = self._keys
        if sort is NodeSort.BINPACKING:  # the fullest that holds it: upwards
            walk = keys.islice(keys.bisect_left((cores, mem)))
        else:  # the freest: downwards
            walk = keys.islice(reverse=True)
        level: tuple[int, int] | None = None
        first: int | None = None
        for k in walk:
            if k[0] < cores:
                break  # (downwards) every room from here has fewer cores
            if level is not None and (k[0], k[1]) != level:
                break  # past the best rooms
            if k[1] < mem or (with_custom is not None and bool(k[2]) != with_custom):
                continue
            if custom and not covers(custom, k[2]):
                continue
            level = (k[0], k[1])
            w = self._at[k][0]
            if first is None or w < first:
                first = w
        return first
