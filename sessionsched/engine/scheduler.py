"""The scheduler: ``Scheduler.step(now, events) -> decisions``.

The one place that decides who runs. It holds the books (``app_books.Books``: apps, their
states, executors, targets, and every index over them) and reads no clock, opens no socket
and starts no thread: the server, the simulator and the tests drive it the same way and carry
out what it decides.

A step, in order:
  0. check every event (``validate``); a bad one refuses the whole batch with one line and
     changes nothing;
  1. apply the events to the books (``lifecycle``: one handler per event type);
  2. StateAware fallback: an app STARTING for at least its queue's ``starting_timeout`` moves
     on to RUNNING (YuniKorn's 5-minute rule, made a queue setting); a queued app that has
     waited its queue's ``max_wait`` since its submission ends FAILED (EMR Serverless's
     ``queueTimeoutMinutes``), saying how long it waited; an idle session's driver on the
     host, in a queue that releases them, is stopped for a head that waits for the host's
     room (``host_room.idle_to_release``); gangs (``gang``, docs/design/gangs.md): a
     reservation past its timeout ends its app FAILED (``hard``) or is given up (``soft``),
     then the gangs at their queues' heads reserve the room that is free, which nobody else
     is given - admission sees it taken, arbitration divides the capacity without it. FIFO
     order of reservations keeps two gangs from holding half of what each needs
     (``gang.book``); a gang takes no executor from anyone, only room as it frees;
  3. admission (``admission.plan_admissions``): launch the drivers that may start;
  4. arbitration (``arbitration.Arbiter``): each admitted app's executor target;
  5. grants (``grants``): how much of its target each app may hold right now, so that
     executors still being taken from others are never promised twice (no overcommit);
  6. reclaim (``reclaim``): kills of decommissioned executors past their deadline, and orders
     for apps holding more than their target - only as many as the short apps' deficit needs
     beyond free capacity and the orders already out, taken from the lowest-ranked apps above
     their target first. An app whose own demand dipped is not made to shrink unless someone
     else needs its executors (else stage tails would churn executors; see ``reclaim``).

With decayed fair share on (a queue's ``usage_half_life``: ``arbitration.decay``), the step
reads every decaying queue's and user's decayed usage at ``now`` before phase 3 (admission
and arbitration add it to current usage) and, after phase 6, starts a new stretch for those
whose usage changed.

Decisions come out in that order. Within phases 2, 5 and 6 they are in app rank order
(1. priority, highest first; 2. submission sequence; 3. app id); launches in the order
admission chose. The same events in the same order give the same decisions, in a long-lived
scheduler or in a fresh one fed the same history.

The books answer to verbs (``Books.submit``, ``mark``, ``forget``...); the event handlers and
the phases below change them only through those, and ``check()`` (``selfcheck``) compares
every index with a recount from the apps.

Cost: the books keep running totals (``ledger.Ledger``), the arbiter reuses last cycle's leaf
results, and grants and reclaims only look at apps that changed, so a cycle costs about the
number of changed apps and queues, not of all apps (see ``benchmarks/engine_cycle.py``).
Reclaim reads the deficit and what is being freed from running sums (``grants.Grants``) and
keeps the apps above their target in rank order, so it walks them only while there is a need.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from ..model import AppState, Queue, QueueUsage, Resources
from . import admission, lifecycle
from .agent_terms import launch_decision
from .app_books import Books
from .arbitration import NO_PAST, Decayed, Past
from .budget import DEFAULT as DEFAULT_BUDGET
from .budget import CycleBudget
from .events import Decision, Event, SetTarget, StopDriver
from .gang.phase import gang_phase
from .host_room import release_idle, waiting_for_host
from .ledger import IDLE_AFTER_S, AppRecord
from .placement import WorkerReports, Workers, profiles
from .room.heads import QueueHeads
from .room.keeper import RoomKeeper
from .tree import Caps, QueueTree
from .validate import check_events
from .view import EngineView, ViewKeeper, touched_by
from .waits import Wait, waited_too_long

__all__ = ["AppRecord", "Scheduler"]


_NOTHING = Resources()


class Scheduler:
    """The engine. ``root``: the queue tree; ``capacity``: cluster cores and memory for the
    managed apps' executors and in-cluster drivers; ``driver_slots``: drivers the scheduler's
    host may run at once (None: no such cap); ``host_room``: the host's memory for them
    (``host_room``; None: not measured, only the slots count). All change by
    ``CapacityChanged``.

    Outside the engine, read ``view()`` (a frozen ``EngineView``), never the books themselves;
    ``next_wakeup()`` tells a driver of the engine when to step without news, and ``check()``
    compares every index with a recount from the books (tests). The engine's own tests read
    ``apps`` (app id -> ``AppRecord``), ``waiting``, ``position()``, ``pending()`` and
    ``usage()``.
    """

    def __init__(self, root: Queue, capacity: Resources = _NOTHING,
                 driver_slots: int | None = 4, budget: CycleBudget = DEFAULT_BUDGET,
                 host_room: Resources | None = None):
        self.capacity = capacity
        self.driver_slots = driver_slots
        self.host_room = host_room
        self.budget = budget
        # Behind several clusters (``clusters.federation``): False while this one cannot be
        # reached; each queue's apps running on the others (its ``max_running_apps``); whether
        # a later cluster is offered an app this step (``Room.offered_later``); ``max_cores``
        # over every cluster (``clusters.cores``): what floors may fill of each capped queue
        # here, and the caps arbitration works to, from the books after admission.
        self.launching, self.elsewhere, self.offered_later = True, {}, lambda app_id: False
        self.slice_left: int | None = None  # the federation's admission slice, as left to it
        # What the other clusters' drivers on the scheduler's host hold of it, and how many
        # they are: the host is one, whatever cluster a client-mode driver's app runs on.
        self.host_elsewhere: tuple[Resources, int] = (_NOTHING, 0)
        self.max_cores_left: Mapping[str, tuple[int, int]] = {}
        self.arbitration_caps: Callable[[Books], Caps] | None = None
        self._capped: tuple[Queue, Caps, Queue] | None = None  # root, caps -> root capped
        self._more_to_admit: float | None = None  # the last step, if its slice was used up
        self._next_release: float | None = None  # an idle session's release falls due
        self.waiting: dict[str, Wait] = {}  # leaf queue -> why its head waits (last step)
        self.held: dict[str, Wait] = {}  # app -> does_not_fit_now: held aside (last step)
        self._views = ViewKeeper()
        self._rooms = RoomKeeper()  # admission's room, its per-queue figures kept
        self._heads = QueueHeads(self._views.touch_queue)  # told of a leaf's queue moving
        self.books = Books(root, self._heads.moved)
        self.books.set_workers(Workers((), capacity))
        self.reports = WorkerReports()  # each worker's free room, for drivers' room now
        self.apps = self.books.apps
        self._priority_of = admission.PriorityOf(self.apps)
        self._share_by_weight(root)

    def set_tree(self, root: Queue) -> None:
        """A new queue tree (``QueuesChanged``)."""
        self._views.touch_all()
        self._heads.moved_all()
        self.books.set_tree(root)
        self._share_by_weight(root)

    def _share_by_weight(self, root: Queue) -> None:
        self._weight_shares = functools.lru_cache(maxsize=64)(
            functools.partial(admission.weight_shares, root))  # by the set of busy leaves

    @property
    def root(self) -> Queue:
        return self.books.root

    # --- reading the books ----------------------------------------------------------------

    def view(self) -> EngineView:
        """The books as they stand, frozen (``view``): what everyone outside the engine reads.
        The same object again while nothing changed."""
        return self._views.take(self.root, self.capacity, self.driver_slots, self.apps,
                                self.books.pending, self.waiting, self.usage, self.held,
                                self.books.workers, self.books.gangs.reservations(),
                                self.host_room, *self._host_use())

    def _host_use(self) -> tuple[Resources, int]:
        """What the drivers on the scheduler's host take of it, and how many they are."""
        t = self.books.ledger.total
        return Resources(t.host_driver_cores, t.host_driver_mem_mib), t.client_drivers

    def queue(self, name: str) -> Queue:
        return self.books.leaves[name]

    def position(self, app_id: str) -> int | None:
        """1-based place of a queued app in its queue, or None if it is not queued."""
        rec = self.apps.get(app_id)
        if rec is None or rec.state is not AppState.ACCEPTED:
            return None
        return self.books.pending[rec.spec.queue].index(rec.rank) + 1

    def pending(self, queue: str) -> list[str]:
        """Queued app ids of a leaf queue, head first."""
        return [key[2] for key in self.books.pending[queue]]

    def usage(self) -> dict[str, QueueUsage]:
        """Per queue (parents sum their children): apps pending/starting/running, executor and
        in-cluster driver cores held, demand in cores; with decayed fair share, the decayed
        usage as the last step read it (``arbitration.decay``). O(queues + users)."""
        books = self.books
        out = {q.name: QueueUsage(q.name) for q in self.root.walk()}
        for leaf, path in books.tree.path.items():
            t = books.ledger.leaf(leaf)
            pending = len(books.pending.get(leaf, ()))
            for q in path:
                u = out[q.name]
                u.pending += pending
                u.starting += t.starting
                u.running += t.running
                u.executor_cores += t.executor_cores
                u.driver_cores += t.driver_cores
                u.demand_cores += t.demand_cores
        decay = books.decay
        if decay.on:
            past = decay.last
            for name in decay.half_life:
                out[name].decayed_cores = past.queues.get(name, 0.0)
            for leaf, users in past.users.items():
                out[leaf].decayed_users = dict(sorted(users.items()))
        return out

    def decayed_changes(self) -> list[tuple[tuple[str, str, str], Decayed | None]]:
        """The decayed fair-share entries set (or dropped: None) since the last call, keyed
        ("queue", queue, "") or ("user", leaf, user): what the service writes to the store
        with each cycle (``arbitration.decay``)."""
        return self.books.decay.changed()

    def decayed(self) -> list[tuple[tuple[str, str, str], Decayed]]:
        """Every decayed fair-share entry as it stands."""
        return sorted(self.books.decay.entries.items())

    def load_decayed(self, entries: Iterable[tuple[tuple[str, str, str], Decayed]]) -> None:
        """Entries stored before a restart or a takeover (or kept by a rewind), before the
        first step: the queues and users that still decay take them back."""
        self.books.decay.load(entries)

    def next_wakeup(self) -> float | None:
        """The earliest time at which a step without events may decide something (a starting
        timeout, a queued app's ``max_wait`` or a decommission deadline), or None. A caller
        that steps on events and at this time misses nothing; it may be early (the executor
        may already be gone)."""
        books = self.books
        times = [books.next_starting_deadline(), books.next_wait_deadline(),
                 books.reclaimer.next_deadline(), books.gangs.next_deadline(),
                 self._more_to_admit,  # the admission slice continues (``budget``)
                 self._next_release]
        return min((t for t in times if t is not None), default=None)

    def check(self) -> list[str]:
        """Every index against a recount from the books, targets against the from-scratch
        arbiter (``selfcheck.check``); empty when all is true. O(apps): for tests."""
        from .selfcheck import check

        capped = self._capped  # the tree arbitration divided at the last step
        root = self.root if self.arbitration_caps is None or capped is None else capped[2]
        return check(self.books, self.capacity, root, self._heads.off_cluster)

    # --- the step -------------------------------------------------------------------------

    def step(self, now: float, events: Iterable[Event] = (), checked: bool = False
             ) -> list[Decision]:  # checked: by the caller, against these very books
        books = self.books
        events = list(events)
        if not checked:
            check_events(events, self.apps, books.leaves, books.occupied_leaves)
        past = books.decay.read(now) if books.decay.on else None
        out: list[Decision] = []
        for event in events:
            lifecycle.ON_EVENT[type(event)](self, now, event, out)
        self._starting_timeouts(now, out)
        self._waited_too_long(now, out)
        books.sync()
        released = release_idle(now, books, self.waiting, self.host_room, self.driver_slots,
                                self.host_elsewhere[0])
        for rec, why in released:  # for heads the last step left waiting for the host's room
            out += [StopDriver(rec.app_id), books.mark(now, rec, AppState.KILLED, why)]
        if released:
            books.sync()
        gang_phase(books, self.capacity, now, out, self.held)
        self._admit(now, out, past)
        books.sync()
        quiet = waiting_for_host(books, self.waiting)[1]
        self._next_release = min((q.due_at for q in quiet if q.due_at > now), default=None)
        capacity = books.executor_capacity(self.capacity)
        changed = books.arbiter.compute(  # dominant shares (``drf``): of the whole cluster
            self._arbitration_root(), capacity, NO_PAST if past is None else past, self.capacity)
        touched = books.touched().union(changed)
        self._grant(touched, capacity, out)
        books.reclaimer.step(now, self.apps, books.leaves, touched, books.grants, capacity, out,
                             books.workers, self.reports.rooms)
        books.end_step()
        books.sync_grants()
        if past is not None:
            books.decay.observe(now, books.queue_usage())
            self._views.touch_usage()  # the decayed usage moved: the next view shows it
        self._views.touch(touched_by(events, out))
        return out

    def _arbitration_root(self) -> Queue:
        """The tree arbitration divides: the engine's, with ``arbitration_caps`` if set (the
        same object while they do not move: arbitration keeps its sums per tree)."""
        if self.arbitration_caps is None:
            return self.root
        caps = self.arbitration_caps(self.books)
        kept = self._capped
        if kept is None or kept[0] is not self.root or kept[1] != caps:
            capped = self.books.tree.recapped(caps).root
            kept = self._capped = (self.root, caps, capped)
        return kept[2]

    # 2. StateAware fallback

    def _starting_timeouts(self, now: float, out: list[Decision]) -> None:
        for rec, timeout in self.books.timed_out(now):
            why = (f"no executor after {timeout:g}s: starting timeout"
                   if now - rec.launched_at >= timeout else
                   f"idle: its driver is up and asked for no executor for {IDLE_AFTER_S:g}s")
            out.append(self.books.mark(now, rec, AppState.RUNNING, why))

    def _waited_too_long(self, now: float, out: list[Decision]) -> None:
        for rec, limit in self.books.expired(now):
            self.books.unqueue(rec)
            why = waited_too_long(now - rec.spec.submitted_at, limit, rec.spec.queue)
            out.append(replace(self.books.mark(now, rec, AppState.FAILED, why), expired=True))

    # 3. admission

    def _admit(self, now: float, out: list[Decision], past: Past | None) -> None:
        books = self.books
        heads = self._heads.first(books.pending) if self.launching else {}
        if not heads:
            self.waiting, self.held = {}, {}
            self._more_to_admit = None
            return
        room = self._room()
        if past is not None:
            room.past_cores = past.queues
        # A head kept waiting for a count (``room.limit_waits``) needs no view: most queues of
        # a busy cluster, and behind several clusters each engine looks at all of them.
        room.limit_waits.start(QueueTree.of(self.root), room)
        room.shut_out.came_in(self._heads.take_added())
        room.off_cluster_in = self._heads.off_cluster
        look, kept = room.limit_waits.split(heads, self._heads.take_read(), self.apps)
        most = self.budget.admit if self.slice_left is None else self.slice_left
        plan = admission.plan_admissions(self.root, [self._leaf_view(n) for n in look], room,
                                         most, kept, self._leaf_view, self.budget.admit)
        self.waiting, self.held = plan.waiting, plan.held
        sliced = most is not None and len(plan.admit) >= most
        self._more_to_admit = now if sliced else None
        for app_id in plan.admit:
            rec = self.apps[app_id]
            out.append(launch_decision(rec.spec, self.capacity))
            if rec.spec.driver_in_cluster:
                self.reports.placed(rec.spec.driver, books.leaves[rec.spec.queue].node_sort)
            out.append(books.admit(now, rec, ahead=app_id in plan.ahead))
            books.gangs.release(app_id)

    def _leaf_view(self, name: str) -> admission.LeafView:
        return admission.LeafView(
            queue=self.books.leaves[name],
            pending=admission.PendingSpecs(self.books.pending[name], self.apps),
            priority_of=self._priority_of,
            starting=self.books.ledger.leaf(name).starting,
        )

    def _room(self) -> admission.Room:
        room = self._rooms.room(self.books, self.capacity, self.driver_slots, self.host_room,
                                self.reports, self.elsewhere, self.offered_later,
                                self._weight_shares, self.max_cores_left,
                                self._heads.first(self.books.pending))
        if room.host_free is not None and self.host_elsewhere[1]:  # other clusters' drivers
            room.host_free -= self.host_elsewhere[0]
            room.host_drivers += self.host_elsewhere[1]
        return room

    # 4. + 5. arbitration and grants

    def _grant(self, touched: set[str], capacity: Resources, out: list[Decision]) -> None:
        books = self.books
        targets = books.arbiter.targets
        books.rebase_grants(touched)
        placed: dict[str, dict[int, int]] = {}  # app -> its executors placed, per profile
        grown = books.grants.grow(capacity, self._placer(placed))
        for app_id in sorted(touched.union(grown), key=lambda a: self.apps[a].rank):
            rec = self.apps[app_id]
            if not rec.state.admitted:
                continue
            t = targets[app_id]
            g = grown.get(app_id, t)
            split = profiles.split(rec, g, placed.get(app_id))  # () without profiles
            if (t, g, split) != (rec.target, rec.grant, rec.grants):
                out.append(SetTarget(app_id, t, g, split))
                rec.grants = split
                books.set_target(rec, t, g)
            out.extend(profiles.give_back(rec, split))

    def _placer(self, placed: dict) -> Callable[[AppRecord, int], int] | None:
        """What ``Grants.grow`` places executors with: the room free on each worker less what
        was placed since the report (``placement.free_now``), and less what reserving gangs
        hold there this cycle; each executor placed is kept there until the next report.
        None with one worker or none named (the sum says it all)."""
        reports = self.reports
        if reports.count <= 1:
            return None
        holds = self.books.gangs.holds.values()
        leaves = self.books.leaves
        rooms = reports.rooms.copy() if holds else reports.rooms
        for hold in holds:  # a reservation is no placement: taken off this cycle's copy only
            spec, sort = hold.spec, leaves[hold.spec.queue].node_sort
            if hold.driver and spec.driver_in_cluster:
                rooms.take(spec.driver, sort)
            rooms.take_up_to(spec.executor, hold.executors, sort)

        def place(rec: AppRecord, n: int) -> int:  # each profile's executors by their shape
            sort = leaves[rec.spec.queue].node_sort
            take = functools.partial(profiles.take, rooms, reports.rooms, sort)
            return profiles.place(rec, n, take, placed)

        return place
