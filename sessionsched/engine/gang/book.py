"""Reservations that accumulate: room set aside for gangs at the heads of their queues.

A gang (``AppSpec.gang``, docs/design/gangs.md) launches only when its driver (if it runs in the
cluster) and its N executors are held for it at once. Until then, while it is the head of its
leaf queue (the first queued app not held aside ``does_not_fit_now``), it *reserves*: every
step, room of the cluster that is free (capacity less in-cluster drivers and the executors
held, granted or promised) and not already reserved is set aside for it - its driver first,
then whole executors of its size - up to what it needs. Nobody else is given that room, nor
room that frees later while the gang still lacks it: arbitration divides the capacity less
what the reserving gangs need whole, as far as the executors held now leave it
(``GangBook.kept_from``, ``Books.executor_capacity``), so an executor released is not
granted to anyone again but stays free for the gang; admission sees the holds as taken and
the gangs' whole needs as committed (``Room.gangs``), so no app is admitted into that room.
Room frees in the cycle after an app's demand drops (its grant is lowered by that cycle's
arbitration), and is held from then.

What a gang takes from others: only room as it frees - an executor released as its app goes
idle, one taken back by its holder's queue policy for another app that is short, an app that
ends - anywhere in the cluster, from any queue and any priority: whatever frees is not handed
out again while a gang waits for it. It kills nothing and orders no reclaim on its own
account: the running apps' targets still sum to what they hold (the policies may move
executors between them as before), so a gang's wait is bounded by how long the apps running
when it reached its queue's head keep what they hold - and by its timeout. An app of higher
priority queued in the gang's own queue goes ahead of it (the queue's order), and the gang
gives its room back until it is the head again.

Why two gangs never deadlock, each holding half of what it needs (the reason to reserve in
one FIFO order): reservations are served in one fixed order - the order in which their
gangs became reserving heads (heads of one step in rank order: priority, submission, app
id) - and freed room goes to the first reservation in that order
that is not whole. So at any time at most one reservation is partial, and the ones before it
are whole (and launch at once, unless their queue's ``max_running_apps`` or a driver slot
holds them: neither waits on a reservation). One gang per queue reserves, its head: a gang
behind another app of its queue waits its turn like any app (strict head-of-line), so a
queue's apps never hold room against each other either. A gang that stops being its queue's
head (a higher-priority app queued ahead of it, a kill) gives its room back at once.

The timeout (``Gang.timeout_s``, YuniKorn's ``placeholderTimeoutInSeconds``) counts from the
first reserved core or MiB: a gang that could reserve nothing has not started its clock. When
it runs out: ``hard``, the app ends FAILED with a reason naming the gang and what it held;
``soft``, the reservation is released and the app goes on as an ordinary app (its spec loses
its gang: ``Scheduler`` replaces it). Either way the room is back for others the same step.

Cost: O(reserving gangs + leaves with queued apps) per step; nothing at all while no queue's
head is a gang.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...model import AppSpec, GangStyle, Resources
from .reservation import Reservation

_NONE = Resources()


def needed(spec: AppSpec) -> Resources:
    """What a gang holds before it launches: its in-cluster driver and its N executors."""
    assert spec.gang is not None
    driver = spec.driver if spec.driver_in_cluster else _NONE
    return driver + spec.executor.times(spec.gang.executors)


@dataclass(slots=True)
class Hold:
    """One gang's reservation inside the engine: whole units, its driver and executors."""

    spec: AppSpec
    order: int  # when it started reserving, in the book's count: the FIFO order
    driver: bool = False  # its in-cluster driver's room is held (always True for client mode)
    executors: int = 0
    since: float | None = None  # the first reserved core or MiB

    @property
    def held(self) -> Resources:
        spec = self.spec
        driver = spec.driver if spec.driver_in_cluster and self.driver else _NONE
        return driver + spec.executor.times(self.executors)

    @property
    def need(self) -> Resources:
        return needed(self.spec)

    @property
    def whole(self) -> bool:
        assert self.spec.gang is not None
        return self.driver and self.executors >= self.spec.gang.executors

    @property
    def deadline(self) -> float | None:
        assert self.spec.gang is not None
        return None if self.since is None else self.since + self.spec.gang.timeout_s

    def reservation(self) -> Reservation:
        since = self.since if self.since is not None else 0.0
        deadline = self.deadline
        return Reservation(held=self.held, needed=needed(self.spec), since=since,
                           deadline=deadline if deadline is not None else 0.0)


