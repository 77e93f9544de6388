"""A frozen view of the engine's books, for everyone outside the engine.

The engine's books (``AppRecord``s, pending queues, running totals) are its own: they change
inside every step. Whoever shows or acts on scheduling state (the server's API, Spark REST
status, dashboard, metrics, agent replies) reads an ``EngineView`` instead - Kueue's snapshot
idea: frozen dataclasses and read-only mappings, taken after a step and never changed again,
so a reader needs no lock and can never see half a step.

Taking a view costs what changed, not what exists: ``ViewKeeper`` re-reads only the apps the
steps since the last view touched, and rebuilds a leaf's queue order only when its pending
apps changed; the rest is shared with the previous view (copying the app mapping itself is one
C-level dict copy).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..model import AppState, Queue, QueueUsage, Resources
from .events import Adopted, Decision, Event, Submitted
from .gang import Reservation
from .ledger import AppRecord
from .placement import Workers
from .rank import Rank, rank
from .waits import Wait, WaitCode


@dataclass(frozen=True, slots=True)
class AppFacts:
    """One app as the engine has it: its scheduling state, never its submission's details."""

    app_id: str
    queue: str
    seq: int
    state: AppState
    priority: int
    reason: str
    spark_app_id: str | None
    launched_at: float | None
    first_executor_at: float | None
    finished_at: float | None
    exit_code: int | None
    executors: int
    target: int
    grant: int
    demand: int

    @property
    def rank(self) -> Rank:
        return rank(self.priority, self.seq, self.app_id)

    @staticmethod
    def of(rec: AppRecord) -> AppFacts:
        return AppFacts(
            app_id=rec.app_id, queue=rec.spec.queue, seq=rec.spec.seq, state=rec.state,
            priority=rec.priority, reason=rec.reason, spark_app_id=rec.spark_app_id,
            launched_at=rec.launched_at, first_executor_at=rec.first_executor_at,
            finished_at=rec.finished_at, exit_code=rec.exit_code, executors=rec.held,
            target=rec.target, grant=rec.grant, demand=rec.demand,
        )


_NOTHING = Resources()


@dataclass(frozen=True)
class EngineView:
    """The engine after a step. ``pending``: each leaf's queued app ids, head first;
    ``waiting``: why each waiting leaf's head waits; ``usage``: per queue, parents summing
    their children (``Scheduler.usage``); ``held``: the queued apps held aside because the
    cluster as it is now cannot hold them (app id -> ``does_not_fit_now``); ``workers``: the
    cluster's workers as the engine decides on them (``placement.Workers``)."""

    root: Queue
    capacity: Resources
    driver_slots: int | None
    apps: Mapping[str, AppFacts]
    pending: Mapping[str, tuple[str, ...]]
    waiting: Mapping[str, Wait]
    usage: Mapping[str, QueueUsage]
    held: Mapping[str, Wait] = field(default_factory=dict)
    workers: Workers | None = None
    # Reserving gangs (docs/design/gangs.md): app id -> what is held of what it needs, and until
    # when.
    reservations: Mapping[str, Reservation] = field(default_factory=dict)
    # The scheduler host's memory for drivers on it (``host_room``); None: not measured.
    host_room: Resources | None = None
    host_used: Resources = _NOTHING  # by the drivers there (``host_room.host_need``)
    host_drivers: int = 0  # drivers on the scheduler's host
    # Behind several clusters (``clusters.view``): each placed app's cluster; empty with one.
    clusters: Mapping[str, str] = field(default_factory=dict)
    # ... and each cluster as its engine has it (``clusters.view.ClusterRow``), listed order.
    cluster_rows: tuple = ()
    _ranks: dict[str, tuple[Rank, ...]] = field(default_factory=dict, compare=False, repr=False)

    def position(self, app_id: str) -> int | None:
        """1-based place of a queued app in its queue, None if it is not queued. O(log n):
        a leaf's ranks are laid out once per view, on first use (readers building the same
        tuple at once is harmless)."""
        facts = self.apps.get(app_id)
        if facts is None or facts.state is not AppState.ACCEPTED:
            return None
        ranks = self._ranks.get(facts.queue)
        if ranks is None:
            ranks = tuple(self.apps[a].rank for a in self.pending.get(facts.queue, ()))
            self._ranks[facts.queue] = ranks
        return bisect_left(ranks, facts.rank) + 1

    def reservation(self, app_id: str) -> Reservation | None:
        """A reserving gang's reservation (held / needed, since, deadline); None otherwise."""
        return self.reservations.get(app_id)

    def wait_of(self, app_id: str, position: int | None = None) -> Wait | None:
        """Why a queued app waits (None if it is not queued), worked out at read time so that
        no cycle spends anything on the apps behind a head: the head carries its queue's wait
        (``waiting``), an app behind it ``behind_app``, naming the head and what holds it; an
        app held aside its own ``does_not_fit_now`` (``held``), and the apps it was ahead of
        take the place it left.
        ``position``: the app's, if the caller has it already (``position()``)."""
        if position is None:
            position = self.position(app_id)
            if position is None:
                return None
        aside = self.held.get(app_id)
        if aside is not None:
            return aside  # held aside (``does_not_fit_now``): its own wait, not its queue's
        queue = self.apps[app_id].queue
        wait = self.waiting.get(queue)
        first = 0  # the head: the first app of the queue not held aside
        if self.held:
            listing = self.pending[queue]
            while first < position - 1 and listing[first] in self.held:
                first += 1
        if first == position - 1:
            return wait or Wait(WaitCode.NEXT_CYCLE, "next to start, at the next cycle")
        head = self.pending[queue][first]
        held = f"which waits: {wait.text}" if wait else "which starts at the next cycle"
        return Wait(WaitCode.BEHIND_APP,
                    f"behind {head}, the head of {queue} ({position - 1} app(s) ahead of it),"
                    f" {held}")

    def leaves(self) -> list[Queue]:
        return list(self.root.leaves())


