"""The engine's books and every index over them, kept by verbs (after Kueue's ``pkg/cache``).

``Books`` owns the apps (``AppRecord``) and each index built from them: the queued apps of each
leaf in rank order (and which are gangs) and their ``max_wait`` deadlines (a heap), the STARTING
apps and their timeouts (a heap), the apps on the books, the running totals (``ledger.Ledger``),
the elastic needs (``needs.NeedBook``), the arbiter's claims (``arbitration.Arbiter``), the grant
bases (``grants.Grants``), the apps above their target (``reclaim.Reclaimer``), and which apps
changed. Nothing else writes an index: the event handlers (``lifecycle``) and the step's phases
(``scheduler``) change an app through a verb, and the verb keeps every index that app is in true,
now or at the next ``sync``. (The arbiter and the reclaimer keep what they decide as they decide
it: ``Arbiter.compute``, ``Reclaimer.step``.)

The verbs: ``submit`` (queue a new app), ``adopt`` (an app launched before a restart), ``requeue``
(a new priority), ``unqueue`` (a queued app leaves its queue), ``admit`` (its driver is launched),
``mark`` (a new state), ``rebase_grants`` and ``set_target`` (the grant phase), ``changed``
(anything else about an app changed: its demand, executors, driver), ``forget`` (drop it from
everything), ``set_tree`` (a new queue tree). ``sync`` brings the totals, the needs and the claims
up to date with the apps changed since; ``touched`` names the apps changed this step, for grants
and reclaim, until ``end_step``. ``selfcheck.check`` compares every index with a recount from the
apps. ``expired`` and ``timed_out`` pop the queued apps past their ``max_wait`` and the STARTING
apps past their ``starting_timeout``, each from its heap of deadlines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sortedcontainers import SortedList

from ..model import AppState, Queue, Resources
from . import admission
from .arbitration import Arbiter, Claim, DecayBook
from .events import MarkState
from .gang.book import GangBook
from .grants import Grants
from .ledger import AppRecord, Deadlines, Ledger, starting_deadline
from .needs import NeedBook
from .placement import Workers
from .reclaim import Reclaimer
from .tree import QueueTree


class Books:
    """One engine's books. ``apps`` (app id -> ``AppRecord``), ``pending`` (leaf -> rank keys
    of its queued apps, head first), ``ledger``, ``needs``, ``arbiter``, ``grants`` and
    ``reclaimer`` are there to read; only the verbs change them. ``listing_changed(leaf,
    added, left)`` is told whenever a leaf's queued apps change (the app that came in, left)."""

    def __init__(self, root: Queue, listing_changed: Callable[..., None]) -> None:
        self._listing_changed = listing_changed
        self.apps: dict[str, AppRecord] = {}
        self.pending: dict[str, SortedList] = {}
        self.queued_gangs: set[str] = set()  # of the queued apps, the gangs (``gang.phase``)
        self._starting: dict[str, AppRecord] = {}
        self._starting_due = Deadlines(self._starting_deadline)  # ``starting_timeout``
        self._wait_due = Deadlines(self._wait_deadline)  # queued apps' ``max_wait``
        # On the books: STARTING/RUNNING, or ended and still holding executors.
        self._admitted: dict[str, AppRecord] = {}
        self.ledger = Ledger()
        self.needs = NeedBook()  # elastic demand per leaf and priority (``demand`` admission)
        self.arbiter = Arbiter()
        self.grants = Grants()
        self.reclaimer = Reclaimer()
        self.decay = DecayBook()  # decayed past usage per queue and user (``arbitration.decay``)
        self._claimed: dict[str, tuple] = {}  # app -> what its claim was built from
        self._dirty: set[str] = set()  # changed since the totals were last brought up to date
        self._touched: set[str] = set()  # changed this step: grants and reclaim look at them
        self.leaves: dict[str, Queue] = {}
        self._reserving: frozenset[str] = frozenset()
        self.workers = Workers()  # the cluster's workers (``placement``): claims are cut to them
        self.gangs = GangBook()  # reservations of gangs at their queues' heads (``gang.book``)
        self.set_tree(root)

    # --- the queue tree -------------------------------------------------------------------

    def set_tree(self, root: Queue) -> None:
        """A new queue tree. A queue's admission mode decides what is promised: the apps of a
        leaf whose mode now promises otherwise are counted again (the others' totals and claims
        do not change); a queue's starting_timeout may have changed: every deadline again."""
        before, known = self._reserving, self.leaves.keys()
        self.root = root
        self.tree = QueueTree(root)
        self.leaves = {name: self.tree.node[name] for name in self.tree.leaves}
        by_user = self.decay.user_leaves
        self.decay.set_tree(root)
        if by_user != self.decay.user_leaves:  # leaves that now count usage by user, or stop
            flipped = by_user ^ self.decay.user_leaves
            for rec in self._admitted.values():
                if rec.spec.queue in flipped:
                    self._count_user(rec)
        # Leaves whose apps' floors are guaranteed (``guaranteed``): asked for every change.
        self._reserving = frozenset(
            name for name, q in self.leaves.items() if admission.mode_of(q).reserves)
        moved = {name for name in known | self.leaves.keys()
                 if (name in before) != (name in self._reserving)}
        self._dirty.update(a for a, rec in self._admitted.items() if rec.spec.queue in moved)
        self._starting_due.reset(self._starting)
        for name in self.leaves:
            self.pending.setdefault(name, SortedList())
        for name in [n for n, pend in self.pending.items() if n not in self.leaves and not pend]:
            del self.pending[name]
        # A queue's max_wait may have changed: every queued app's deadline again, O(queued).
        self._wait_due.reset(key[2] for name, pend in self.pending.items()
                             if self._max_wait(name) is not None for key in pend)

    # --- verbs ----------------------------------------------------------------------------

    def submit(self, rec: AppRecord) -> None:
        """A new app, queued in its leaf (with its deadline, if the leaf has a ``max_wait``)."""
        self.apps[rec.app_id] = rec
        self._queue(rec)
        self._wait_due.add(rec.app_id)

    def adopt(self, rec: AppRecord) -> None:
        """An app launched before a restart, back on the books in its state."""
        self.apps[rec.app_id] = rec
        if rec.state is AppState.STARTING:
            self._now_starting(rec)
        self._dirty.add(rec.app_id)

    def requeue(self, rec: AppRecord, priority: int) -> None:
        """A new priority: a queued app moves to its new place in its queue."""
        if rec.state is AppState.ACCEPTED:
            self._unqueue(rec)
            rec.priority = priority
            self._queue(rec)
        else:
            rec.priority = priority
        self._dirty.add(rec.app_id)

    def unqueue(self, rec: AppRecord) -> None:
        """A queued app leaves its queue without being launched (killed, or its driver ran
        without us); ``mark`` or ``changed`` follows."""
        self._unqueue(rec)

    def admit(self, now: float, rec: AppRecord, ahead: bool) -> MarkState:
        """Its driver is launched now: out of its queue, STARTING (with its reservation under
        a ``reserve`` queue)."""
        self._unqueue(rec)
        rec.launched_at = now
        rec.ahead = ahead
        if rec.spec.queue in self._reserving:
            rec.reserved = admission.reservation(rec.spec)
        return self.mark(now, rec, AppState.STARTING, "driver launched")

    def mark(self, now: float, rec: AppRecord, state: AppState, why: str) -> MarkState:
        """A new state, and the decision that says so."""
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
        return MarkState(
            rec.app_id, state, why, at=now,
            first_executor_at=rec.first_executor_at if state is AppState.RUNNING else None,
            exit_code=rec.exit_code if state.terminal else None,
        )

    def changed(self, rec: AppRecord) -> None:
        """Something the totals, needs or claims read changed (demand, executors, driver up);
        a STARTING app's deadline may have moved (``ledger.starting_deadline``)."""
        self._dirty.add(rec.app_id)
        if rec.app_id in self._starting:
            self._starting_due.add(rec.app_id)

    def rebase_grants(self, app_ids: Iterable[str]) -> None:
        """The grant bases of these apps for their targets as the arbiter last computed them
        (``grants.Grants.rebase``: 0 for an app without one)."""
        targets = self.arbiter.targets
        for app_id in app_ids:
            self.grants.rebase(self.apps[app_id], targets.get(app_id, 0))

    def set_target(self, rec: AppRecord, target: int, grant: int) -> None:
        """A new target and grant (``SetTarget``)."""
        rec.target, rec.grant = target, grant
        self.grants.rebase(rec, target)
        self._dirty.add(rec.app_id)

    def forget(self, app_id: str) -> None:
        """Drop an ended app without executors from the books and from every index it may
        still be in: it may have ended earlier in this very batch, before ``sync`` took it out.
        Its decommission deadlines stay in the reclaimer's heap, which skips unknown apps."""
        rec = self.apps.pop(app_id)
        self._dirty.discard(app_id)
        self._touched.discard(app_id)
        self.ledger.refresh(rec, False)  # not on the books: takes its last contribution out
        self.decay.refresh_app(app_id, rec.spec.queue, rec.spec.user, 0)
        self.needs.refresh(rec)
        self._admitted.pop(app_id, None)
        self._starting.pop(app_id, None)
        if self._claimed.pop(app_id, None) is not None:
            self.arbiter.drop(app_id)
        self.grants.rebase(rec, 0)
        self.reclaimer.index(rec)

    # --- keeping the indexes true ---------------------------------------------------------

    def sync(self) -> None:
        """Bring the totals, the apps on the books and the claims up to date with the apps
        changed since the last sync."""
        # The books' verbs looked up once: this runs for several hundred apps a busy cycle.
        apps, admitted, claimed = self.apps, self._admitted, self._claimed
        refresh_ledger, refresh_needs = self.ledger.refresh, self.needs.refresh
        is_guaranteed, workers = self.guaranteed, self.workers
        by_user = bool(self.decay.user_leaves)
        for app_id in self._dirty:
            rec = apps[app_id]
            spec = rec.spec
            guaranteed = is_guaranteed(rec)
            refresh_ledger(rec, guaranteed)
            if by_user:
                self._count_user(rec)
            refresh_needs(rec)
            if rec.on_books:
                admitted[app_id] = rec
            else:
                admitted.pop(app_id, None)
            if rec.state.admitted:
                # Most changes (grants, targets, executors) leave the claim as it was.
                holds = workers.holds(spec.executor) if workers.named else None
                floor = rec.floor
                inputs = (rec.priority, rec.demand, floor, guaranteed, spec.queue, holds)
                if claimed.get(app_id) != inputs:
                    claimed[app_id] = inputs
                    self.arbiter.set_claim(self._claim(rec, floor, guaranteed, holds))
            elif claimed.pop(app_id, None) is not None:
                self.arbiter.drop(app_id)
        self._touched |= self._dirty
        self._dirty = set()

    def sync_grants(self) -> None:
        """``sync`` after ``set_target``, which changes only targets and grants: of the
        indexes, only the ledger reads them (``contribution``: what is promised, usage), and no
        claim is built from them."""
        apps, refresh_ledger, guaranteed = self.apps, self.ledger.refresh, self.guaranteed
        by_user = bool(self.decay.user_leaves)
        for app_id in self._dirty:
            rec = apps[app_id]
            refresh_ledger(rec, guaranteed(rec))
            if by_user:
                self._count_user(rec)
        self._touched |= self._dirty
        self._dirty = set()

    def _count_user(self, rec: AppRecord) -> None:
        """The app's executor cores held or granted (the ledger's usage less its driver: the
        users of a leaf share its executor cores) to its user, in a leaf that shares by user."""
        used = self.ledger.usage_of(rec.app_id)
        self.decay.refresh_app(rec.app_id, rec.spec.queue, rec.spec.user,
                               max(used - rec.spec.driver.cores, 0) if used else 0)

    def queue_usage(self) -> dict[str, float]:
        """Usage (``ledger.contribution``) of every queue, parents summing their children.
        O(queues): read at the end of a step when some queue decays (``decay``)."""
        out: dict[str, float] = {}
        tree = self.tree
        for name in tree.postorder:
            kids = tree.children[name]
            out[name] = (float(sum(out[k] for k in kids)) if kids
                         else float(self.ledger.leaf(name).usage_cores))
        return out

    def touched(self) -> set[str]:
        """The apps changed this step (up to the last sync)."""
        return self._touched

    def set_workers(self, workers: Workers) -> None:
        """New workers (``CapacityChanged``). Claims are cut to the executors the workers hold:
        when the workers' sizes changed, the apps whose cut binds (before or now) are looked at
        again - a walk over the apps on the books, one memoised lookup each."""
        before = self.workers
        if workers.signature == before.signature:
            return  # the same sizes: keep the answers memoised (and the view as it was)
        self.workers = workers
        if not (before.named or workers.named):
            return  # one worker of the capacity: the arbiter's sums already say as much
        for app_id, rec in self._admitted.items():  # only where the cut binds, before or now
            ex = rec.spec.executor
            old, new = before.holds(ex), workers.holds(ex)
            if rec.state.admitted and old != new and min(old, new) < self._uncut_want(rec):
                self._dirty.add(app_id)

    def end_step(self) -> None:
        self._touched = set()

    # --- reading --------------------------------------------------------------------------

    def guaranteed(self, rec: AppRecord) -> bool:
        """Its floor is promised: its queue admits by ``reserve``, or it is a gang."""
        return rec.spec.queue in self._reserving or rec.spec.gang is not None

    @staticmethod
    def _uncut_want(rec: AppRecord) -> int:
        want, cap = max(rec.demand, rec.floor), rec.spec.executor_cap
        return want if cap is None else min(want, cap)

    def claim_of(self, rec: AppRecord) -> Claim:
        holds = self.workers.holds(rec.spec.executor) if self.workers.named else None
        return self._claim(rec, rec.floor, self.guaranteed(rec), holds)

    @staticmethod
    def _claim(rec: AppRecord, floor: int, guaranteed: bool, holds: int | None) -> Claim:
        """``claim_of`` from what ``sync`` has already read of the app."""
        spec = rec.spec
        # An executor runs on one worker: no more than the workers hold, counted per worker
        # (``holds``; with no worker named, None: the capacity's sums that the arbiter
        # divides say as much).
        want, cap = max(rec.demand, floor), spec.executor_cap
        if cap is not None and cap < want:
            want = cap
        if holds is not None and holds < want:
            want = holds
        return Claim(rec.app_id, spec.queue, rec.priority, spec.seq, spec.executor,
                     floor if floor < want else want, want, guaranteed, spec.user)

    def executor_capacity(self, capacity: Resources) -> Resources:
        """``capacity`` minus the in-cluster drivers of admitted apps and what reserving gangs
        need (``gang.book``)."""
        t = self.ledger.total
        cap = capacity - Resources(t.driver_cores, t.driver_mem_mib)
        used = Resources(max(t.executor_cores, t.floor_cores),
                         max(t.executor_mem_mib, t.floor_mem_mib))
        return cap - self.gangs.kept_from(cap - used)

    def on_books(self) -> Iterator[str]:
        return iter(self._admitted)

    def starting(self) -> Iterator[str]:
        return iter(self._starting)

    def occupied_leaves(self) -> set[str]:
        held = {name for name, pend in self.pending.items() if pend}
        return held | {rec.spec.queue for rec in self._admitted.values()}

    # --- deadlines: STARTING apps' timeouts (StateAware fallback), queued apps' ``max_wait`` --

    def next_starting_deadline(self) -> float | None:
        return self._starting_due.next()

    def timed_out(self, now: float) -> list[tuple[AppRecord, float]]:
        """The STARTING apps whose queue's ``starting_timeout`` has passed, with that timeout,
        in rank order. O(apps timing out x log n): the deadlines are in a heap, not scanned."""
        return self._in_rank_order(self._starting_due.due(now),
                                   lambda rec: self.leaves[rec.spec.queue].starting_timeout_s)

    def wait_deadlines(self) -> set[tuple[float, str]]:
        return self._wait_due.entries()

    def next_wait_deadline(self) -> float | None:
        return self._wait_due.next()

    def expired(self, now: float) -> list[tuple[AppRecord, float]]:
        """The queued apps that have waited their leaf's ``max_wait`` (the deadline reached:
        ``submitted_at + max_wait <= now``), with that limit, in rank order. Still queued: the
        caller takes them out (``unqueue``, ``mark``). O(apps expiring x log n)."""
        return self._in_rank_order(self._wait_due.due(now),
                                   lambda rec: self._max_wait(rec.spec.queue))

    def _in_rank_order(self, app_ids: list[str], limit: Callable[[AppRecord], float | None],
                       ) -> list[tuple[AppRecord, float]]:
        recs = sorted((self.apps[a] for a in app_ids), key=lambda rec: rec.rank)
        return [(rec, limit(rec)) for rec in recs]

    def _now_starting(self, rec: AppRecord) -> None:
        self._starting[rec.app_id] = rec
        self._starting_due.add(rec.app_id)

    def _starting_deadline(self, app_id: str) -> float | None:
        rec = self._starting.get(app_id)
        return None if rec is None else starting_deadline(rec, self.leaves[rec.spec.queue])

    def _max_wait(self, leaf: str) -> float | None:
        q = self.leaves.get(leaf)  # a leaf gone from the tree keeps its apps, without limit
        return q.max_wait_s if q is not None else None

    def _wait_deadline(self, app_id: str) -> float | None:
        rec = self.apps.get(app_id)
        if rec is None or rec.state is not AppState.ACCEPTED:
            return None
        limit = self._max_wait(rec.spec.queue)
        return None if limit is None else rec.spec.submitted_at + limit

    # --- the queues ---------------------------------------------------------------------

    def _queue(self, rec: AppRecord) -> None:
        self.pending[rec.spec.queue].add(rec.rank)
        if rec.spec.gang is not None:
            self.queued_gangs.add(rec.app_id)
        self._listing_changed(rec.spec.queue, rec)

    def _unqueue(self, rec: AppRecord) -> None:
        self.pending[rec.spec.queue].remove(rec.rank)
        self.queued_gangs.discard(rec.app_id)
        self._listing_changed(rec.spec.queue, None, rec)
