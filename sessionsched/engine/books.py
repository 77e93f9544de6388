"""The engine's books: one ``AppRecord`` per app, and running totals over them.

The totals (``Ledger``) are what admission and arbitration read every cycle: drivers in the
cluster, executors held or promised, floors, per-queue usage. Summing them over 10k apps every
cycle would dominate the cycle, so the ledger keeps each app's last contribution and, when the
app changes, takes the old one out and puts the new one in. The totals are therefore always
equal to a sum over the books; ``Ledger.recount`` recomputes them from scratch to prove it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from ..model import AppSpec, AppState, Executor


@dataclass
class AppRecord:
    """The engine's books on one app. Read it through ``Scheduler.apps``; never write it."""

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
    reserved: int = 0  # executors still reserved for it (reserve admission), 0 once met
    reclaiming: dict[str, float | None] = field(default_factory=dict)  # executor -> kill deadline
    reason: str = ""  # why it is waiting, or how it got its last state

    @property
    def app_id(self) -> str:
        return self.spec.app_id

    @property
    def held(self) -> int:
        return len(self.executors)

    @property
    def floor(self) -> int:
        """Executors given before any share: max(minExecutors, outstanding reservation), never
        above what the app may hold (maxExecutors, spark.ego.slots.max)."""
        n = max(self.spec.min_executors, self.reserved)
        cap = self.spec.executor_cap
        return n if cap is None else min(n, cap)

    @property
    def rank(self) -> tuple[int, int, str]:
        """The engine's one order of apps: 1. priority, highest first; 2. submission sequence,
        oldest first; 3. app id (never reached: sequences are unique)."""
        return (-self.priority, self.spec.seq, self.spec.app_id)

    @property
    def on_books(self) -> bool:
        """Counted in the totals: launched and not ended, or ended but still holding executors."""
        return self.state.admitted or (self.state.terminal and bool(self.executors))


@dataclass(slots=True)
class Totals:
    """Sums over apps on the books (see ``contribution`` for what each app adds)."""

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
    demand_cores: int = 0

    def add(self, other: Totals, sign: int = 1) -> None:
        for f in _FIELDS:
            setattr(self, f, getattr(self, f) + sign * getattr(other, f))


_FIELDS = tuple(f.name for f in fields(Totals))


def contribution(rec: AppRecord, guaranteed: bool) -> Totals:
    """What one app on the books adds to the totals.

    A live (STARTING/RUNNING) app counts its driver (in-cluster: cores and memory; client mode:
    a driver slot), its floor, and as *committed* the executors it holds, was granted, or - when
    ``guaranteed`` (its queue admits by ``reserve``) - is promised as its floor. Its *usage* for
    admission fairness is held-or-granted executor cores plus its driver's cores wherever the
    driver runs. An ended app still holding executors counts only those executors.
    """
    spec = rec.spec
    size = spec.executor
    held = len(rec.executors)
    t = Totals(members=1, executor_cores=held * size.cores, demand_cores=rec.demand * size.cores)
    if not rec.state.admitted:
        t.committed_cores = held * size.cores
        t.committed_mem_mib = held * size.mem_mib
        return t
    t.live = 1
    t.starting = int(rec.state is AppState.STARTING)
    t.running = int(rec.state is AppState.RUNNING)
    floor = rec.floor
    t.floor_cores = floor * size.cores
    t.floor_mem_mib = floor * size.mem_mib
    promised = max(held, rec.grant, floor if guaranteed else 0)
    t.committed_cores = promised * size.cores
    t.committed_mem_mib = promised * size.mem_mib
    t.usage_cores = max(held, rec.grant) * size.cores + spec.driver.cores
    if spec.driver_in_cluster:
        t.driver_cores = spec.driver.cores
        t.driver_mem_mib = spec.driver.mem_mib
    else:
        t.client_drivers = 1
    return t


class Ledger:
    """Totals over all apps on the books, and per leaf queue."""

    def __init__(self) -> None:
        self.total = Totals()
        self.by_leaf: dict[str, Totals] = {}
        self._last: dict[str, tuple[str, Totals]] = {}

    def refresh(self, rec: AppRecord, guaranteed: bool) -> None:
        """Take the app's previous contribution out and its current one (if any) in."""
        old = self._last.pop(rec.app_id, None)
        if old is not None:
            leaf, t = old
            self.total.add(t, -1)
            self.by_leaf[leaf].add(t, -1)
        if rec.on_books:
            t = contribution(rec, guaranteed)
            self.total.add(t)
            self.by_leaf.setdefault(rec.spec.queue, Totals()).add(t)
            self._last[rec.app_id] = (rec.spec.queue, t)

    def leaf(self, name: str) -> Totals:
        return self.by_leaf.get(name) or Totals()

    @staticmethod
    def recount(records: Iterable[tuple[AppRecord, bool]]) -> Totals:
        """The total from scratch (for tests and checks)."""
        out = Totals()
        for rec, guaranteed in records:
            if rec.on_books:
                out.add(contribution(rec, guaranteed))
        return out