EMPTY = MappingProxyType({})


class ViewKeeper:
    """Knows what changed since the last view, and takes the next one (inside the engine)."""

    def __init__(self) -> None:
        self._last: EngineView | None = None
        self._apps: set[str] = set()
        self._leaves: set[str] = set()
        self._all = True  # the first view, or a new queue tree: take everything
        self._usage = False  # the queues' usage moved without an app changing (decay)

    def touch(self, app_ids: Iterable[str]) -> None:
        self._apps.update(app_ids)

    def touch_queue(self, leaf: str) -> None:
        self._leaves.add(leaf)

    def touch_all(self) -> None:
        self._all = True

    def touch_usage(self) -> None:
        self._usage = True

    def take(self, root: Queue, capacity: Resources, driver_slots: int | None,
             apps: Mapping[str, AppRecord], pending: Mapping[str, Iterable[Rank]],
             waiting: Mapping[str, Wait],
             usage: Callable[[], Mapping[str, QueueUsage]],
             held: Mapping[str, Wait] | None = None, workers: Workers | None = None,
             reservations: Mapping[str, Reservation] | None = None,
             host_room: Resources | None = None, host_used: Resources = _NOTHING,
             host_drivers: int = 0) -> EngineView:
        last = self._last
        held = held or {}
        reservations = reservations or {}
        unchanged = (last is not None and not self._all and not self._apps and not self._leaves
                     and not self._usage
                     and last.capacity == capacity and last.driver_slots == driver_slots
                     and last.host_room == host_room and last.host_used == host_used
                     and last.waiting == waiting and last.held == held
                     and last.workers is workers and last.reservations == reservations)
        if unchanged:
            return last
        if last is None or self._all:
            facts = {a: AppFacts.of(r) for a, r in apps.items()}
            queued = {leaf: tuple(k[2] for k in keys) for leaf, keys in pending.items()}
        else:
            facts = last.apps.copy()  # the proxy's dict, copied whole (dict() goes key by key)
            for app_id in self._apps:
                rec = apps.get(app_id)
                if rec is None:
                    facts.pop(app_id, None)  # forgotten
                else:
                    facts[app_id] = AppFacts.of(rec)
            queued = dict(last.pending)
            for leaf in self._leaves:
                keys = pending.get(leaf)
                if keys is None:
                    queued.pop(leaf, None)
                else:
                    queued[leaf] = tuple(k[2] for k in keys)
        self._last = EngineView(
            root=root, capacity=capacity, driver_slots=driver_slots,
            apps=MappingProxyType(facts), pending=MappingProxyType(queued),
            waiting=MappingProxyType(dict(waiting)), usage=MappingProxyType(dict(usage())),
            held=MappingProxyType(dict(held)), workers=workers,
            reservations=MappingProxyType(dict(reservations)), host_room=host_room,
            host_used=host_used, host_drivers=host_drivers,
        )
        self._apps, self._leaves, self._all, self._usage = set(), set(), False, False
        return self._last


def touched_by(events: list[Event], decisions: list[Decision]) -> set[str]:
    """The apps a step's events and decisions are about: what the next view re-reads."""
    ids = {d.app_id for d in decisions}
    for ev in events:
        app_id = getattr(ev, "app_id", None)
        if app_id is None and isinstance(ev, Submitted | Adopted):
            app_id = ev.spec.app_id
        if app_id is not None:
            ids.add(app_id)
    return ids
