"""The scheduler: ``Scheduler.step(now, events) -> decisions``.

The one place that decides who runs. It holds the books (apps, their states, executors,
targets) and reads no clock, opens no socket and starts no thread: the server, the simulator
and the tests drive it the same way and carry out what it decides.

A step, in order:
  1. apply the events to the books;
  2. StateAware fallback: an app STARTING for longer than its queue's ``starting_timeout``
     moves on to RUNNING (YuniKorn's 5-minute rule, made a queue setting);
  3. admission (``admission.plan_admissions``): launch the drivers that may start;
  4. arbitration (``arbitration.compute_targets``): each admitted app's executor target;
  5. grants: how much of its target each app may hold right now, so that executors still being
     taken from others are never promised twice (no overcommit);
  6. reclaim (``reclaim``): orders for apps holding more than their target, and kills of
     decommissioned executors past their deadline.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sortedcontainers import SortedList

from ..model import (
    Admission,
    AppSpec,
    AppState,
    Executor,
    Queue,
    QueueUsage,
    ReclaimMode,
    Resources,
)
from . import admission, arbitration, reclaim
from .events import (
    Adopted,
    CapacityChanged,
    Decision,
    DemandChanged,
    DriverExited,
    DriverStarted,
    Event,
    ExecutorsChanged,
    KillRequested,
    LaunchDriver,
    MarkState,
    PriorityChanged,
    QueuesChanged,
    Reclaim,
    SetTarget,
    StopDriver,
    Submitted,
    Tick,
)


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
        return max(self.spec.min_executors, self.reserved)


class Scheduler:
    def __init__(self, root: Queue, capacity: Resources = Resources(), driver_slots: int = 4):
        self.root = root
        self.capacity = capacity
        self.driver_slots = driver_slots
        self.apps: dict[str, AppRecord] = {}
        self._leaves: dict[str, Queue] = {q.name: q for q in root.leaves()}
        self._pending: dict[str, SortedList] = {name: SortedList() for name in self._leaves}
        self._admitted: dict[str, AppRecord] = {}  # STARTING/RUNNING, plus ended apps still holding executors
        self.waiting: dict[str, str] = {}  # leaf queue -> why its head waits (last step)

    # --- reading the books ----------------------------------------------------------------

    def queue(self, name: str) -> Queue:
        return self._leaves[name]

    def position(self, app_id: str) -> int | None:
        """1-based place of a queued app in its queue, or None if it is not queued."""
        rec = self.apps.get(app_id)
        if rec is None or rec.state is not AppState.ACCEPTED:
            return None
        return self._pending[rec.spec.queue].index(self._key(rec)) + 1

    def pending(self, queue: str) -> list[str]:
        """Queued app ids of a leaf queue, head first."""
        return [key[2] for key in self._pending[queue]]

    def usage(self) -> dict[str, QueueUsage]:
        out = {q.name: QueueUsage(q.name) for q in self.root.walk()}
        for name, pend in self._pending.items():
            out[name].pending = len(pend)
        for rec in self._admitted.values():
            u = out[rec.spec.queue]
            if rec.state is AppState.STARTING:
                u.starting += 1
            elif rec.state is AppState.RUNNING:
                u.running += 1
            u.executor_cores += rec.held * rec.spec.executor.cores
            if rec.spec.driver_in_cluster and rec.state.admitted:
                u.driver_cores += rec.spec.driver.cores
            u.demand_cores += rec.demand * rec.spec.executor.cores
        return out

    # --- the step -------------------------------------------------------------------------

    def step(self, now: float, events: Iterable[Event] = ()) -> list[Decision]:
        out: list[Decision] = []
        for event in events:
            self._apply(now, event, out)
        self._starting_timeouts(now, out)
        self._admit(now, out)
        self._arbitrate(out)
        self._reclaim(now, out)
        return out

    # 1. events

    def _apply(self, now: float, ev: Event, out: list[Decision]) -> None:
        if isinstance(ev, Submitted):
            self._submit(ev.spec)
            return
        if isinstance(ev, Adopted):
            self._adopt(ev)
            return
        if isinstance(ev, CapacityChanged):
            self.capacity = ev.capacity
            if ev.driver_slots is not None:
                self.driver_slots = ev.driver_slots
            return
        if isinstance(ev, QueuesChanged):
            self._requeue(ev.root)
            return
        if isinstance(ev, Tick):
            return
        rec = self.apps.get(ev.app_id)
        if rec is None:
            raise KeyError(f"unknown app {ev.app_id!r}")
        if isinstance(ev, PriorityChanged):
            self._set_priority(rec, ev.priority)
        elif isinstance(ev, KillRequested):
            self._kill(now, rec, out)
        elif isinstance(ev, DriverStarted):
            rec.spark_app_id = ev.spark_app_id or rec.spark_app_id
        elif isinstance(ev, DriverExited):
            self._driver_exited(now, rec, ev.exit_code, out)
        elif isinstance(ev, ExecutorsChanged):
            self._executors_changed(now, rec, ev.executors, out)
        elif isinstance(ev, DemandChanged):
            rec.demand = max(ev.demand, 0)
        else:  # pragma: no cover - the Event union is closed
            raise TypeError(f"not an event: {ev!r}")

    def _submit(self, spec: AppSpec) -> None:
        if spec.app_id in self.apps:
            raise ValueError(f"app {spec.app_id!r} was already submitted")
        if spec.queue not in self._leaves:
            raise ValueError(f"{spec.queue!r} is not a leaf queue")
        rec = AppRecord(spec=spec, priority=spec.priority)
        self.apps[spec.app_id] = rec
        self._pending[spec.queue].add(self._key(rec))

    def _adopt(self, ev: Adopted) -> None:
        """An app launched before a restart: back on the books without launching it again."""
        self._submit(ev.spec)
        rec = self.apps[ev.spec.app_id]
        self._pending[rec.spec.queue].remove(self._key(rec))
        rec.priority = ev.priority
        rec.state = ev.state
        rec.launched_at = ev.launched_at
        rec.first_executor_at = ev.first_executor_at
        if ev.state.admitted:
            self._admitted[rec.app_id] = rec

    def _requeue(self, root: Queue) -> None:
        leaves = {q.name: q for q in root.leaves()}
        orphaned = sorted(
            {r.spec.queue for r in self.apps.values() if not r.state.terminal} - leaves.keys()
        )
        if orphaned:
            raise ValueError(f"queues still hold apps and cannot be removed: {', '.join(orphaned)}")
        self.root = root
        self._leaves = leaves
        for name in leaves:
            self._pending.setdefault(name, SortedList())

    def _set_priority(self, rec: AppRecord, priority: int) -> None:
        if rec.state is AppState.ACCEPTED:
            pend = self._pending[rec.spec.queue]
            pend.remove(self._key(rec))
            rec.priority = priority
            pend.add(self._key(rec))
        else:
            rec.priority = priority

    def _kill(self, now: float, rec: AppRecord, out: list[Decision]) -> None:
        if rec.state.terminal:
            return
        if rec.state is AppState.ACCEPTED:
            self._pending[rec.spec.queue].remove(self._key(rec))
        else:
            out.append(StopDriver(rec.app_id))
        self._mark(now, rec, AppState.KILLED, "killed on request", out)

    def _driver_exited(self, now: float, rec: AppRecord, code: int, out: list[Decision]) -> None:
        rec.exit_code = code
        # A driver's executors die with it.
        rec.executors.clear()
        rec.reclaiming.clear()
        rec.demand = 0
        if not rec.state.terminal:
            state = AppState.FINISHED if code == 0 else AppState.FAILED
            self._mark(now, rec, state, f"driver exited with code {code}", out)
        self._admitted.pop(rec.app_id, None)

    def _executors_changed(
        self, now: float, rec: AppRecord, executors: tuple[Executor, ...], out: list[Decision]
    ) -> None:
        rec.executors = {e.executor_id: e for e in executors}
        for eid in list(rec.reclaiming):
            if eid not in rec.executors:
                del rec.reclaiming[eid]
        if rec.reserved and rec.held >= rec.reserved:
            rec.reserved = 0
        if executors and rec.first_executor_at is None:
            rec.first_executor_at = now
        if executors and rec.state is AppState.STARTING:
            self._mark(now, rec, AppState.RUNNING, "first executor registered", out)
        if rec.state.terminal and not executors:
            self._admitted.pop(rec.app_id, None)

    def _mark(self, now: float, rec: AppRecord, state: AppState, why: str, out: list[Decision]) -> None:
        rec.state = state
        rec.reason = why
        if state.terminal:
            rec.finished_at = now
            rec.target = rec.grant = 0
            rec.reserved = 0
            if not rec.executors:
                self._admitted.pop(rec.app_id, None)
        out.append(MarkState(rec.app_id, state, why))

    # 2. StateAware fallback

    def _starting_timeouts(self, now: float, out: list[Decision]) -> None:
        for rec in list(self._admitted.values()):
            if rec.state is not AppState.STARTING:
                continue
            timeout = self._leaves[rec.spec.queue].starting_timeout_s
            if now - rec.launched_at >= timeout:
                self._mark(now, rec, AppState.RUNNING, f"no executor after {timeout:g}s: starting timeout", out)

    # 3. admission

    def _admit(self, now: float, out: list[Decision]) -> None:
        views = []
        starting: dict[str, int] = {}
        for rec in self._admitted.values():
            if rec.state is AppState.STARTING:
                starting[rec.spec.queue] = starting.get(rec.spec.queue, 0) + 1
        for name, pend in self._pending.items():
            if not pend:
                continue
            views.append(
                admission.LeafView(
                    queue=self._leaves[name],
                    pending=_PendingSpecs(pend, self.apps),
                    priority_of=_PriorityOf(self.apps),
                    starting=starting.get(name, 0),
                )
            )
        if not views:
            self.waiting = {}
            return
        plan = admission.plan_admissions(self.root, views, self._room())
        self.waiting = plan.waiting
        for app_id in plan.admit:
            rec = self.apps[app_id]
            self._pending[rec.spec.queue].remove(self._key(rec))
            rec.launched_at = now
            if self._leaves[rec.spec.queue].admission is Admission.RESERVE:
                rec.reserved = admission.reservation(rec.spec)
            self._admitted[app_id] = rec
            out.append(LaunchDriver(app_id))
            self._mark(now, rec, AppState.STARTING, "driver launched", out)

    def _room(self) -> admission.Room:
        drivers = Resources()
        in_use = Resources()
        floors = Resources()
        admitted_in: dict[str, int] = {}
        usage: dict[str, float] = {}
        client_drivers = 0
        ancestry = self._ancestry()
        for rec in self._admitted.values():
            spec = rec.spec
            in_use = in_use + spec.executor.times(max(rec.held, rec.grant))
            if not rec.state.admitted:
                continue
            cores = max(rec.held, rec.grant) * spec.executor.cores
            if spec.driver_in_cluster:
                drivers = drivers + spec.driver
                cores += spec.driver.cores
            else:
                client_drivers += 1
            floors = floors + spec.executor.times(rec.floor)
            for name in ancestry[spec.queue]:
                admitted_in[name] = admitted_in.get(name, 0) + 1
                usage[name] = usage.get(name, 0.0) + cores
        return admission.Room(
            free=self.capacity - drivers - in_use,
            uncommitted=self.capacity - drivers - floors,
            driver_slots_free=self.driver_slots - client_drivers,
            admitted_in=admitted_in,
            usage_cores=usage,
        )

    def _ancestry(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}

        def walk(q: Queue, path: tuple[str, ...]) -> None:
            path = path + (q.name,)
            if q.is_leaf:
                out[q.name] = path
            for c in q.children:
                walk(c, path)

        walk(self.root, ())
        return out

    # 4. + 5. arbitration and grants

    def _arbitrate(self, out: list[Decision]) -> None:
        live = [r for r in self._admitted.values() if r.state.admitted]
        drivers = Resources()
        for rec in live:
            if rec.spec.driver_in_cluster:
                drivers = drivers + rec.spec.driver
        claims = []
        for rec in live:
            cap = rec.spec.executor_cap
            want = max(rec.demand, rec.floor)
            if cap is not None:
                want = min(want, cap)
            claims.append(
                arbitration.Claim(
                    app_id=rec.app_id,
                    queue=rec.spec.queue,
                    priority=rec.priority,
                    seq=rec.spec.seq,
                    executor=rec.spec.executor,
                    floor=min(rec.floor, want),
                    want=want,
                )
            )
        targets = arbitration.compute_targets(self.root, self.capacity - drivers, claims)
        self._grant(live, targets, self.capacity - drivers, out)

    def _grant(self, live: list[AppRecord], targets: dict[str, int], capacity: Resources, out: list[Decision]) -> None:
        """Grant = target, except that growth only comes out of what nobody holds or was granted."""
        free = capacity
        for rec in self._admitted.values():
            if not rec.state.admitted:  # ended, executors not yet gone
                free = free - rec.spec.executor.times(rec.held)
        base: dict[str, int] = {}
        for rec in live:
            t = targets[rec.app_id]
            base[rec.app_id] = max(rec.held, min(rec.grant, t))
            free = free - rec.spec.executor.times(base[rec.app_id])
        for rec in sorted(live, key=lambda r: (-r.priority, r.spec.seq, r.app_id)):
            t = targets[rec.app_id]
            b = base[rec.app_id]
            if t <= b:
                grant = t
            else:
                size = rec.spec.executor
                more = t - b
                if size.cores > 0:
                    more = min(more, max(free.cores, 0) // size.cores)
                if size.mem_mib > 0:
                    more = min(more, max(free.mem_mib, 0) // size.mem_mib)
                free = free - size.times(more)
                grant = b + more
            if (t, grant) != (rec.target, rec.grant):
                out.append(SetTarget(rec.app_id, t, grant))
            rec.target, rec.grant = t, grant

    # 6. reclaim

    def _reclaim(self, now: float, out: list[Decision]) -> None:
        for rec in self._admitted.values():
            if not rec.state.admitted:
                continue
            queue = self._leaves[rec.spec.queue]
            late = reclaim.overdue(rec.reclaiming, rec.executors, now)
            if late:
                for eid in late:
                    rec.reclaiming[eid] = None
                out.append(Reclaim(rec.app_id, tuple(late), ReclaimMode.KILL, now))
            surplus = rec.held - len(rec.reclaiming) - rec.target
            mode = queue.reclaim_mode
            victims = reclaim.choose_victims(rec.executors.values(), rec.reclaiming, surplus, mode)
            if not victims:
                continue
            deadline = reclaim.deadline_for(mode, now, queue.reclaim_timeout_s)
            for e in victims:
                rec.reclaiming[e.executor_id] = deadline if mode is ReclaimMode.DECOMMISSION else None
            out.append(Reclaim(rec.app_id, tuple(e.executor_id for e in victims), mode, deadline))

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _key(rec: AppRecord) -> tuple[int, int, str]:
        return admission.pending_key(rec.priority, rec.spec)


class _PendingSpecs:
    """A read-only sequence of AppSpec over a queue's sorted keys (no copy of 100k entries)."""

    def __init__(self, keys: SortedList, apps: dict[str, AppRecord]):
        self._keys = keys
        self._apps = apps

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i: int) -> AppSpec:
        return self._apps[self._keys[i][2]].spec


class _PriorityOf:
    def __init__(self, apps: dict[str, AppRecord]):
        self._apps = apps

    def __getitem__(self, app_id: str) -> int:
        return self._apps[app_id].priority
