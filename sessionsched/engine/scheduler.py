"""The scheduler: ``Scheduler.step(now, events) -> decisions``.

The one place that decides who runs. It holds the books (apps, their states, executors,
targets) and reads no clock, opens no socket and starts no thread: the server, the simulator
and the tests drive it the same way and carry out what it decides.

A step, in order:
  0. check every event (``validate``); a bad one refuses the whole batch with one line and
     changes nothing;
  1. apply the events to the books;
  2. StateAware fallback: an app STARTING for at least its queue's ``starting_timeout`` moves
     on to RUNNING (YuniKorn's 5-minute rule, made a queue setting);
  3. admission (``admission.plan_admissions``): launch the drivers that may start;
  4. arbitration (``arbitration.Arbiter``): each admitted app's executor target;
  5. grants (``grants``): how much of its target each app may hold right now, so that
     executors still being taken from others are never promised twice (no overcommit);
  6. reclaim (``reclaim``): kills of decommissioned executors past their deadline, and orders
     for apps holding more than their target - only as many as the short apps' deficit needs
     beyond free capacity and the orders already out, taken from the lowest-ranked apps above
     their target first. An app whose own demand dipped is not made to shrink unless someone
     else needs its executors (else stage tails would churn executors; see ``reclaim``).

Decisions come out in that order. Within phases 2, 5 and 6 they are in app rank order
(1. priority, highest first; 2. submission sequence; 3. app id); launches in the order
admission chose. The same events in the same order give the same decisions, in a long-lived
scheduler or in a fresh one fed the same history.

Cost: the books keep running totals (``books.Ledger``), the arbiter reuses last cycle's leaf
results, and grants and reclaims only look at apps that changed, so a cycle costs about the
number of changed apps and queues, not of all apps (see ``benchmarks/engine_cycle.py``).
Reclaim reads the deficit and what is being freed from running sums (``grants.Grants``) and
keeps the apps above their target in rank order, so it walks them only while there is a need.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable

from sortedcontainers import SortedList

from ..model import (
    AppState,
    Queue,
    QueueUsage,
    Resources,
)
from . import admission, lifecycle, reclaim
from .agent_terms import launch_decision
from .arbitration import Arbiter, Claim
from .books import AppRecord, Ledger
from .budget import DEFAULT as DEFAULT_BUDGET
from .budget import CycleBudget
from .events import (
    Decision,
    Event,
    MarkState,
    SetTarget,
)
from .grants import Grants
from .launching import LaunchBook
from .needs import NeedBook
from .tree import QueueTree
from .validate import check_events
from .view import EngineView, ViewKeeper, touched_by

__all__ = ["AppRecord", "Scheduler"]


_NOTHING = Resources()


class Scheduler:
    """The engine. ``root``: the queue tree; ``capacity``: cluster cores and memory for the
    managed apps' executors and in-cluster drivers; ``driver_slots``: client-mode drivers the
    scheduler host may run at once. Both change by ``CapacityChanged``.

    Outside the engine, read ``view()`` (a frozen ``EngineView``), never the books themselves;
    ``next_wakeup()`` tells a driver of the engine when to step without news, and ``audit()``
    checks the running totals against the books (tests). The engine's own tests read ``apps``
    (app id -> ``AppRecord``), ``waiting``, ``position()``, ``pending()`` and ``usage()``.
    """

    def __init__(self, root: Queue, capacity: Resources = _NOTHING, driver_slots: int = 4,
                 budget: CycleBudget = DEFAULT_BUDGET):
        self.capacity = capacity
        self.driver_slots = driver_slots
        self.budget = budget
        self._more_to_admit: float | None = None  # the last step, if its slice was used up
        self.apps: dict[str, AppRecord] = {}
        self._priority_of = admission.PriorityOf(self.apps)
        self.waiting: dict[str, str] = {}  # leaf queue -> why its head waits (last step)
        self._pending: dict[str, SortedList] = {}
        self._views = ViewKeeper()
        self._starting: dict[str, AppRecord] = {}
        # (deadline, app, launched_at) of STARTING apps, soonest first; entries of apps that
        # left STARTING are dropped when they reach the top (``_top_starting``).
        self._starting_due: list[tuple[float, str, float]] = []
        self._set_tree(root)
        # On the books: STARTING/RUNNING, or ended and still holding executors.
        self._admitted: dict[str, AppRecord] = {}
        self._ledger = Ledger()
        self._needs = NeedBook()  # elastic demand per leaf and priority (``demand`` admission)
        self._launching = LaunchBook()  # driver-heavy apps, driver not up (``demand`` admission)
        self._arbiter = Arbiter()
        self._grants = Grants()
        self._reclaimer = reclaim.Reclaimer()
        self._claimed: dict[str, tuple] = {}  # app -> what its claim was built from
        self._dirty: set[str] = set()  # changed since the totals were last brought up to date
        self._touched: set[str] = set()  # changed this step: grants and reclaim look at them

    def _set_tree(self, root: Queue) -> None:
        self._views.touch_all()
        self.root = root
        self._tree = QueueTree(root)
        self._leaves = {name: self._tree.node[name] for name in self._tree.leaves}
        # Leaves whose apps' floors are guaranteed (``_guaranteed``): asked for every change.
        self._reserving = frozenset(
            name for name, q in self._leaves.items() if admission.mode_of(q).reserves)
        self._weight_shares = functools.lru_cache(maxsize=64)(
            functools.partial(admission.weight_shares, root))  # by the set of busy leaves
        # A queue's starting_timeout may have changed: every deadline again.
        self._starting_due = []
        for rec in self._starting.values():
            self._now_starting(rec)
        for name in self._leaves:
            self._pending.setdefault(name, SortedList())
        for name in [n for n, pend in self._pending.items() if n not in self._leaves and not pend]:
            del self._pending[name]

    # --- reading the books ----------------------------------------------------------------

    def view(self) -> EngineView:
        """The books as they stand, frozen (``view``): what everyone outside the engine reads.
        The same object again while nothing changed."""
        return self._views.take(self.root, self.capacity, self.driver_slots, self.apps,
                                self._pending, self.waiting, self.usage)

    def queue(self, name: str) -> Queue:
        return self._leaves[name]

    def position(self, app_id: str) -> int | None:
        """1-based place of a queued app in its queue, or None if it is not queued."""
        rec = self.apps.get(app_id)
        if rec is None or rec.state is not AppState.ACCEPTED:
            return None
        return self._pending[rec.spec.queue].index(rec.rank) + 1

    def pending(self, queue: str) -> list[str]:
        """Queued app ids of a leaf queue, head first."""
        return [key[2] for key in self._pending[queue]]

    def usage(self) -> dict[str, QueueUsage]:
        """Per queue (parents sum their children): apps pending/starting/running, executor and
        in-cluster driver cores held, demand in cores. O(queues)."""
        out = {q.name: QueueUsage(q.name) for q in self.root.walk()}
        for leaf, path in self._tree.path.items():
            t = self._ledger.leaf(leaf)
            pending = len(self._pending.get(leaf, ()))
            for q in path:
                u = out[q.name]
                u.pending += pending
                u.starting += t.starting
                u.running += t.running
                u.executor_cores += t.executor_cores
                u.driver_cores += t.driver_cores
                u.demand_cores += t.demand_cores
        return out

    def next_wakeup(self) -> float | None:
        """The earliest time at which a step without events may decide something (a starting
        timeout or a decommission deadline), or None. A caller that steps on events and at this
        time misses nothing; it may be early (the executor may already be gone)."""
        times = []
        if self._top_starting() is not None:
            times.append(self._starting_due[0][0])
        deadline = self._reclaimer.next_deadline()
        if deadline is not None:
            times.append(deadline)
        if self._more_to_admit is not None:
            times.append(self._more_to_admit)  # the admission slice continues (``budget``)
        return min(times, default=None)

    def audit(self) -> list[str]:
        """Check the running totals against the books, from scratch (``audit.audit``)."""
        from .audit import audit

        return audit(self)

    # --- the step -------------------------------------------------------------------------

    def step(self, now: float, events: Iterable[Event] = ()) -> list[Decision]:
        events = list(events)
        check_events(events, self.apps, self._leaves, self._occupied_leaves)
        out: list[Decision] = []
        for event in events:
            self._apply(now, event, out)
        self._starting_timeouts(now, out)
        self._sync()
        self._admit(now, out)
        self._sync()
        changed = self._arbiter.compute(self.root, self._executor_capacity())
        self._grant(changed, out)
        self._reclaim(now, changed, out)
        self._touched = set()
        self._sync_grants()
        self._views.touch(touched_by(events, out))
        return out

    # 1. events

    def _apply(self, now: float, ev: Event, out: list[Decision]) -> None:
        lifecycle.ON_EVENT[type(ev)](self, now, ev, out)

    def _mark(
        self, now: float, rec: AppRecord, state: AppState, why: str, out: list[Decision]
    ) -> None:
        rec.state = state
        rec.reason = why
        if state is AppState.STARTING:
            self._now_starting(rec)
        else:
            self._starting.pop(rec.app_id, None)
        if state.terminal:
            rec.finished_at = now
            rec.target = rec.grant = 0
            rec.reserved = 0
        self._dirty.add(rec.app_id)
        out.append(MarkState(
            rec.app_id, state, why, at=now,
            first_executor_at=rec.first_executor_at if state is AppState.RUNNING else None,
            exit_code=rec.exit_code if state.terminal else None,
        ))

    # 2. StateAware fallback

    def _now_starting(self, rec: AppRecord) -> None:
        self._starting[rec.app_id] = rec
        timeout = self._leaves[rec.spec.queue].starting_timeout_s
        heapq.heappush(self._starting_due,
                       (rec.launched_at + timeout, rec.app_id, rec.launched_at))

    def _top_starting(self) -> AppRecord | None:
        """The STARTING app whose timeout comes first (stale heap entries dropped)."""
        due = self._starting_due
        while due:
            _, app_id, launched_at = due[0]
            rec = self._starting.get(app_id)
            if rec is not None and rec.launched_at == launched_at:
                return rec
            heapq.heappop(due)
        return None

    def _starting_timeouts(self, now: float, out: list[Decision]) -> None:
        """O(apps timing out x log n): the deadlines are in a heap, not scanned."""
        late = []
        while (rec := self._top_starting()) is not None:
            timeout = self._leaves[rec.spec.queue].starting_timeout_s
            if now - rec.launched_at < timeout:
                break
            heapq.heappop(self._starting_due)
            late.append((rec.rank, rec, timeout))
        for _, rec, timeout in sorted(late, key=lambda x: x[0]):
            why = f"no executor after {timeout:g}s: starting timeout"
            self._mark(now, rec, AppState.RUNNING, why, out)

    # 3. admission

    def _admit(self, now: float, out: list[Decision]) -> None:
        views = [
            admission.LeafView(
                queue=self._leaves[name],
                pending=admission.PendingSpecs(pend, self.apps),
                priority_of=self._priority_of,
                starting=self._ledger.leaf(name).starting,
            )
            for name, pend in self._pending.items()
            if pend
        ]
        if not views:
            self.waiting = {}
            self._more_to_admit = None
            return
        plan = admission.plan_admissions(self.root, views, self._room(), self.budget.admit)
        self.waiting = plan.waiting
        sliced = self.budget.admit is not None and len(plan.admit) >= self.budget.admit
        self._more_to_admit = now if sliced else None
        for app_id in plan.admit:
            rec = self.apps[app_id]
            self._pending[rec.spec.queue].remove(rec.rank)
            self._views.touch_queue(rec.spec.queue)
            rec.launched_at = now
            rec.ahead = app_id in plan.ahead
            if admission.mode_of(self._leaves[rec.spec.queue]).reserves:
                rec.reserved = admission.reservation(rec.spec)
            out.append(launch_decision(rec.spec, self.capacity))
            self._mark(now, rec, AppState.STARTING, "driver launched", out)

    def _room(self) -> admission.Room:
        t = self._ledger.total
        drivers = Resources(t.driver_cores, t.driver_mem_mib)
        room = admission.Room(
            free=self.capacity - drivers - Resources(t.committed_cores, t.committed_mem_mib),
            uncommitted=self.capacity - drivers - Resources(t.floor_cores, t.floor_mem_mib),
            driver_slots_free=self.driver_slots - t.client_drivers,
            capacity=self.capacity,
            need_of=self._needs.need_at_or_above,
            weight_of=self._needs.weight_at_or_above,
            launching_of=self._launching.first_at_or_above,
        )
        busy = []
        admitted, usage, floors = room.admitted_in, room.usage_cores, room.floor_cores_in
        tree = self._tree
        for name in tree.postorder:  # children before their parent: a parent sums them
            kids = tree.children[name]
            if kids:
                admitted[name] = sum(admitted[k] for k in kids)
                usage[name] = sum(usage[k] for k in kids)
                floors[name] = sum(floors[k] for k in kids)
                continue
            lt = self._ledger.leaf(name)
            if lt.live or self._pending.get(name):
                busy.append(name)
            room.drivers_in[name] = Resources(lt.driver_cores - lt.alone_driver_cores,
                                              lt.driver_mem_mib - lt.alone_driver_mem_mib)
            room.whole_in[name] = Resources(lt.whole_cores, lt.whole_mem_mib)
            room.unbounded_in[name] = lt.unbounded
            room.ahead_in[name] = lt.ahead
            admitted[name] = lt.live
            usage[name] = float(lt.usage_cores)
            floors[name] = lt.floor_cores
        room.weight_share = self._weight_shares(frozenset(busy))
        return room

    # 4. + 5. arbitration and grants

    def _executor_capacity(self) -> Resources:
        """Cluster capacity minus the in-cluster drivers of admitted apps."""
        t = self._ledger.total
        return self.capacity - Resources(t.driver_cores, t.driver_mem_mib)

    def _claim(self, rec: AppRecord) -> Claim:
        spec = rec.spec
        cap = spec.executor_cap
        floor = rec.floor
        want = max(rec.demand, floor)
        if cap is not None:
            want = min(want, cap)
        return Claim(
            app_id=rec.app_id,
            queue=spec.queue,
            priority=rec.priority,
            seq=spec.seq,
            executor=spec.executor,
            floor=min(floor, want),
            want=want,
            guaranteed=self._guaranteed(rec),
        )

    def _guaranteed(self, rec: AppRecord) -> bool:
        return rec.spec.queue in self._reserving

    def _grant(self, changed: list[str], out: list[Decision]) -> None:
        targets = self._arbiter.targets
        touched = self._touched.union(changed)
        for app_id in touched:
            rec = self.apps[app_id]
            self._grants.rebase(rec, targets.get(app_id, 0))
        grown = self._grants.grow(self._executor_capacity())
        for app_id in sorted(touched.union(grown), key=lambda a: self.apps[a].rank):
            rec = self.apps[app_id]
            if not rec.state.admitted:
                continue
            t = targets[app_id]
            g = grown.get(app_id, t)
            if (t, g) != (rec.target, rec.grant):
                out.append(SetTarget(app_id, t, g))
                rec.target, rec.grant = t, g
                self._grants.rebase(rec, t)
                self._dirty.add(app_id)

    # 6. reclaim (``reclaim.Reclaimer.step``)

    def _reclaim(self, now: float, changed: list[str], out: list[Decision]) -> None:
        self._reclaimer.step(now, self.apps, self._leaves, self._touched.union(changed),
                             self._grants, self._executor_capacity(), out)

    # --- keeping the totals true ----------------------------------------------------------

    def _sync(self) -> None:
        """Bring the totals, the admitted set and the claims up to date with changed apps."""
        for app_id in self._dirty:
            rec = self.apps[app_id]
            guaranteed = self._guaranteed(rec)
            self._ledger.refresh(rec, guaranteed)
            self._needs.refresh(rec)
            self._launching.refresh(rec)
            if rec.on_books:
                self._admitted[app_id] = rec
            else:
                self._admitted.pop(app_id, None)
            if rec.state.admitted:
                # Most changes (grants, targets, executors) leave the claim as it was.
                inputs = (rec.priority, rec.demand, rec.floor, guaranteed, rec.spec.queue)
                if self._claimed.get(app_id) != inputs:
                    self._claimed[app_id] = inputs
                    self._arbiter.set_claim(self._claim(rec))
            elif self._claimed.pop(app_id, None) is not None:
                self._arbiter.drop(app_id)
        self._touched |= self._dirty
        self._dirty = set()

    def _sync_grants(self) -> None:
        """``_sync`` after ``_grant``, which changes only targets and grants: of the books,
        only the ledger reads them (``contribution``: what is promised, usage), and no claim
        is built from them."""
        for app_id in self._dirty:
            rec = self.apps[app_id]
            self._ledger.refresh(rec, self._guaranteed(rec))
        self._touched |= self._dirty
        self._dirty = set()

    def _occupied_leaves(self) -> set[str]:
        held = {name for name, pend in self._pending.items() if pend}
        return held | {rec.spec.queue for rec in self._admitted.values()}
