"""The read side: one frozen view of everything the service shows, published after each
committed cycle (and after each committed submission), read without a lock.

Every reader - the native API, Spark REST status, the dashboard, ``/metrics``, agent replies -
takes ``ReadModel.view`` once and answers from it, so it can never see half a cycle, and never
waits for one. A ``ReadView`` joins two books, each the only one of its kind in memory:

- the engine's frozen view (``EngineView``): each app's state, priority, times, executors,
  target, grant, demand and queue place;
- the registry of accepted apps (``Submissions``): what each app was submitted with, which
  never changes (and where its driver's log is, once launched).

An app whose submission is committed but which no cycle has stepped yet is shown ACCEPTED
without a position. Ended apps loaded at a restart, and those forgotten beyond
``server.retained_ended_apps`` (``retention``), are final: read from the store. ``publish``
makes each new view (and bumps its ``version``, which keys answer caches).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from sessionsched.engine.gang import Reservation
from sessionsched.engine.placement import never_fits
from sessionsched.engine.tree import QueueTree
from sessionsched.engine.view import AppFacts, EngineView
from sessionsched.engine.waits import Wait, WaitCode
from sessionsched.model import AppSpec, AppState, Gang, Queue, QueueUsage
from sessionsched.model.submission import Submission
from sessionsched.service.clusters.fits import never_fits_anywhere
from sessionsched.service.registry import Submissions
from sessionsched.store import StoredApp

JOINS_NEXT_CYCLE = "accepted; joins its queue at the next scheduling cycle"
_READS_KEPT = 50_000  # apps whose last read is kept (``ReadView._read``)


class NotFound(LookupError):
    """No such app. ``str()`` is the message for the caller."""


@dataclass(frozen=True)
class ClusterHealth:
    """Whether the backend reached the cluster at its last attempt."""

    reachable: bool | None = None  # None: not tried yet
    message: str = ""
    since: float = 0.0
    cores: int | None = None  # what it offers the scheduler's apps, as last read

    @property
    def ok(self) -> bool:
        """Reachable and offering cores: an empty cluster runs nothing, queues wait."""
        return bool(self.reachable) and self.cores != 0

    def describe(self) -> str:
        if self.reachable is None:
            return "cluster not contacted yet"
        if self.reachable and self.cores == 0:
            return ("cluster reachable but offers no cores (no alive worker, or every core held "
                    "by apps the scheduler does not manage): submissions are queued")
        if self.reachable:
            return "cluster reachable"
        return f"cluster unreachable ({self.message}): submissions are queued until it is back"


@dataclass(frozen=True)
class CounterOffer:
    """Start sooner with fewer executors (``service/estimating``, docs/design/estimates.md):
    ``executors`` first executors (minExecutors) instead of ``instead_of``, starting at
    ``start_at``; ``text`` says it in one line."""

    executors: int
    start_at: float
    instead_of: int
    text: str


@dataclass(frozen=True)
class StartEstimate:
    """When a queued app is estimated to start (None: beyond the horizon); its counter-offer."""

    start_at: float | None
    offer: CounterOffer | None = None


NO_ESTIMATE = StartEstimate(None)


@dataclass(frozen=True)
class AppRead:
    """One app as every reader shows it (docs/user/api.md's app object, Spark REST status)."""

    id: str
    seq: int
    name: str
    user: str
    kind: str
    queue: str
    priority: int
    state: AppState
    position: int | None
    reason: str
    reason_code: WaitCode | None  # a waiting app's (``engine.waits``); None once it started
    submitted_at: float
    started_at: float | None
    first_executor_at: float | None
    finished_at: float | None
    exit_code: int | None
    executors: int
    target: int
    demand: int
    spark_app_id: str | None
    warnings: tuple[str, ...]
    log_path: str | None
    grant: int = 0  # its target placed on the workers as they free: what its agent allows
    # While queued: the last background estimate's (``service/estimating``); None otherwise.
    estimated_start: float | None = None
    counter_offer: CounterOffer | None = None
    # The gang it asked for (docs/design/gangs.md), and while it reserves, its reservation
    # (``EngineView.reservation``: held / needed, since, deadline).
    gang: Gang | None = None
    reservation: Reservation | None = None
    cluster: str | None = None  # the one it was placed on, behind several clusters only

    @staticmethod
    def of(sub: Submission, log_path: str | None, facts: AppFacts | None,
           position: int | None, reason: str, reason_code: WaitCode | None = None,
           estimate: StartEstimate = NO_ESTIMATE,
           reservation: Reservation | None = None) -> AppRead:
        if facts is None:  # committed, not stepped yet
            return AppRead(
                id=sub.id, seq=sub.seq, name=sub.name, user=sub.user, kind=sub.kind,
                queue=sub.queue, priority=sub.spec.priority, state=AppState.ACCEPTED, position=None,
                reason=reason, reason_code=reason_code, submitted_at=sub.submitted_at,
                started_at=None, first_executor_at=None, finished_at=None, exit_code=None,
                executors=0, target=0, demand=0, spark_app_id=None, warnings=sub.warnings,
                log_path=log_path, estimated_start=estimate.start_at,
                counter_offer=estimate.offer, gang=sub.spec.gang)
        return AppRead(
            id=sub.id, seq=sub.seq, name=sub.name, user=sub.user, kind=sub.kind, queue=sub.queue,
            priority=facts.priority, state=facts.state, position=position, reason=reason,
            reason_code=reason_code, submitted_at=sub.submitted_at, started_at=facts.launched_at,
            first_executor_at=facts.first_executor_at, finished_at=facts.finished_at,
            exit_code=facts.exit_code, executors=facts.executors, target=facts.target,
            grant=facts.grant, demand=facts.demand, spark_app_id=facts.spark_app_id,
            warnings=sub.warnings, log_path=log_path, estimated_start=estimate.start_at,
            counter_offer=estimate.offer, gang=sub.spec.gang, reservation=reservation)

    @staticmethod
    def stored(app: StoredApp) -> AppRead:
        """A final app from the store (ended: nothing about it changes any more)."""
        sub = app.submission
        return AppRead(
            id=sub.id, seq=sub.seq, name=sub.name, user=sub.user, kind=sub.kind, queue=sub.queue,
            priority=app.priority, state=app.state, position=None, reason=app.reason,
            reason_code=None, submitted_at=sub.submitted_at, started_at=app.started_at,
            first_executor_at=app.first_executor_at, finished_at=app.finished_at,
            exit_code=app.exit_code, executors=0, target=0, demand=0,
            spark_app_id=app.spark_app_id, warnings=sub.warnings,
            log_path=app.log_path, gang=sub.spec.gang, cluster=app.cluster)


@dataclass(frozen=True)
class ReadView:
    version: int
    engine: EngineView
    submissions: Submissions
    final: Mapping[str, AppRead]  # ended apps loaded at a restart: never in the engine
    health: ClusterHealth = ClusterHealth()
    plan: str | None = None  # the time-of-day plan in force (``service.plans``)
    next_plan: str | None = None  # the next one that will change the queues, and when
    master: str = ""
    last_cycle_at: float | None = None
    # queued apps' estimated starts (``service/estimating``), when that run looked (None: none)
    estimates: Mapping[str, StartEstimate] = field(default_factory=dict)
    estimated_at: float | None = None
    # Built on first use, per view (not copied by ``replace``: each view has its own).
    _by_spark_id: dict[str, str] = field(default_factory=dict, init=False, compare=False,
                                         repr=False)
    # Shared by every view of a ReadModel (``replace`` passes it on): ``_read``, ``queued``.
    _reads: dict[str, tuple] = field(default_factory=dict, compare=False, repr=False)
    _queued: dict[str, tuple] = field(default_factory=dict, compare=False, repr=False)

    # --- apps -----------------------------------------------------------------------------

    def never_fits(self, spec: AppSpec) -> str | None:
        """Why a submission can never run on the cluster as it is now (``placement.never_fits``
        on the engine's workers and queue tree, plans applied), or None. Not asked while it is
        out of reach or names no worker: the app queues until it can be told."""
        workers = self.engine.workers  # several clusters: None (``clusters.fits``)
        if workers is None or not workers.sizes or (self.health.reachable is not None
                                                    and not self.health.ok):
            return never_fits_anywhere(self.engine, spec) if self.engine.cluster_rows else None
        path = QueueTree.of(self.engine.root).path.get(spec.queue)
        return None if path is None else never_fits(spec, path, workers)

    def app(self, app_id: str) -> AppRead | None:
        """The app in memory (None: unknown, or forgotten - the store has it then)."""
        final = self.final.get(app_id)
        if final is not None:
            return final
        sub = self.submissions.get(app_id)
        if sub is None:
            return None
        facts = self.engine.apps.get(app_id)
        position = self.engine.position(app_id) if facts is not None else None
        return self._read(sub, facts, position)

    def apps(self, queue: str | None = None, state: AppState | None = None) -> list[AppRead]:
        """Queued apps in queue order first (leaf queues in tree order), then the rest by
        submission."""
        out: list[AppRead] = []
        listed: set[str] = set()
        subs = self.submissions.snapshot(queue)
        if state in (None, AppState.ACCEPTED):
            leaves = [leaf.name for leaf in self.engine.root.leaves()] if queue is None else [queue]
            for leaf in leaves:
                for i, app_id in enumerate(self.engine.pending.get(leaf, ()), 1):
                    sub = subs.get(app_id)
                    if sub is None:
                        continue
                    facts = self.engine.apps[app_id]
                    listed.add(app_id)
                    out.append(self._read(sub, facts, i))
        rest = [a for a in self._unlisted(subs, listed, queue)
                if queue in (None, a.queue) and state in (None, a.state)]
        rest.sort(key=lambda a: a.seq)
        return out + rest

    def _unlisted(self, subs: dict[str, Submission], listed: set[str],
                  queue: str | None = None) -> Iterator[AppRead]:
        """The apps not listed yet (of ``queue`` only, if given: an app of another queue is
        skipped before its answer is built, so one queue's list does not cost all apps')."""
        yield from (a for a in self.final.values() if a.id not in listed)
        for app_id, sub in subs.items():
            if app_id in listed or app_id in self.final or queue not in (None, sub.queue):
                continue
            facts = self.engine.apps.get(app_id)
            position = self.engine.position(app_id) if facts is not None else None
            yield self._read(sub, facts, position)

    def _read(self, sub: Submission, facts: AppFacts | None, position: int | None) -> AppRead:
        """``AppRead.of``, kept per app between views: an app whose submission and engine
        facts are the same objects as at its last read, at the same place, is read as it was
        (most apps between two cycles; building it again was a quarter of a one-queue list's
        time at 10,000 apps). Nor is a waiting app's reason made again when what it is made
        of (``_reason_key``) and its driver's log are as they were. At most ``_READS_KEPT``."""
        key = self._reason_key(sub, facts)
        queued = facts is None or facts.state is AppState.ACCEPTED
        estimate = self.estimates.get(sub.id, NO_ESTIMATE) if queued else NO_ESTIMATE
        reservation = self.engine.reservation(sub.id) if queued else None
        log_path = self.submissions.log_path(sub.id)
        last = self._reads.get(sub.id)
        if (last is not None and last[0] is sub and last[1] is facts and last[2] == position
                and last[3] == key and last[4] is estimate and last[6] is reservation
                and last[7] == log_path):
            return last[5]
        if len(self._reads) >= _READS_KEPT:
            self._reads.clear()  # forgotten apps' entries go too; the next reads refill it
        reason, code = self._reason(sub, facts, position)
        read = AppRead.of(sub, log_path, facts, position, reason, code, estimate, reservation)
        if (where := self.engine.clusters.get(sub.id)) is not None:  # several clusters
            read = replace(read, cluster=where)
        self._reads[sub.id] = (sub, facts, position, key, estimate, read, reservation, log_path)
        return read

    def _reason_key(self, sub: Submission, facts: AppFacts | None) -> tuple:
        """What a waiting app's reason is made of beside its facts and place (``_reason``)."""
        if facts is None or facts.state is not AppState.ACCEPTED:
            return ()
        engine = self.engine
        pending = engine.pending.get(sub.queue)
        # Apps held aside (``does_not_fit_now``) decide who the head is (``wait_of``).
        held = engine.held or None
        return (engine.waiting.get(sub.queue), pending[0] if pending else None, self.health,
                held)

    def resolve(self, any_id: str) -> tuple[str, bool] | None:
        """(our app id, given as a Spark application id?) for an app in memory."""
        if self.app(any_id) is not None:
            return any_id, False
        if not self._by_spark_id:
            for facts in self.engine.apps.values():
                if facts.spark_app_id:
                    self._by_spark_id[facts.spark_app_id] = facts.app_id
            for a in self.final.values():
                if a.spark_app_id:
                    self._by_spark_id[a.spark_app_id] = a.id
        app_id = self._by_spark_id.get(any_id)
        return (app_id, True) if app_id else None

    def _reason(self, sub: Submission, facts: AppFacts | None,
                position: int | None) -> tuple[str, WaitCode | None]:
        """The app's reason and, while it waits, its code (``engine.waits``: the queue's wait
        for its head, ``behind_app`` behind it, ``cluster_unavailable`` over both)."""
        if facts is None:
            return JOINS_NEXT_CYCLE, WaitCode.NEXT_CYCLE
        if facts.state is not AppState.ACCEPTED:
            return facts.reason, None
        if self.health.reachable is not None and not self.health.ok:  # no cluster to start in
            why = self.health.describe()
            if position is not None and position > 1:
                why += f" ({position - 1} app(s) ahead of it in {sub.queue})"
            return why, WaitCode.CLUSTER_UNAVAILABLE
        wait = self.engine.wait_of(facts.app_id, position)
        if wait is None:  # not in its queue's listing: cannot be while ACCEPTED, but say so
            wait = Wait(WaitCode.NEXT_CYCLE, JOINS_NEXT_CYCLE)
        return wait.text, wait.code

    def queued(self, leaf: str, user: str | None = None) -> tuple[int, int]:
        """(apps queued in ``leaf``, of them ``user``'s; 0 without a user): the engine's queued
        apps, and the leaf's newest submissions that no cycle has stepped yet (committed in
        submission order, stepped in that order: they are the newest). O(not stepped), and
        once per engine view O(queued in the leaf) for the count by user."""
        engine = self.engine
        pending = engine.pending.get(leaf, ())
        total, mine = len(pending), 0
        if user is not None:
            cached = self._queued.get(leaf)
            if cached is None or cached[0] is not engine:
                users = Counter(sub.user for sub in map(self.submissions.get, pending) if sub)
                cached = self._queued[leaf] = (engine, users)
            mine = cached[1].get(user, 0)
        for sub in self.submissions.newest(leaf, lambda s: s.id not in engine.apps):
            total += 1
            mine += user is not None and sub.user == user
        return total, mine

    # --- queues, health, metrics ------------------------------------------------------------

    def queue_rows(self) -> list[tuple[Queue, QueueUsage | None, str | None]]:
        """Every queue, parents too: its settings (plans applied), usage and why it waits."""
        rows = []
        for q in self.engine.root.walk():
            u = self.engine.usage.get(q.name)
            wait = self.engine.waiting.get(q.name) if q.is_leaf else None
            waiting = wait.text if wait is not None else None
            if self.health.reachable is not None and not self.health.ok and u and u.pending:
                waiting = self.health.describe()
            rows.append((q, u, waiting))
        return rows

    def queue_wait_codes(self) -> dict[str, WaitCode]:
        """Each waiting leaf's code (``queue_rows``' reason), by queue name."""
        down = self.health.reachable is not None and not self.health.ok
        out = {leaf: WaitCode.CLUSTER_UNAVAILABLE if down else wait.code
               for leaf, wait in self.engine.waiting.items()}
        if down:
            for leaf, u in self.engine.usage.items():
                if u.pending and leaf in self.engine.pending:
                    out[leaf] = WaitCode.CLUSTER_UNAVAILABLE
        return out

    def health_row(self) -> dict:
        return {
            "status": "ok" if self.health.ok else "degraded",
            "cluster_reachable": self.health.reachable,
            "cluster": self.health.describe(),
            "master": self.master,
            "plan": self.plan, "next_plan": self.next_plan,
            "apps": len(self.submissions) + len(self.final),
            "last_cycle_at": self.last_cycle_at,
            "driver_host": self.host_row(),
        }

    def host_row(self) -> dict:
        """The scheduler's host as room for its client-mode drivers (``engine.host_room``)."""
        e = self.engine
        return {"memory_mib": e.host_room and e.host_room.mem_mib, "used_mib": e.host_used.mem_mib,
                "drivers": e.host_drivers, "driver_slots": e.driver_slots}

    def states(self) -> Iterable[tuple[str, AppState]]:
        """(queue, state) of every app in memory, for the metrics."""
        yield from ((a.queue, a.state) for a in self.final.values())
        for app_id, sub in self.submissions.snapshot().items():
            if app_id in self.final:
                continue
            facts = self.engine.apps.get(app_id)
            yield sub.queue, facts.state if facts is not None else AppState.ACCEPTED


class ReadModel:
    """Holds the current ``ReadView``; ``publish`` makes the next one."""

    def __init__(self, first: ReadView):
        self._view = first
        self._lock = threading.Lock()  # two publishers (cycle, writer) must not lose a change

    @property
    def view(self) -> ReadView:
        return self._view

    def publish(self, **changes) -> ReadView:
        with self._lock:
            self._view = replace(self._view, version=self._view.version + 1, **changes)
            return self._view
