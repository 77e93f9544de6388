"""The engine's books: one ``AppRecord`` per app, running totals over them, and the apps'
deadlines (``Deadlines``).

The totals (``Ledger``) are what admission and arbitration read every cycle: drivers in the
cluster, executors held or promised, floors, per-queue usage. Summing them over 10k apps every
cycle would dominate the cycle, so the ledger keeps each app's last contribution and, when the
app changes, takes the old one out and puts the new one in. The totals are therefore always
equal to a sum over the books; ``Ledger.recount`` recomputes them from scratch to prove it.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import compress
from typing import NamedTuple

from ..model import Admission, AppSpec, AppState, Executor, Queue
from ..model.custom import Custom, combine
from ..model.profiles import Profiles, held_by_shape
from .host_room import host_need
from .rank import Rank, rank
from .room.commitment import custom_with


@dataclass(slots=True)
class AppRecord:
    """The engine's books on one app. Outside the engine read it through ``Scheduler.apps``
    and never write it; inside, an event handler that changes its facts tells the books
    (``app_books.Books.changed``) so that every index over it follows."""

    spec: AppSpec
    priority: int
    state: AppState = AppState.ACCEPTED
    launched_at: float | None = None
    first_executor_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    spark_app_id: str | None = None
    executors: dict[str, Executor] = field(default_factory=dict)
    demand: int = 0
    target: int = 0
    grant: int = 0
    profiles: Profiles = ()  # its resource profiles, when it reported more than the default
    grants: tuple[tuple[int, int], ...] = ()  # ``grant`` per profile (``placement.profiles``)
    reserved: int = 0  # executors still reserved for it (reserve admission), 0 once met
    reclaiming: dict[str, float | None] = field(default_factory=dict)  # executor -> kill deadline
    ahead: bool = False  # admitted ahead of the room for its first executors (``admission``)
    up_at: float | None = None  # its driver reported up (``DriverStarted``)
    quiet_since: float | None = None  # its driver up, no executor held or asked for (``quiet``)
    reason: str = ""  # why it is waiting, or how it got its last state
    app_id: str = field(init=False)  # the spec's, read by every book for every change
    # (spec, the spec's part of ``floor``: minExecutors or a gang's N, its cap): ``floor`` is
    # read several times for every changed app, and only ``reserved`` changes - or the spec,
    # when a soft gang falls back (``gang.phase``): then it is derived again.
    _floor_of: tuple = field(init=False, repr=False, compare=False)
    _rank: Rank = field(init=False, repr=False, compare=False)  # ``rank`` at its last priority

    def __post_init__(self) -> None:
        self.app_id = self.spec.app_id
        self._derive()
        self._rank = rank(self.priority, self.spec.seq, self.app_id)

    def _derive(self) -> None:
        spec = self.spec
        gang = spec.gang  # a gang's N executors: its floor while it runs (docs/design/gangs.md)
        least = spec.min_executors if gang is None else max(spec.min_executors, gang.executors)
        self._floor_of = (spec, least, spec.executor_cap)

    @property
    def held(self) -> int:
        return len(self.executors)

    @property
    def floor(self) -> int:
        """Executors given before any share: max(minExecutors, outstanding reservation, a gang's
        N), never above what the app may hold (maxExecutors, spark.ego.slots.max)."""
        spec, least, cap = self._floor_of
        if spec is not self.spec:
            self._derive()
            spec, least, cap = self._floor_of
        n = self.reserved
        if n < least:
            n = least
        return n if cap is None or n <= cap else cap

    @property
    def rank(self) -> Rank:
        """Its place in the engine's one order of apps (``rank``). Kept: read for every app
        that moves, several times a cycle; built again when its priority changed."""
        r = self._rank
        if r[0] != -self.priority:
            r = self._rank = rank(self.priority, self.spec.seq, self.app_id)
        return r

    @property
    def on_books(self) -> bool:
        """Counted in the totals: launched and not ended, or ended but still holding executors."""
        return self.state.admitted or (self.state.terminal and bool(self.executors))


class Totals(NamedTuple):
    """Sums over apps on the books (see ``contribution`` for what each app adds). Immutable:
    ``plus``/``minus`` give new totals."""

    members: int = 0
    live: int = 0
    starting: int = 0
    running: int = 0
    client_drivers: int = 0
    driver_cores: int = 0
    driver_mem_mib: int = 0
    floor_cores: int = 0
    floor_mem_mib: int = 0
    committed_cores: int = 0
    committed_mem_mib: int = 0
    usage_cores: int = 0
    executor_cores: int = 0
    executor_mem_mib: int = 0  # of executors held (a gang's room is what they leave: ``gang``)
    demand_cores: int = 0
    alone_driver_cores: int = 0  # of ``driver_cores``: drivers working alone (``works_alone``)
    alone_driver_mem_mib: int = 0
    whole_cores: int = 0  # in-cluster driver + most executors it may hold (``whole``), if capped
    whole_mem_mib: int = 0
    unbounded: int = 0  # live apps without a cap on their executors
    ahead: int = 0  # STARTING apps admitted ahead (``AppRecord.ahead``), still without executor
    host_driver_cores: int = 0  # drivers on the scheduler's host (``host_room.host_need``)
    host_driver_mem_mib: int = 0

    def plus(self, other: Totals) -> Totals:
        return Totals._make(map(operator.add, self, other))

    def minus(self, other: Totals) -> Totals:
        return Totals._make(map(operator.sub, self, other))


NOTHING = Totals()


def whole(spec: AppSpec) -> tuple[int, int] | None:
    """The most an app can ever hold in the cluster, (cores, MiB): its in-cluster driver and
    every executor it may hold (maxExecutors, spark.ego.slots.max); None if uncapped."""
    cap = spec.executor_cap
    if cap is None:
        return None
    driver = spec.driver if spec.driver_in_cluster else None
    return (cap * spec.executor.cores + (driver.cores if driver else 0),
            cap * spec.executor.mem_mib + (driver.mem_mib if driver else 0))


IDLE_AFTER_S = 5.0  # a driver up this long without asking for an executor is idle


def works_alone(rec: AppRecord) -> bool:
    """A RUNNING driver that holds no executor and asks for none: past its starting timeout
    (the StateAware fallback's reading: an app whose work is done in the driver alone -
    YuniKorn's reason for the timeout, "not all applications will request more than one
    allocation"), idle since it came up (``starting_deadline``), or a session between jobs
    whose executors were given back. It waits for nothing, so ``demand`` admission does not
    count it toward ``max_driver_fraction``; the moment it asks for an executor (demand) or
    holds one, it is an ordinary driver again."""
    return rec.state is AppState.RUNNING and rec.demand == 0 and not rec.executors


def quiet(rec: AppRecord, now: float) -> None:
    """Keeps ``quiet_since``: since when its driver, up (reported, or adopted RUNNING), has
    held no executor and asked for none - a session between its user's jobs (a job asks for
    executors as soon as it has tasks). Called after each fact it reads changes."""
    up = rec.up_at is not None or rec.state is AppState.RUNNING
    if rec.demand or rec.executors or not up or rec.state.terminal:
        rec.quiet_since = None
    elif rec.quiet_since is None:
        rec.quiet_since = now


def starting_deadline(rec: AppRecord, leaf: Queue) -> float:
    """When a STARTING app stops counting as starting (it is marked RUNNING, ``works_alone``):
    its queue's ``starting_timeout`` after its launch - or, in a ``demand`` queue, sooner:
    ``IDLE_AFTER_S`` after its driver came up, if it has asked for no executor (an idle
    session: its first executor is no longer presumed wanted, docs/design/admission.md)."""
    at = rec.launched_at + leaf.starting_timeout_s
    if (rec.up_at is not None and rec.demand == 0 and not rec.executors
            and leaf.admission is Admission.DEMAND and rec.up_at + IDLE_AFTER_S < at):
        return rec.up_at + IDLE_AFTER_S
    return at


def contribution(rec: AppRecord, guaranteed: bool) -> Totals:
    """What one app on the books adds to the totals.

    A live (STARTING/RUNNING) app counts its driver (in-cluster: cores and memory; on the
    scheduler's host: a driver slot and its ``host_need``; with its user: nothing), its floor,
    and as *committed* the executors it holds, was granted, or - when ``guaranteed`` (its
    queue admits by ``reserve``) - is promised as its floor. Its *usage* for admission
    fairness is held-or-granted executor cores plus its driver's cores wherever the driver
    runs; an in-cluster driver that ``works_alone`` is counted again apart, and so is the
    ``whole`` app (or, if uncapped, that it is ``unbounded``). An ended app still holding
    executors counts only those executors.
    """
    return Totals._make(_counts(rec, guaranteed))


def _counts(rec: AppRecord, guaranteed: bool) -> tuple[int, ...]:
    """``contribution`` as a plain tuple in ``Totals``' field order: the ledger's refresh runs
    for every changed app, several hundred a busy cycle, and a positional tuple costs a
    fraction of a named tuple built by keyword."""
    spec = rec.spec
    size = spec.executor
    cores, mem = size.cores, size.mem_mib
    held = len(rec.executors)
    # Held executors each by their resource profile's shape; the rest by the app's own.
    h_cores, h_mem = (held_by_shape(rec.executors.values(), rec.profiles, size)
                      if rec.profiles else (held * cores, held * mem))
    state = rec.state
    if not state.admitted:
        return (1, 0, 0, 0, 0, 0, 0, 0, 0, h_cores, h_mem, 0, h_cores,
                h_mem, rec.demand * cores, 0, 0, 0, 0, 0, 0, 0, 0)
    floor = rec.floor
    grant = rec.grant
    most = held if held > grant else grant  # comparisons, not max calls: ~750 apps a cycle
    promised = floor if guaranteed and floor > most else most
    driver = spec.driver
    starting = state is AppState.STARTING
    host_cores = host_mem = 0
    if spec.driver_in_cluster:
        client, d_cores, d_mem = 0, driver.cores, driver.mem_mib
        alone = works_alone(rec)
    else:
        client, d_cores, d_mem, alone = int(spec.driver_on_host), 0, 0, False
        if client:
            on_host = host_need(spec)
            host_cores, host_mem = on_host.cores, on_host.mem_mib
    cap = spec.executor_cap
    if cap is None:
        whole_cores = whole_mem = 0
        unbounded = 1
    else:
        whole_cores, whole_mem, unbounded = cap * cores + d_cores, cap * mem + d_mem, 0
    return (
        1, 1, int(starting), int(state is AppState.RUNNING), client, d_cores, d_mem,
        floor * cores, floor * mem, h_cores + (promised - held) * cores,
        h_mem + (promised - held) * mem, h_cores + (most - held) * cores + driver.cores,
        h_cores, h_mem, rec.demand * cores,
        driver.cores if alone else 0, driver.mem_mib if alone else 0,
        whole_cores, whole_mem, unbounded, int(starting and rec.ahead and not held),
        host_cores, host_mem,
    )


def _custom_floor(rec: AppRecord) -> Custom:
    """The custom resources of an admitted app's executor floor and in-cluster driver."""
    return custom_with(rec.spec, rec.floor) if rec.state.admitted else ()


_USAGE = Totals._fields.index("usage_cores")
_FIELDS = range(len(Totals._fields))


class Ledger:
    """Totals over all apps on the books, and per leaf queue.

    Kept as plain lists of ints, changed in place by each app's difference; the ``Totals``
    read (``total``, ``leaf``) are built when asked after a change, once."""

    def __init__(self) -> None:
        self._total = list(NOTHING)
        self._leaves: dict[str, list[int]] = {}
        self._frozen: dict[str | None, Totals] = {}  # leaf (None: the total) -> as last read
        self._last: dict[str, tuple[int, ...]] = {}  # app -> its counts (its leaf never changes)
        self._watchers: list[set[str]] = []  # ``watch``
        # Custom resources (GPUs) of the admitted apps' executor floors and in-cluster drivers,
        # summed apart: few apps ask any, and the counts above are plain ints.
        self.floor_custom: Custom = ()
        self._custom: dict[str, Custom] = {}

    def refresh(self, rec: AppRecord, guaranteed: bool) -> None:
        """Take the app's previous contribution out and its current one (if any) in."""
        new = _counts(rec, guaranteed) if rec.on_books else None
        app_id = rec.app_id
        old = self._last.get(app_id)
        if new == old:
            return
        leaf = rec.spec.queue
        sums = self._leaves.get(leaf)
        if sums is None:
            sums = self._leaves[leaf] = list(NOTHING)
        total = self._total
        # Whole tuples added or taken out in C (``map``); a change moves a few of the counts,
        # found in C too (``compress``): only those are added by hand.
        if old is None:
            self._last[app_id] = new
            total[:] = map(operator.add, total, new)
            sums[:] = map(operator.add, sums, new)
        elif new is None:
            del self._last[app_id]
            total[:] = map(operator.sub, total, old)
            sums[:] = map(operator.sub, sums, old)
        else:
            self._last[app_id] = new
            moved = list(map(operator.sub, new, old))
            for i in compress(_FIELDS, moved):
                total[i] += moved[i]
                sums[i] += moved[i]
        self._frozen.pop(None, None)
        self._frozen.pop(leaf, None)
        for watcher in self._watchers:
            watcher.add(leaf)
        if rec.spec.executor.custom or rec.spec.driver.custom:
            self._refresh_custom(rec, new is not None)

    def _refresh_custom(self, rec: AppRecord, on_books: bool) -> None:
        new = _custom_floor(rec) if on_books else ()
        old = self._custom.pop(rec.app_id, ())
        if new:
            self._custom[rec.app_id] = new
        if new != old:
            self.floor_custom = combine(combine(self.floor_custom, old, -1), new, 1)

    def watch(self) -> set[str]:
        """A set the ledger adds each leaf to whose totals change; the watcher empties it."""
        moved: set[str] = set()
        self._watchers.append(moved)
        return moved

    @property
    def total(self) -> Totals:
        t = self._frozen.get(None)
        if t is None:
            t = self._frozen[None] = Totals._make(self._total)
        return t

    def leaf(self, name: str) -> Totals:
        t = self._frozen.get(name)
        if t is None:
            sums = self._leaves.get(name)
            t = self._frozen[name] = NOTHING if sums is None else Totals._make(sums)
        return t

    def usage_of(self, app_id: str) -> int:
        """An app's ``usage_cores`` as counted now (0 when it is not on the books)."""
        last = self._last.get(app_id)
        return 0 if last is None else last[_USAGE]

    @staticmethod
    def recount_custom(records: Iterable[AppRecord]) -> Custom:
        """``floor_custom`` from scratch (for checks)."""
        out: Custom = ()
        for rec in records:
            if rec.on_books:
                out = combine(out, _custom_floor(rec), 1)
        return out

    @staticmethod
    def recount(records: Iterable[tuple[AppRecord, bool]]) -> Totals:
        """The total from scratch (for tests and checks)."""
        out = NOTHING
        for rec, guaranteed in records:
            if rec.on_books:
                out = out.plus(contribution(rec, guaranteed))
        return out


class Deadlines:
    """Apps' deadlines, soonest first (the STARTING apps' timeouts, the queued apps'
    ``max_wait``). A heap whose entries are never searched for: when an app's deadline moves
    or goes, its old entry is dropped once it reaches the top and ``current`` no longer gives
    it. O(log n) a change; ``due`` costs the apps that are due, not the apps that wait."""

    def __init__(self, current: Callable[[str], float | None]) -> None:
        self._current = current  # app id -> its deadline as it stands now; None: it has none
        self._heap: list[tuple[float, str]] = []

    def add(self, app_id: str) -> None:
        at = self._current(app_id)
        if at is not None:
            heapq.heappush(self._heap, (at, app_id))

    def reset(self, app_ids: Iterable[str]) -> None:
        """Every deadline again (a new queue tree may have changed the limits)."""
        self._heap = [(at, a) for a in app_ids if (at := self._current(a)) is not None]
        heapq.heapify(self._heap)

    def next(self) -> float | None:
        heap = self._heap
        while heap and self._current(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # stale
        return heap[0][0] if heap else None

    def due(self, now: float) -> list[str]:
        """The apps whose deadline is at or before ``now``, soonest first; taken out."""
        out: dict[str, None] = {}
        while (at := self.next()) is not None and at <= now:
            out[heapq.heappop(self._heap)[1]] = None
        return list(out)

    def entries(self) -> set[tuple[float, str]]:
        """Every (deadline, app) in the heap, stale ones too (``selfcheck``)."""
        return set(self._heap)