class GangBook:
    """The reserving gangs (app id -> ``Hold``), kept by ``Scheduler`` through three verbs:
    ``expired`` (the holds whose timeout ran out, taken off), ``reserve`` (this step's heads
    that are gangs: holds kept, grown by the free room, dropped for gangs no longer a head),
    ``release`` (a gang admitted or gone)."""

    def __init__(self) -> None:
        self.holds: dict[str, Hold] = {}
        self.held_total = _NONE  # the sum of every hold's room
        self.need_total = _NONE  # the sum of what every hold needs whole
        self._count = 0

    def expired(self, now: float) -> list[Hold]:
        """The holds whose deadline is ``now`` or past, in FIFO order, released."""
        out = [h for h in self.holds.values()
               if (d := h.deadline) is not None and d <= now]
        for h in sorted(out, key=lambda h: h.order):
            self.release(h.spec.app_id)
        return sorted(out, key=lambda h: h.order)

    def reserve(self, now: float, heads: Iterable[AppSpec], free: Resources) -> None:
        """``heads``: the gangs at the heads of their queues this step, in rank order;
        ``free``: the cluster's room not held, granted or promised to anyone (reservations
        included in it). Keeps each head's hold, then gives what is free beyond all holds to
        the holds in FIFO order (module doc)."""
        heads = list(heads)
        wanted = {s.app_id for s in heads}
        for app_id in [a for a in self.holds if a not in wanted]:
            self.release(app_id)
        for spec in heads:
            hold = self.holds.get(spec.app_id)
            if hold is None:
                self._count += 1
                self.holds[spec.app_id] = Hold(spec, self._count)
            elif hold.spec is not spec:
                hold.spec = spec
        pool = free - self.held_total
        for hold in sorted(self.holds.values(), key=lambda h: h.order):
            if pool.cores <= 0 and pool.mem_mib <= 0:
                break
            before = hold.held
            pool = _grow(hold, pool)
            if hold.since is None and hold.held != before:
                hold.since = now
            if not hold.whole:
                # What it cannot use yet (less than its next unit) waits for more to free:
                # given to a later gang it would make a second partial reservation, the
                # two each holding part of what they need (module doc).
                break
        self._sum()

    def release(self, app_id: str) -> Hold | None:
        hold = self.holds.pop(app_id, None)
        if hold is not None:
            self._sum()
        return hold

    def next_deadline(self) -> float | None:
        return min((d for h in self.holds.values() if (d := h.deadline) is not None),
                   default=None)

    def reservations(self) -> dict[str, Reservation]:
        return {a: h.reservation() for a, h in self.holds.items()}

    def kept_from(self, room: Resources) -> Resources:
        """What arbitration may not divide of ``room`` (the executors' capacity less the
        executors held now, or the admitted apps' floors where those are more): what the
        reserving gangs need whole, at most that room. So an executor released is not granted
        to anyone again but stays free for the gangs, while nothing anyone holds now is taken
        back for them: the apps' targets still sum to what they hold."""
        need = self.need_total
        return Resources(min(need.cores, max(room.cores, 0)),
                         min(need.mem_mib, max(room.mem_mib, 0)))

    def _sum(self) -> None:
        held = need = _NONE
        for h in self.holds.values():
            held, need = held + h.held, need + h.need
        self.held_total, self.need_total = held, need


def _grow(hold: Hold, pool: Resources) -> Resources:
    """Hold's driver, then as many of its executors as ``pool`` has room for; what is left."""
    spec = hold.spec
    gang = spec.gang
    assert gang is not None
    if not hold.driver:
        driver = spec.driver if spec.driver_in_cluster else _NONE
        if not driver.fits_in_sum(pool):  # the sum; custom resources per worker
            return pool
        hold.driver = True
        pool = pool - driver
    size = spec.executor
    room = [gang.executors - hold.executors]
    if size.cores > 0:
        room.append(max(pool.cores, 0) // size.cores)
    if size.mem_mib > 0:
        room.append(max(pool.mem_mib, 0) // size.mem_mib)
    n = max(min(room), 0)
    hold.executors += n
    return pool - size.times(n)


def timed_out_reason(hold: Hold) -> str:
    """The reason a ``hard`` gang ends FAILED with, naming the gang and what it held."""
    gang = hold.spec.gang
    assert gang is not None
    return (f"gang of {gang.executors} executor(s) not whole after its {gang.timeout_s:g}s "
            f"timeout ({GangStyle.HARD.value}): it held {_res(hold.held)} of the "
            f"{_res(needed(hold.spec))} it needs ({hold.executors} of {gang.executors} "
            f"executor(s){_driver(hold)})")


def fell_back_reason(hold: Hold) -> str:
    gang = hold.spec.gang
    assert gang is not None
    return (f"gang of {gang.executors} executor(s) not whole after its {gang.timeout_s:g}s "
            f"timeout ({GangStyle.SOFT.value}): held {_res(hold.held)} of "
            f"{_res(needed(hold.spec))}, released; scheduled as an ordinary app from now on")


def _driver(hold: Hold) -> str:
    if not hold.spec.driver_in_cluster:
        return ""
    return ", its driver" if hold.driver else ", not its driver"


def _res(r: Resources) -> str:
    return f"{max(r.cores, 0)} cores/{max(r.mem_mib, 0)} MiB"
