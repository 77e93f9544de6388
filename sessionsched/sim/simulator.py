"""A discrete-event model of a Spark standalone cluster driven by the real ``Scheduler``.

The simulator is one of the engine's drivers, like the server: it turns what happens in the
simulated cluster into engine events, calls ``Scheduler.step(now, events)`` every ``cycle_s``
and carries out the decisions. Nothing here decides who runs.

Model (the Spark side is in ``spark.py``):
- Time is simulated seconds from 0. Events sit in a heap as ``(time, priority, seq, event)``;
  at one instant the cluster's facts come first, then submissions and priority updates, then
  the scheduler cycle, so a cycle sees everything that happened up to and including its time.
- The cluster is one pool of cores and memory (no per-worker packing). In-cluster drivers hold
  their cores and memory from launch until they exit; client-mode drivers hold a driver slot.
  Executors hold theirs from launch (``executor_start_s`` before they are usable) until they
  are gone. What does not fit waits for room, as in a standalone master (``pool.py``).
- What the engine hears, at each cycle (an agent's heartbeat): submissions, priority updates,
  DriverStarted, each app's executor list (with idle flags) and demand when they changed, and
  DriverExited. ``LaunchDriver`` starts a driver after ``driver_start_s``; ``SetTarget.grant``
  caps the app's executors; ``Reclaim`` KILL kills now (running tasks go back to pending),
  DECOMMISSION stops new tasks and lets the executor leave when its tasks are done (killed at
  the deadline), IDLE releases the executor if it is idle and else skips the order (the
  engine orders it again once it is idle), as the driver agent does.
- The run ends when every app finished; or when nothing can change any more: no simulated
  event is pending (only scheduler cycles) and nothing changed for longer than every timeout in
  play (starting and reclaim timeouts, idle timeout, start latencies) - a deadlock; or at
  ``max_time_s``. Apps not finished then are ``stuck``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..engine import (
    Decision,
    DemandChanged,
    DriverExited,
    DriverStarted,
    Event,
    ExecutorsChanged,
    LaunchDriver,
    MarkState,
    PriorityChanged,
    Reclaim,
    Scheduler,
    SetTarget,
    StopDriver,
    Submitted,
)
from ..model import AppState, Executor, ReclaimMode, Resources
from .heap import CLUSTER, CYCLE, WORKLOAD, EventHeap
from .pool import Pool, Started
from .record import AppTimes, Record, Series
from .result import SimResult, build_result
from .spark import Phase, SimExecutor, SparkApp
from .workload import Workload

KILLED_EXIT = 143  # a driver stopped by the scheduler, as SIGTERM's shell code


# --- simulated events -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Submit:
    app: str


@dataclass(frozen=True)
class _Update:
    app: str
    priority: int


@dataclass(frozen=True)
class _DriverUp:
    app: str


@dataclass(frozen=True)
class _StartupDone:
    app: str


@dataclass(frozen=True)
class _ExecutorUp:
    app: str
    executor_id: str


@dataclass(frozen=True)
class _TaskDone:
    app: str
    executor_id: str
    task_id: int


@dataclass(frozen=True)
class _IdleCheck:
    app: str
    executor_id: str
    idle_since: float


@dataclass(frozen=True)
class _Deadline:
    app: str
    executor_id: str


@dataclass(frozen=True)
class _Cycle:
    n: int


class Simulator:
    """``scheduler``: the engine to drive; a fresh ``Scheduler`` for the workload by default
    (tests pass a stand-in to exercise the cluster model alone)."""

    def __init__(self, workload: Workload, scheduler: Scheduler | None = None):
        self.w = workload
        c = workload.cluster
        self.sched = scheduler or Scheduler(workload.root, c.capacity, c.driver_slots)
        self.apps = {a.name: SparkApp(a) for a in workload.apps}
        self.heap: EventHeap = EventHeap()
        self.rec = Record(
            apps={a.name: AppTimes(a.spec.submitted_at, a.spec.priority) for a in workload.apps}
        )
        self._outbox: list[Event] = []
        self._reported: dict[str, tuple[tuple[Executor, ...], int]] = {}
        self._facts = 0  # simulated events in the heap (everything but cycles)
        self.pool = Pool(c.capacity, c.driver_slots)
        self._busy_cores = 0
        self._clock = 0.0
        self._task_ids = 0
        self._done = 0
        self._horizon_s = self._quiet_horizon()
        # Apps changed since their last report to the engine / since the last timeline sample.
        self._order = {a.name: i for i, a in enumerate(workload.apps)}
        self._unreported: dict[str, None] = {}
        self._unsampled: dict[str, None] = {}
        self._queued = {q.name: 0 for q in workload.root.leaves()}  # ACCEPTED apps per queue
        self._driver_cores = 0  # cores of in-cluster drivers that have their room
        self._start_timeline()

    def _start_timeline(self) -> None:
        tl = self.rec.timeline
        for name in self.apps:
            tl.executors[name] = Series([0.0], [0])
            tl.executor_cores[name] = Series([0.0], [0])
            tl.states[name] = Series([0.0], [""])
            tl.priorities[name] = Series([0.0], [self.apps[name].app.spec.priority])
        for q in self._queued:
            tl.pending[q] = Series([0.0], [0])
        tl.driver_cores = Series([0.0], [0])

    def _quiet_horizon(self) -> float:
        """Longer than every timeout in play: a run quiet for this long cannot change again."""
        c = self.w.cluster
        timeouts = [c.driver_start_s, c.executor_start_s, c.executor_idle_timeout_s]
        for q in self.w.root.leaves():
            timeouts += [q.starting_timeout_s, max(q.reclaim_timeout_s, 0.0)]
        return max(timeouts) + 2 * c.cycle_s

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> SimResult:
        for app in self.w.apps:
            self._push(app.spec.submitted_at, WORKLOAD, _Submit(app.name))
            for up in app.updates:
                self._push(up.at_s, WORKLOAD, _Update(app.name, up.priority))
        self.heap.push(0.0, CYCLE, _Cycle(0))
        while self.heap:
            now, _, ev = self.heap.pop()
            self.rec.busy_core_s += self._busy_cores * (now - self._clock)
            self._clock = now
            if isinstance(ev, _Cycle):
                if self._cycle(now, ev.n):
                    break
                continue
            self._facts -= 1
            self.rec.last_change_s = now
            self._handle(now, ev)
        self.rec.end_s = self._clock
        self.rec.executor_waits = self.pool.executor_waits
        return build_result(self.w, self.rec)

    def _push(self, at: float, priority: int, ev: object) -> None:
        self._facts += 1
        self.heap.push(at, priority, ev)

    def _cycle(self, now: float, n: int) -> bool:
        """One scheduler step; True when the run is over."""
        events = self._outbox + self._reports()
        self._outbox = []
        t0 = time.perf_counter()
        decisions = self.sched.step(now, events)
        self.rec.cycle_ms.append((time.perf_counter() - t0) * 1000.0)
        if events or decisions:
            self.rec.last_change_s = now
        self._apply(now, decisions)
        self._sample(now)
        if self._done == len(self.apps):
            self.rec.end_reason = "every app finished"
            self.rec.makespan_s = self._last_finish()
            return True
        if now >= self.w.cluster.max_time_s:
            self.rec.end_reason = f"stopped at max_time_s {self.w.cluster.max_time_s:g}"
            self.rec.makespan_s = now  # cut short while still working
            return True
        if self._facts == 0 and self._nothing_can_change(now, events, decisions):
            since = self.rec.last_change_s
            self.rec.end_reason = f"deadlock: nothing changed since t={since:g}s, nothing can"
            self.rec.makespan_s = max(self._last_finish(), since)
            return True
        self.heap.push((n + 1) * self.w.cluster.cycle_s, CYCLE, _Cycle(n + 1))
        return False

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

    def _touch(self, name: str) -> None:
        self._unreported[name] = None
        self._unsampled[name] = None

    def _reports(self) -> list[Event]:
        """Each live app's executor list and demand, when changed since the last report."""
        out: list[Event] = []
        for name in sorted(self._unreported, key=self._order.__getitem__):
            sa = self.apps[name]
            if sa.phase in (Phase.QUEUED, Phase.DONE):
                continue
            executors = tuple(
                Executor(e.executor_id, e.started_at, idle=not e.tasks)
                for e in sa.executors.values()
            )
            demand = sa.demand()
            last = self._reported.get(name, ((), 0))
            if executors != last[0]:
                out.append(ExecutorsChanged(name, executors))
            if demand != last[1]:
                out.append(DemandChanged(name, demand))
            self._reported[name] = (executors, demand)
        self._unreported.clear()
        return out

    def _sample(self, now: float) -> None:
        tl = self.rec.timeline
        for name in self._unsampled:
            sa = self.apps[name]
            tl.executors[name].set(now, len(sa.executors))
            tl.executor_cores[name].set(now, len(sa.executors) * sa.cores_per_executor)
            state = self.rec.apps[name].state
            tl.states[name].set(now, "" if state is None else state.value)
        self._unsampled.clear()
        for q, n in self._queued.items():
            tl.pending[q].set(now, n)
        tl.driver_cores.set(now, self._driver_cores)

    def _set_state(self, name: str, state: AppState) -> None:
        times = self.rec.apps[name]
        queue = self.apps[name].app.spec.queue
        self._queued[queue] += (state is AppState.ACCEPTED) - (times.state is AppState.ACCEPTED)
        times.state = state
        self._touch(name)

    # --- decisions ------------------------------------------------------------------------

    def _apply(self, now: float, decisions: list[Decision]) -> None:
        """Carry out one step's decisions, giving back before taking: the engine decides a
        cycle at once, and what it grants one app may be what it takes from another in the same
        step (a lower grant cancels executors still starting; a reclaim kills). Applied in list
        order, the taker could launch before the giver let go and overfill the cluster."""
        shrunk: list[SparkApp] = []
        grown: list[SparkApp] = []
        for d in decisions:
            if isinstance(d, SetTarget):
                sa = self.apps[d.app_id]
                (grown if d.grant > sa.grant else shrunk).append(sa)
                sa.grant = d.grant
        for d in decisions:
            sa = self.apps[d.app_id]
            if isinstance(d, MarkState):
                if sa.phase is not Phase.DONE or d.state.terminal:
                    self._set_state(sa.name, d.state)
            elif isinstance(d, Reclaim):
                self._reclaim(now, sa, d)
            elif isinstance(d, StopDriver):
                self._end(now, sa, KILLED_EXIT)
        for sa in shrunk:
            self._settle(now, sa)
        for d in decisions:
            if isinstance(d, LaunchDriver):
                self._launch(now, self.apps[d.app_id])
        for sa in grown:
            self._settle(now, sa)

    def _launch(self, now: float, sa: SparkApp) -> None:
        """The driver starts when it has room: a driver slot now, or cluster cores when free."""
        sa.phase = Phase.LAUNCHING
        self.rec.apps[sa.name].admitted = now
        spec = sa.app.spec
        if spec.driver_in_cluster:
            self._started(self.pool.request_driver(sa.name, spec.driver))
        else:
            self.pool.take_slot(f"driver of {sa.name}")
            self._driver_placed(sa)

    def _driver_placed(self, sa: SparkApp) -> None:
        sa.driver_placed = True
        if sa.app.spec.driver_in_cluster:
            self._driver_cores += sa.app.spec.driver.cores
        self._push(self._clock + self.w.cluster.driver_start_s, CLUSTER, _DriverUp(sa.name))

    def _started(self, started: Started) -> None:
        """Drivers and executors that were waiting for room and got it now."""
        for name in started.drivers:
            self._driver_placed(self.apps[name])
        for name, eid in started.executors:
            ready = self._clock + self.w.cluster.executor_start_s
            self.apps[name].starting[eid] = ready
            self._push(ready, CLUSTER, _ExecutorUp(name, eid))

    def _reclaim(self, now: float, sa: SparkApp, d: Reclaim) -> None:
        for eid in d.executor_ids:
            e = sa.executors.get(eid)
            if e is None:  # already gone (idle timeout) since the engine last heard
                continue
            if d.mode is ReclaimMode.KILL:
                self._reclaim_kill(now, sa, e)
                continue
            if d.mode is ReclaimMode.IDLE:
                # As the agent does: release it if idle, else skip the order; the engine sees
                # it busy in the next report and orders it again once it is idle.
                if not e.tasks:
                    self._remove(sa, e)
                continue
            e.leaving = True
            if d.mode is ReclaimMode.DECOMMISSION and d.deadline is not None:
                self._push(max(d.deadline, now), CLUSTER, _Deadline(sa.name, eid))
            if not e.tasks:
                self._remove(sa, e)
        self._settle(now, sa)

    # --- simulated events -----------------------------------------------------------------

    def _handle(self, now: float, ev: object) -> None:
        sa = self.apps[ev.app]  # type: ignore[attr-defined]
        if isinstance(ev, _Submit):
            self._outbox.append(Submitted(sa.app.spec))
            self._set_state(sa.name, AppState.ACCEPTED)
        elif isinstance(ev, _Update):
            self._outbox.append(PriorityChanged(sa.name, ev.priority))
            self.rec.apps[sa.name].priority = ev.priority
            self.rec.timeline.priorities[sa.name].set(now, ev.priority)
        elif sa.phase is Phase.DONE:
            return  # anything still in flight for an app that ended is moot
        elif isinstance(ev, _DriverUp):
            sa.phase = Phase.PREPROCESSING
            self._outbox.append(DriverStarted(sa.name))
            self._push(now + sa.app.startup_s, CLUSTER, _StartupDone(sa.name))
        elif isinstance(ev, _StartupDone):
            sa.phase = Phase.RUNNING
            sa.start_next_stage()
            self._settle(now, sa)
        elif isinstance(ev, _ExecutorUp):
            if sa.starting.pop(ev.executor_id, None) is None:
                return  # the request was cancelled
            sa.executors[ev.executor_id] = SimExecutor(
                ev.executor_id, sa.cores_per_executor, started_at=now
            )
            if self.rec.apps[sa.name].first_executor is None:
                self.rec.apps[sa.name].first_executor = now
            self._settle(now, sa)
        elif isinstance(ev, _TaskDone):
            self._task_done(now, sa, ev)
        elif isinstance(ev, _IdleCheck):
            e = sa.executors.get(ev.executor_id)
            if e is None or e.tasks or e.idle_since != ev.idle_since or e.leaving:
                return
            if sa.active() > sa.app.spec.min_executors:
                self._remove(sa, e)
                self._settle(now, sa)
        elif isinstance(ev, _Deadline):
            e = sa.executors.get(ev.executor_id)
            if e is not None:
                self._reclaim_kill(now, sa, e)
                self._settle(now, sa)

    def _task_done(self, now: float, sa: SparkApp, ev: _TaskDone) -> None:
        e = sa.executors.get(ev.executor_id)
        if e is None or e.tasks.pop(ev.task_id, None) is None:
            return  # the executor was killed and the task went back to pending
        sa.running -= 1
        self._busy_cores -= 1
        if sa.pending == 0 and sa.running == 0 and not sa.start_next_stage():
            self._end(now, sa, 0)
            return
        self._settle(now, sa)

    # --- the app's own moves --------------------------------------------------------------

    def _settle(self, now: float, sa: SparkApp) -> None:
        """After any change to an app: start the tasks that can start, note idle executors
        (release the ones being given back), then request or cancel executors."""
        if sa.phase is Phase.DONE:
            return
        self._touch(sa.name)
        if sa.phase is Phase.RUNNING:
            task_s = sa.task_s
            for eid in sa.placements():
                self._task_ids += 1
                sa.executors[eid].tasks[self._task_ids] = now + task_s
                sa.pending -= 1
                sa.running += 1
                self._busy_cores += 1
                self._push(now + task_s, CLUSTER, _TaskDone(sa.name, eid, self._task_ids))
        for e in list(sa.executors.values()):
            if e.tasks:
                e.idle_since = None
            elif e.leaving:
                self._remove(sa, e)
            elif e.idle_since is None:
                e.idle_since = now
                timeout = self.w.cluster.executor_idle_timeout_s
                self._push(now + timeout, CLUSTER, _IdleCheck(sa.name, e.executor_id, now))
        want = sa.starting_wanted()
        size = sa.app.spec.executor
        while len(sa.starting) < want:
            eid = sa.new_executor_id()
            sa.starting[eid] = None  # asked for; a start time once the master found room
            self._started(self.pool.request_executor(sa.name, eid, size))
        while len(sa.starting) > want:
            self._cancel_executor(sa, next(reversed(sa.starting)))

    def _cancel_executor(self, sa: SparkApp, eid: str) -> None:
        del sa.starting[eid]
        if not self.pool.cancel(eid):
            self._give(sa.app.spec.executor)

    def _reclaim_kill(self, now: float, sa: SparkApp, e: SimExecutor) -> None:
        self.rec.reclaim_kills.append((now, sa.name, e.executor_id, len(e.tasks)))
        self._kill(sa, e)

    def _kill(self, sa: SparkApp, e: SimExecutor) -> None:
        lost = len(e.tasks)
        sa.pending += lost
        sa.running -= lost
        self._busy_cores -= lost
        e.tasks.clear()
        self._remove(sa, e)

    def _remove(self, sa: SparkApp, e: SimExecutor) -> None:
        assert not e.tasks, "an executor leaves with running tasks only through _kill"
        del sa.executors[e.executor_id]
        self._touch(sa.name)
        self._give(sa.app.spec.executor)

    def _end(self, now: float, sa: SparkApp, exit_code: int) -> None:
        for e in list(sa.executors.values()):
            self._kill(sa, e)
        for eid in list(sa.starting):
            self._cancel_executor(sa, eid)
        spec = sa.app.spec
        if not spec.driver_in_cluster:
            self.pool.give_slot()
        elif sa.driver_placed:
            self._driver_cores -= spec.driver.cores
            self._give(spec.driver)
        else:
            self.pool.cancel(sa.name)
        sa.phase = Phase.DONE
        self._touch(sa.name)
        self._done += 1
        self._reported.pop(sa.name, None)
        if exit_code == 0:
            self.rec.apps[sa.name].finished = now
        self._outbox.append(DriverExited(sa.name, exit_code))

    def _give(self, size: Resources) -> None:
        self._started(self.pool.give(size))


def simulate(workload: Workload) -> SimResult:
    return Simulator(workload).run()
