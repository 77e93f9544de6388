"""The simulator: the real ``Scheduler``, the memory cluster and a virtual clock.

The simulator is one of the engine's drivers, like the server, and drives it the same way:
every ``cycle_s`` it polls the cluster backend (``MemoryBackend.poll(now)``, which moves the
memory cluster to ``now``), steps ``Scheduler.step(now, events)`` with the workload's
submissions and priority updates plus what the cluster reported, and carries out the
decisions with ``backends.carry.carry_out`` -- the server's own function. Nothing here decides
who runs, and nothing here models Spark: the cluster (``backends/memory``) does.

- Time is simulated seconds from 0. Submissions, priority updates and cycles sit in a heap as
  ``(time, priority, seq, event)``; at one instant the cluster's facts come first (the cluster
  is advanced up to and including a cycle's time), then submissions and priority updates, then
  the cycle, so a cycle sees everything that happened up to and including its time.
- Each app is launched as a ``Launch`` like the server's: a Python app's spark-submit
  arguments (client mode) or a Spark REST request (in-cluster driver), its sizes as Spark
  properties, its pre-processing and stages as ``spark.sessionsched.memory.*`` properties.
- What the engine hears, at each cycle: submissions, priority updates, and the backend's
  report -- DriverStarted, each app's executor list (with idle flags) and demand when they
  changed, DriverExited -- as an agent's heartbeat would carry them. Submissions and updates
  beyond the engine's event slice (``engine.budget``) wait for the next cycle, in order, as
  the server's inbox does.
- A gang's ``gang_ready`` (``_gang_ready``): the cycle that launched it as a gang - the
  engine launches a gang only when its driver's and all ``N`` executors' room is held for it
  (reserved as it freed, or free at once), and that room is its floor from then on. One whose
  timeout ran out never is: ``hard``, it failed; ``soft``, it goes on as an ordinary app (the
  engine's record of it has lost its gang) and its launch is not a gang's.
- The run ends when every app finished; or when nothing can change any more: no simulated
  event is pending (only scheduler cycles) and nothing changed for longer than every timeout in
  play (starting and reclaim timeouts, idle timeout, start latencies) - a deadlock; or at
  ``max_time_s``. Apps not finished then are ``stuck``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..backends.base import Launch
from ..backends.carry import carry_out
from ..backends.federated import FederatedBackend
from ..backends.memory import (
    EXIT_CODE,
    STARTUP,
    TAIL,
    WARMUP,
    WORK,
    MemoryBackend,
    MemoryCluster,
)
from ..backends.memory.pool import Overcommit
from ..backends.memory.spark import Phase, SparkApp
from ..backends.memory.timers import CYCLE, WORKLOAD, EventHeap
from ..engine import (
    Decision,
    Event,
    MarkState,
    PriorityChanged,
    QueuesChanged,
    Scheduler,
    Submitted,
)
from ..engine.clusters import ClusterReachable, ClusterSpec, Federation, Placed
from ..model import AppState
from ..runtime import gc_pacer
from .cluster_config import Cluster, NamedCluster
from .queue_trees import QueueChange
from .record import AppTimes, Record, Series
from .result import SimResult, build_result
from .workload import SimApp, Workload


def launch_for(app: SimApp, node_sort: str = "fair") -> Launch:
    """The Launch the server would hand the backend for this app (module doc)."""
    spec = app.spec
    conf = {
        **app.conf,  # the workload's own properties (a gang's), under the ones set from its keys
        "spark.app.name": app.name,
        "spark.driver.cores": str(spec.driver.cores),
        "spark.driver.memory": f"{spec.driver.mem_mib}m",
        "spark.executor.cores": str(spec.executor.cores),
        "spark.executor.memory": f"{spec.executor.mem_mib}m",
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.minExecutors": str(spec.min_executors),
        WORK: ",".join(s.work() for s in app.stages) or "0",
        STARTUP: repr(app.startup_s),
    }
    if app.tail_s:
        conf[TAIL] = repr(app.tail_s)
    if app.warmup_s:
        conf[WARMUP] = repr(app.warmup_s)
    if app.exit_code:
        conf[EXIT_CODE] = str(app.exit_code)
    if spec.max_executors is not None:
        conf["spark.dynamicAllocation.maxExecutors"] = str(spec.max_executors)
    if spec.driver_in_cluster:
        request = {"action": "CreateSubmissionRequest", "appResource": "file:/sim/app.jar",
                   "mainClass": "Simulated", "appArgs": [], "sparkProperties": {}}
        return Launch(app.name, app.name, rest_request=request, conf=conf, in_cluster=True,
                      node_sort=node_sort)
    return Launch(app.name, app.name, argv=("app.py",), conf=conf, node_sort=node_sort)


# --- workload events --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Submit:
    app: str


@dataclass(frozen=True)
class _Update:
    app: str
    priority: int


@dataclass(frozen=True)
class _Cycle:
    n: int


class Simulator:
    """``scheduler``: the engine to drive; a fresh ``Scheduler`` for the workload by default
    (tests pass a stand-in to exercise the cluster model alone). ``cluster``/``backend``: the
    memory cluster the workload runs on and the backend the decisions go through."""

    def __init__(self, workload: Workload, scheduler: Scheduler | None = None):
        self.w = workload
        c = workload.cluster
        self.clusters = {n.name: _memory_cluster(n.cluster)
                         for n in workload.clusters or (NamedCluster("", c),)}
        self.cluster = next(iter(self.clusters.values()))  # the only one, or the first
        if workload.clusters:  # one engine per cluster, placing each app once (``clusters``)
            self.sched = scheduler or Federation(
                workload.root, [ClusterSpec(n.name, n.weight, n.lost_timeout_s)
                                for n in workload.clusters], workload.placement)
            self.backend = FederatedBackend(
                {name: MemoryBackend(mc) for name, mc in self.clusters.items()},
                self.sched.cluster_of)
        else:
            self.sched = scheduler or Scheduler(workload.root, c.capacity, c.driver_slots)
            self.backend = MemoryBackend(self.cluster)
        self.apps = {a.name: a for a in workload.apps}
        self._sorts = {q.name: q.node_sort.value for q in workload.root.leaves()}
        self.heap: EventHeap = EventHeap()
        self.rec = Record(
            apps={a.name: AppTimes(a.spec.submitted_at, a.spec.priority) for a in workload.apps},
        )
        self._outbox: list[Event] = []
        self._facts = 0  # workload events in the heap (everything but cycles)
        self._clock = 0.0
        self._horizon_s = self._quiet_horizon()
        self._queued = {q.name: 0 for q in workload.root.leaves()}  # ACCEPTED apps per queue
        self._ended_queued = 0  # apps ended while queued (their queue's max_wait): no driver
        self._gangs = {a.name for a in workload.apps if a.spec.gang is not None}  # unlaunched
        self._start_timeline()

    def _start_timeline(self) -> None:
        tl = self.rec.timeline
        for name in self.apps:
            tl.executors[name] = Series([0.0], [0])
            tl.executor_cores[name] = Series([0.0], [0])
            tl.states[name] = Series([0.0], [""])
            tl.priorities[name] = Series([0.0], [self.apps[name].spec.priority])
        for q in self._queued:
            tl.pending[q] = Series([0.0], [0])
        tl.driver_cores = Series([0.0], [0])

    def _quiet_horizon(self) -> float:
        """Longer than every timeout in play: a run quiet for this long cannot change again."""
        c = self.w.cluster
        timeouts = [c.driver_start_s, c.executor_start_s, c.executor_idle_timeout_s]
        for root in (self.w.root, *(change.root for change in self.w.queue_changes)):
            for q in root.leaves():
                timeouts += [q.starting_timeout_s, max(q.reclaim_timeout_s, 0.0)]
        return max(timeouts) + 2 * c.cycle_s

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> SimResult:
        for app in self.w.apps:
            self._push(app.spec.submitted_at, WORKLOAD, _Submit(app.name))
            for up in app.updates:
                self._push(up.at_s, WORKLOAD, _Update(app.name, up.priority))
        for out in self.w.outages:
            self._push(out.at_s, WORKLOAD, ClusterReachable(out.cluster, False))
            self._push(out.until_s, WORKLOAD, ClusterReachable(out.cluster, True))
        self._push_queue_changes()
        self.heap.push(0.0, CYCLE, _Cycle(0))
        while self.heap:
            now, _, ev = self.heap.pop()
            self._clock = now
            if isinstance(ev, _Cycle):
                if self._cycle(now, ev.n):
                    break
                gc_pacer.between_cycles()  # a long GC pass here, not inside the next step
                continue
            self._facts -= 1
            self.rec.last_change_s = now
            self._handle(now, ev)
        self.rec.end_s = self._clock
        for mc in self.clusters.values():
            self.rec.busy_core_s += mc.busy.core_s
            for name, seconds in mc.busy.seconds.items():
                self.rec.busy_by_resource[name] = self.rec.busy_by_resource.get(name, 0) + seconds
            self.rec.executor_waits += mc.pool.executor_waits
            self.rec.reclaim_kills += mc.reclaim_kills
            for name, sa in mc.apps.items():
                self.rec.usage[name] = sa.usage.at(self._clock).figures()
        self.rec.reclaim_kills.sort()
        return build_result(self.w, self.rec)

    def _push_queue_changes(self) -> None:
        for change in self.w.queue_changes:  # a config's plans (``queue_trees``)
            self._push(change.at_s, WORKLOAD, change)

    def _push(self, at: float, priority: int, ev: object) -> None:
        self._facts += 1
        self.heap.push(at, priority, ev)

    def _cycle(self, now: float, n: int) -> bool:
        """One scheduler step; True when the run is over."""
        polled = self.backend.poll(now)
        self.rec.last_change_s = max(self.rec.last_change_s,
                                     *(mc.last_event_s for mc in self.clusters.values()))
        # Submissions and priority updates beyond the step's event slice wait, in order, for
        # the next cycle (``engine.budget``); the cluster's report is always handed over whole.
        limit = self.sched.budget.events if hasattr(self.sched, "budget") else None
        take = len(self._outbox) if limit is None else limit
        events = self._outbox[:take] + polled
        self._outbox = self._outbox[take:]
        t0 = time.perf_counter()
        decisions = self.sched.step(now, events)
        self.rec.cycle_ms.append((time.perf_counter() - t0) * 1000.0)
        if events or decisions:
            self.rec.last_change_s = now
        self._record(decisions)
        carried = carry_out(decisions, self.backend, self._launch_for)
        if carried.failed:  # the engine launched what cannot start: a bug, not a result
            raise Overcommit("; ".join(why for _, why in carried.failed))
        for app_id, _, _ in carried.launched:
            self.rec.apps[app_id].admitted = now
        if self._gangs:
            self._gang_ready(now, {app_id for app_id, _, _ in carried.launched})
        self._sample(now)
        if self._done() == len(self.apps):
            self.rec.end_reason = "every app finished"
            self.rec.makespan_s = self._last_finish()
            return True
        if now >= self.w.cluster.max_time_s:
            self.rec.end_reason = f"stopped at max_time_s {self.w.cluster.max_time_s:g}"
            self.rec.makespan_s = now  # cut short while still working
            return True
        pending = self._facts + len(self._outbox) + sum(
            mc.pending_timers() for mc in self.clusters.values())
        if pending == 0 and self._nothing_can_change(now, events, decisions):
            since = self.rec.last_change_s
            self.rec.end_reason = f"deadlock: nothing changed since t={since:g}s, nothing can"
            self.rec.makespan_s = max(self._last_finish(), since)
            return True
        self.heap.push((n + 1) * self.w.cluster.cycle_s, CYCLE, _Cycle(n + 1))
        return False

    def _launch_for(self, d: Decision) -> Launch:
        app = self.apps[d.app_id]
        return launch_for(app, self._sorts[app.spec.queue])

    def _gang_ready(self, now: float, launched: set[str]) -> None:
        """Module doc: a gang launched as a gang is ready now. One whose ``soft`` timeout ran
        out is launched later as an ordinary app: the engine's record no longer has its gang."""
        records = getattr(self.sched, "apps", {})
        for name in launched & self._gangs:
            self._gangs.discard(name)
            rec = records.get(name)
            if rec is None or rec.spec.gang is not None:
                self.rec.apps[name].gang_ready = now

    def _done(self) -> int:
        done = sum(1 for mc in self.clusters.values() for sa in mc.apps.values()
                   if sa.phase is Phase.DONE)
        return done + self._ended_queued

    def _spark_app(self, name: str) -> SparkApp | None:
        """The app as the memory cluster it was launched on has it; None before its launch."""
        for mc in self.clusters.values():
            sa = mc.apps.get(name)
            if sa is not None:
                return sa
        return None

    def _last_finish(self) -> float:
        return max(
            (t.finished for t in self.rec.apps.values() if t.finished is not None), default=0.0
        )

    def _nothing_can_change(self, now: float, events: list, decisions: list) -> bool:
        """Called when no simulated event is pending: only the engine's own timers could still
        change anything. Quiet for longer than every timeout in play means none will; an engine
        that tells its next wake-up (``next_wakeup()``, None: never) lets the run stop at once."""
        if now - self.rec.last_change_s >= self._horizon_s:
            return True
        wakeup = getattr(self.sched, "next_wakeup", None)
        return not events and not decisions and wakeup is not None and wakeup() is None

    def _sample(self, now: float) -> None:
        """The timeline and each app's milestones, as the cluster has them now."""
        tl = self.rec.timeline
        for name, app in self.apps.items():
            sa = self._spark_app(name)
            held = 0 if sa is None else len(sa.executors)
            tl.executors[name].set(now, held)
            tl.executor_cores[name].set(now, held * app.spec.executor.cores)
            times = self.rec.apps[name]
            tl.states[name].set(now, "" if times.state is None else times.state.value)
            if sa is not None:
                times.first_executor = sa.first_executor_at
                times.finished = sa.ended_at
        for q, n in self._queued.items():
            tl.pending[q].set(now, n)
        tl.driver_cores.set(now, sum(mc.driver_cores for mc in self.clusters.values()))
        tl.whole_workers.set(now, sum(mc.pool.whole() for mc in self.clusters.values()))

    def _set_state(self, name: str, state: AppState) -> None:
        times = self.rec.apps[name]
        queue = self.apps[name].spec.queue
        self._queued[queue] += (state is AppState.ACCEPTED) - (times.state is AppState.ACCEPTED)
        times.state = state

    def _record(self, decisions: list[Decision]) -> None:
        """The states the engine decided (an app whose driver already ended keeps its end)."""
        for d in decisions:
            if isinstance(d, Placed):
                self.rec.apps[d.app_id].cluster = d.cluster
            if isinstance(d, MarkState):
                sa = self._spark_app(d.app_id)
                if sa is None or sa.phase is not Phase.DONE or d.state.terminal:
                    self._set_state(d.app_id, d.state)
                if sa is None and d.state.terminal:  # ended queued: it ends now, no driver
                    self.rec.apps[d.app_id].finished = d.at
                    self._ended_queued += 1

    def _handle(self, now: float, ev: _Submit | _Update | ClusterReachable | QueueChange
                ) -> None:
        if isinstance(ev, ClusterReachable):
            self._outbox.append(ev)
            return
        if isinstance(ev, QueueChange):
            self._outbox.append(QueuesChanged(ev.root))
            self.rec.plans.append((now, ev.plan))
            return
        app = self.apps[ev.app]
        if isinstance(ev, _Submit):
            self._outbox.append(Submitted(app.spec))
            self._set_state(app.name, AppState.ACCEPTED)
        else:
            self._outbox.append(PriorityChanged(app.name, ev.priority))
            self.rec.apps[app.name].priority = ev.priority
            self.rec.timeline.priorities[app.name].set(now, ev.priority)


def _memory_cluster(c: Cluster) -> MemoryCluster:
    return MemoryCluster(
        c.capacity, c.driver_slots, driver_start_s=c.driver_start_s,
        executor_start_s=c.executor_start_s, executor_idle_timeout_s=c.executor_idle_timeout_s,
        workers=c.workers, sizes=c.sizes, host_cpus=c.host_cpus,
    )


def simulate(workload: Workload) -> SimResult:
    return Simulator(workload).run()
