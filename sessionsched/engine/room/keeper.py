"""The cycle's ``admission.Room``, its per-queue figures kept between cycles.

Each leaf's figures come from its ledger totals (``ledger.Ledger.leaf``: a new object only
after one of its apps changed) and whether it has apps queued; a parent's sum its children's.
A cycle changes a few leaves, and behind several clusters (``clusters.federation``) each
cluster's engine builds the room of every leaf every cycle: so each leaf's figures are worked
out again only when its totals are another object or it gained or lost its queue, and the
parents' sums move by its difference. Admission spends the room: it gets copies.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from ...model import Resources
from ..admission import Room
from ..ledger import Ledger, Totals
from ..tree import QueueTree
from .limit_waits import LimitWaits
from .shut_out import ShutOut

if TYPE_CHECKING:
    from ..app_books import Books
    from ..placement import WorkerReports


class RoomKeeper:
    """The per-queue figures of ``Room`` as the books stand, kept per leaf by its ``seen``
    totals (and queue): built whole again for another tree."""

    def __init__(self) -> None:
        self._tree: QueueTree | None = None
        self._ledger: Ledger | None = None
        self._moved: set[str] = set()  # leaves whose totals changed (``Ledger.watch``)
        self._queued: frozenset[str] = frozenset()  # the leaves with apps queued, as last seen
        self._reset()
        self.limit_waits = LimitWaits()
        self.shut_out = ShutOut()

    def _reset(self) -> None:
        self._seen: dict[str, tuple[Totals, bool]] = {}  # leaf -> (its totals, apps queued)
        # As ``Room`` names them, every queue in the tree's postorder (parents summed).
        self.admitted: dict[str, int] = {}
        self.usage: dict[str, float] = {}
        self.floors: dict[str, int] = {}
        self.drivers_in: dict[str, Resources] = {}
        self.whole_in: dict[str, Resources] = {}
        self.unbounded_in: dict[str, int] = {}
        self.ahead_in: dict[str, int] = {}
        self.busy: frozenset[str] = frozenset()  # the leaves with apps, admitted or queued
        self._busy: set[str] = set()

    def room(self, books: Books, capacity: Resources, driver_slots: int | None,
             host_room: Resources | None, reports: WorkerReports, elsewhere: Mapping[str, int],
             offered_later: Callable[[str], bool | str],
             weight_shares: Callable[[frozenset[str]], dict[str, float]],
             max_cores_left: Mapping[str, tuple[int, int]],
             queued: Collection[str] | None = None) -> Room:
        """``queued``: the leaves with apps queued (``QueueHeads.first``; None: read from the
        books)."""
        t = books.ledger.total
        drivers = Resources(t.driver_cores, t.driver_mem_mib)
        gangs = books.gangs  # held: not free; needed whole: committed (``gang.book``)
        room = Room(
            free=capacity - drivers - Resources(t.committed_cores, t.committed_mem_mib)
            - gangs.held_total,
            uncommitted=capacity - drivers - Resources(t.floor_cores, t.floor_mem_mib,
                                                       books.ledger.floor_custom)
            - gangs.need_total,
            gangs=gangs.holds,
            driver_slots_free=(driver_slots or 0) - t.client_drivers,
            driver_slots=driver_slots,
            host_room=host_room,
            host_free=None if host_room is None else host_room - Resources(
                t.host_driver_cores, t.host_driver_mem_mib),
            host_drivers=t.client_drivers,
            capacity=capacity,
            need_of=books.needs.need_at_or_above,
            weight_of=books.needs.weight_at_or_above,
            workers=books.workers,
            free_now=reports.free_now(),
            elsewhere=elsewhere, offered_later=offered_later, max_cores_left=max_cores_left,
        )
        self._bring_up_to_date(books, queued if queued is not None else
                               {name for name, pend in books.pending.items() if pend})
        room.admitted_in, room.usage_cores = dict(self.admitted), dict(self.usage)
        room.floor_cores_in, room.drivers_in = dict(self.floors), dict(self.drivers_in)
        room.whole_in, room.unbounded_in = dict(self.whole_in), dict(self.unbounded_in)
        room.ahead_in = dict(self.ahead_in)
        room.weight_share = weight_shares(self.busy)
        room.limit_waits, room.shut_out = self.limit_waits, self.shut_out
        return room

    def _bring_up_to_date(self, books: Books, queued: Collection[str]) -> None:
        """The leaves whose totals changed or that gained or lost their queue since the last
        call (every leaf, for another tree or ledger) are worked out again."""
        tree, ledger = books.tree, books.ledger
        if ledger is not self._ledger:
            self._ledger, self._moved = ledger, ledger.watch()
            self._tree = None
        now_queued = frozenset(queued)
        if tree is not self._tree:
            self._reset()
            self._tree = tree
            self._fill_in_order(tree)
            names: Iterable[str] = tree.leaves
        else:
            names = [n for n in sorted(self._moved | (now_queued ^ self._queued))
                     if n in self._seen]
        self._moved.clear()
        self._queued = now_queued
        queued = now_queued
        seen, path, busy = self._seen, tree.path, self._busy
        admitted, usage, floors = self.admitted, self.usage, self.floors
        busy_moved = False
        for name in names:
            lt = ledger.leaf(name)
            waits = name in queued
            was = seen.get(name)
            if was is not None and was[0] is lt and was[1] == waits:
                continue
            seen[name] = (lt, waits)
            self.drivers_in[name] = Resources(lt.driver_cores - lt.alone_driver_cores,
                                              lt.driver_mem_mib - lt.alone_driver_mem_mib)
            self.whole_in[name] = Resources(lt.whole_cores, lt.whole_mem_mib)
            self.unbounded_in[name] = lt.unbounded
            self.ahead_in[name] = lt.ahead
            # The parents' sums move by the leaf's difference (whole numbers: the float usage
            # sums them exactly, as a sum over the children would).
            n, used, floor = lt.live, float(lt.usage_cores), lt.floor_cores
            dn, dused, dfloor = n - admitted[name], used - usage[name], floor - floors[name]
            admitted[name], usage[name], floors[name] = n, used, floor
            if dn or dused or dfloor:
                for q in path[name][:-1]:
                    admitted[q.name] += dn
                    usage[q.name] += dused
                    floors[q.name] += dfloor
            if bool(n or waits) != (name in busy):
                busy ^= {name}
                busy_moved = True
        if busy_moved:
            self.busy = frozenset(busy)

    def _fill_in_order(self, tree: QueueTree) -> None:
        """Every figure's keys in the order the room had them built (the tree's postorder)."""
        for name in tree.postorder:
            self.admitted[name], self.usage[name], self.floors[name] = 0, 0.0, 0
            if not tree.children[name]:
                self.drivers_in[name] = self.whole_in[name] = Resources()
                self.unbounded_in[name] = self.ahead_in[name] = 0
