"""An in-process Spark cluster on an injected clock: the simulator's Spark model and the memory
backend's cluster (one code for both).

Model (a Spark standalone cluster; the app's side is in ``spark.py``, the room in ``pool.py``,
what its timers fire in ``cluster_timers.py``, apps it did not launch in ``externals.py``):
- Time is the caller's: ``advance(now)`` runs every timer due up to ``now`` in order (ties in
  the order they were set, ``timers.py``). Between two calls nothing happens; ``launch``,
  ``stop`` and ``steer`` act at the time of the last ``advance`` (0 before the first).
- ``workers`` equal workers (``pool.py``): in-cluster drivers hold their cores and memory from
  launch until they exit, client-mode drivers a driver slot, executors theirs from launch
  (``executor_start_s`` before they are usable) until they are gone. What does not fit one
  worker waits for room, as in a standalone master. ``lose_worker`` takes a worker away with
  what runs on it (drivers there exit 1, executors are lost, their tasks go back to pending).
- Starts: with ``host_cpus``, the drivers and executors starting at once share that many CPUs
  and each takes longer in a crowd (``starts.py``); without, each takes its latency.
- A launched driver is up after ``driver_start_s`` (it gets a made-up Spark app id then),
  works ``startup_s`` before asking for executors, runs its stages (its own work between and
  after them: ``spark.py``), and exits with its job's exit code (a job without stages exits
  when ``startup_s`` is over, never asking for an executor); ``stop`` ends it at once with 143.
- ``steer`` does what a driver agent would: ``SetTarget.grant`` caps the app's executors;
  ``Reclaim`` KILL kills now (running tasks go back to pending), DECOMMISSION stops new tasks
  and lets the executor leave when they are done (killed at the deadline), IDLE releases it if
  idle, else skips the order (given again once it is idle). It gives back before it takes: a
  lower grant cancels requests still waiting for room (not launched ones) before any app grows.
- External apps (``start_external``): Spark apps nobody launched through a backend (another
  team's, or a notebook's driver), holding executors; a backend takes their usage off its
  capacity unless told they are managed.

Watching (``watch``): each watcher's set gets the name of every app whose driver, executors
or tasks changed, so a backend reports on those only (at 10,000 running apps, a report of each
per cycle was most of a cycle's time). Counters for the simulator: ``busy`` (``busy.py``),
``last_event_s``, ``reclaim_kills``, ``pool.executor_waits``; per app, ``SparkApp.usage``.
"""

from __future__ import annotations

import itertools

from ...engine.events import Decision, Reclaim, SetTarget
from ...model import Resources
from ..base import BackendError
from . import cluster_timers as timer
from .busy import BusyMeter
from .externals import ONE_CORE, External, end_external, start_external, usage_but
from .job import Job
from .lost import lose_worker
from .pool import Pool, Started
from .reclaims import reclaim, reclaim_kill
from .spark import Phase, SimExecutor, SparkApp, surplus
from .starts import Starts
from .timers import CLUSTER, EventHeap, spark_stamp

STOPPED_EXIT = 143  # a driver stopped by the scheduler, as SIGTERM's shell code


class MemoryCluster:
    """``capacity``: all ``workers``' cores and memory; ``driver_slots``: client-mode drivers
    at once on the scheduler host. Latencies and ``executor_idle_timeout_s`` (Spark's
    ``executorIdleTimeout``) in seconds; ``work_s``: the work of a job that names none. It
    holds the drivers: it outlives any backend over it, as a cluster outlives the scheduler."""

    def __init__(
        self,
        capacity: Resources,
        driver_slots: int | None = 4,
        *,
        driver_start_s: float = 0.5,
        executor_start_s: float = 0.5,
        executor_idle_timeout_s: float = 60.0,
        work_s: float = 2.0,
        workers: int = 1,
        sizes: tuple[Resources, ...] = (),
        host_cpus: float | None = None,
    ):
        self.driver_slots = driver_slots
        self.driver_start_s = driver_start_s
        self.executor_start_s = executor_start_s
        self.executor_idle_timeout_s = executor_idle_timeout_s
        self.work_s = work_s
        self.pool = Pool(capacity, driver_slots, workers, sizes)  # sizes: workers not alike
        self.apps: dict[str, SparkApp] = {}  # by app id, in launch order (a relaunch replaces)
        self.externals: dict[str, External] = {}  # by Spark app id
        self.clock: float | None = None
        self.busy = BusyMeter()  # tasks running, and per resource by their amounts (``busy``)
        self.last_event_s = 0.0
        self.driver_cores = 0  # cores of in-cluster drivers that have their room
        self.reclaim_kills: list[tuple[float, str, str, int]] = []  # (time, app, executor, lost)
        self._timers: EventHeap = EventHeap()
        self._task_ids = itertools.count(1)
        self._ids = itertools.count(1)
        self._watchers: list[set[str]] = []
        self.starts = Starts(host_cpus)  # drivers' and executors' starts (``starts``)

    @property
    def capacity(self) -> Resources:
        """The alive workers' cores and memory together."""
        return self.pool.capacity

    @property
    def now(self) -> float:
        return 0.0 if self.clock is None else self.clock

    # --- time -----------------------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Run every timer due at or before ``now``, in order; the clock is ``now`` after."""
        if self.clock is None:
            self.clock = now
        while self._timers and self._timers.peek_time() <= now:
            at, _, ev = self._timers.pop()
            self._tick(at)
            self.last_event_s = at
            self._handle(at, ev)
        self._tick(now)

    def _tick(self, to: float) -> None:
        if self.clock is not None and to > self.clock:
            self.busy.tick(to - self.clock)
            self.clock = to

    def watch(self) -> set[str]:
        """A set the cluster adds the name of each app to whenever it may change the app's
        driver, executors or tasks, from now on: an app changes only in ``launch``, ``stop``,
        ``steer`` (the apps decided about) and its own timers. The watcher reads and empties it
        (``clear``, never a new set: the cluster keeps this one)."""
        names: set[str] = set()
        self._watchers.append(names)
        return names

    def _touch(self, sa: SparkApp) -> None:
        for names in self._watchers:
            names.add(sa.name)

    def next_timer(self) -> float | None:
        return self._timers.peek_time() if self._timers else None

    def pending_timers(self) -> int:
        return len(self._timers)

    def _push(self, at: float, ev: object) -> None:
        self._timers.push(at, CLUSTER, ev)

    # --- what a backend asks --------------------------------------------------------------

    def launch(self, job: Job) -> SparkApp:
        """Start ``job``'s driver now; it starts when it has room (a driver slot now, or
        cluster cores when free). BackendError if it could never run here."""
        current = self.apps.get(job.app_id)
        if current is not None and current.phase is not Phase.DONE:
            raise BackendError(f"{job.app_id} has a driver already")
        too_big = [f"{what} of {size.cores} cores/{size.mem_mib} MiB"
                   for what, size, needed in (("a driver", job.driver, job.in_cluster),
                                              ("an executor", job.executor, True))
                   if needed and not self.pool.fits_one(size)]
        if too_big:
            raise BackendError(f"{job.app_id}: {too_big[0]} fits no worker of the cluster "
                               f"({self.capacity.cores} cores/{self.capacity.mem_mib} MiB in "
                               f"{len(self.pool.workers())} workers)")
        if (not job.in_cluster and self.driver_slots is not None
                and self.pool.slots_used >= self.driver_slots):
            raise BackendError(f"{job.app_id}: all {self.driver_slots} driver slots are in use")
        n = next(self._ids)
        sa = SparkApp(job, phase=Phase.LAUNCHING, driver_id=f"driver-memory-{n:04d}",
                      spark_app_id=f"app-{spark_stamp(self.now)}-{n:04d}", launched_at=self.now)
        self.apps[job.app_id] = sa
        self._touch(sa)
        if job.in_cluster:
            self._started(self.pool.request_driver(sa.name, job.driver, job.node_sort))
        else:
            self.pool.take_slot(f"driver of {sa.name}")
            self._driver_placed(sa)
        return sa

    def stop(self, app_id: str) -> None:
        """End the driver now with 143 (nothing if unknown or already ended)."""
        sa = self.apps.get(app_id)
        if sa is not None and sa.phase is not Phase.DONE:
            self._touch(sa)
            self._end(self.now, sa, STOPPED_EXIT)

    def steer(self, decisions: list[Decision]) -> None:
        """Grants and reclaim orders, as the driver agents carry them out (module doc).
        Decisions about apps this cluster does not run (or no longer) are ignored."""
        now = self.now
        shrunk: list[SparkApp] = []
        grown: list[SparkApp] = []
        for d in decisions:
            sa = self.apps.get(d.app_id)
            if sa is not None and sa.phase is not Phase.DONE:
                self._touch(sa)
            if isinstance(d, SetTarget) and sa is not None and sa.phase is not Phase.DONE:
                (grown if d.grant > sa.grant else shrunk).append(sa)
                sa.grant = d.grant
        for d in decisions:
            sa = self.apps.get(d.app_id)
            if isinstance(d, Reclaim) and sa is not None and sa.phase is not Phase.DONE:
                reclaim(self, now, sa, d)
        for sa in shrunk + grown:
            self._settle(now, sa)

    def start_external(self, spark_app_id: str, executors: int,
                       executor: Resources = ONE_CORE) -> External:
        """An app someone else submitted, holding ``executors`` executors now (they must fit)."""
        return start_external(self, spark_app_id, executors, executor)

    def end_external(self, spark_app_id: str) -> None:
        end_external(self, spark_app_id)

    def lose_worker(self, name: str) -> None:
        """The worker ``name`` is gone, with what ran on it (``lost.lose_worker``)."""
        lose_worker(self, name)

    def worker_back(self, name: str) -> None:
        """The lost worker ``name`` is back, empty; what waited for room may start on it."""
        self._started(self.pool.back(name))

    def external_usage(self, managed: set[str]) -> Resources:
        """What live external apps hold, but for those in ``managed`` (Spark app ids)."""
        return usage_but(self.externals.values(), managed)

    # --- timers ---------------------------------------------------------------------------

    def _handle(self, now: float, ev: object) -> None:
        if isinstance(ev, timer.DriverUp | timer.ExecutorUp):
            moved = self.starts.finish(now, ev)
            if moved is None:
                return  # a start whose end moved since: its later timer stands
            self._push_all(moved)
        sa = self.apps[ev.app]  # type: ignore[attr-defined]
        if sa.phase is Phase.DONE:
            return  # anything still in flight for an app that ended is moot
        self._touch(sa)
        if isinstance(ev, timer.DriverUp):
            sa.phase = Phase.PREPROCESSING
            sa.driver_up_at = now
            self._push(now + sa.job.startup_s, timer.StartupDone(sa.name))
        elif isinstance(ev, timer.StartupDone):
            sa.phase = Phase.RUNNING
            if not sa.start_next_stage():  # no stage: the driver did its work alone
                self._end(now, sa, sa.job.exit_code)
                return
            self._settle(now, sa)
        elif isinstance(ev, timer.ExecutorUp):
            if sa.starting.pop(ev.executor_id, None) is None:
                return  # the request was cancelled
            sa.executors[ev.executor_id] = SimExecutor(
                ev.executor_id, sa.cores_per_executor, started_at=now
            )
            if sa.first_executor_at is None:
                sa.first_executor_at = now
            sa.usage.executor_of(now, sa.executor_size, 1)
            self._settle(now, sa)
        elif isinstance(ev, timer.TaskDone):
            self._task_done(now, sa, ev)
        elif isinstance(ev, timer.IdleCheck):
            e = sa.executors.get(ev.executor_id)
            if e is None or e.tasks or e.idle_since != ev.idle_since or e.leaving:
                return
            if sa.active() > sa.job.min_executors:
                self._remove(sa, e)
                self._settle(now, sa)
        elif isinstance(ev, timer.RampDue):
            if sa.add_at == ev.at:  # else the ramp moved on since: a newer one is set
                self._settle(now, sa)
        elif isinstance(ev, timer.Deadline):
            e = sa.executors.get(ev.executor_id)
            if e is not None:
                reclaim_kill(self, now, sa, e)
                self._settle(now, sa)

    def _task_done(self, now: float, sa: SparkApp, ev: timer.TaskDone) -> None:
        e = sa.executors.get(ev.executor_id)
        if e is None or e.tasks.pop(ev.task_id, None) is None:
            return  # the executor was killed and the task went back to pending
        sa.stage_done_s += now - e.began.pop(ev.task_id)
        sa.running -= 1
        self.busy.tasks(sa.job.task_amounts, -1)
        sa.usage.tasks(now, -1, sa.job.task_amounts)
        if sa.pending == 0 and sa.running == 0:
            if (work := sa.driver_work()) > 0:  # the driver alone first (spark.py)
                self._push(now + work, timer.StartupDone(sa.name))
            elif not sa.start_next_stage():
                self._end(now, sa, sa.job.exit_code)
                return
        self._settle(now, sa)

    # --- drivers and executors ------------------------------------------------------------

    def _driver_placed(self, sa: SparkApp) -> None:
        sa.driver_placed = True
        sa.usage.driver_of(self.now, sa.job.driver, 1)
        if sa.job.in_cluster:
            self.driver_cores += sa.job.driver.cores
        self._start(timer.DriverUp(sa.name), self.driver_start_s)

    def _started(self, started: Started) -> None:
        """Drivers and executors that were waiting for room and got it now."""
        for name in started.drivers:
            self._driver_placed(self.apps[name])
        for name, eid in started.executors:
            self.apps[name].starting[eid] = self._start(timer.ExecutorUp(name, eid),
                                                        self.executor_start_s)

    def _start(self, up: timer.DriverUp | timer.ExecutorUp, work_s: float) -> float:
        """A driver's or executor's start begins now: the time it is up, as things stand
        (``starts``: others starting beside it may move it)."""
        moved = self.starts.begin(self.now, up, work_s)
        self._push_all(moved)
        return moved[up]

    def _push_all(self, ends: dict) -> None:
        for up, at in ends.items():
            self._push(at, up)

    def _settle(self, now: float, sa: SparkApp) -> None:
        """After any change to an app: start the tasks that can start, note idle executors
        (release the ones being given back), then request or cancel executors."""
        if sa.phase is Phase.DONE:
            return
        if sa.phase is Phase.RUNNING:
            for eid in sa.placements():
                task_id = next(self._task_ids)
                task_s = sa.start_task(eid, task_id, now)
                self.busy.tasks(sa.job.task_amounts, 1)
                sa.usage.tasks(now, 1, sa.job.task_amounts)
                self._push(now + task_s, timer.TaskDone(sa.name, eid, task_id))
        for e in list(sa.executors.values()):
            if e.tasks:
                e.idle_since = None
            elif e.leaving:
                self._remove(sa, e)
            elif e.idle_since is None:
                e.idle_since = now
                timeout = self.executor_idle_timeout_s
                self._push(now + timeout, timer.IdleCheck(sa.name, e.executor_id, now))
        if (at := sa.ramp(now)) is not None:
            self._push(at, timer.RampDue(sa.name, at))
        want = sa.starting_wanted()
        size = sa.executor_size
        while len(sa.starting) < want:
            eid = sa.new_executor_id()
            sa.starting[eid] = None  # asked for; a start time once the master found room
            self._started(self.pool.request_executor(sa.name, eid, size, sa.job.node_sort,
                                                     lambda: surplus(self.apps.values())))
        # Only requests waiting for room are cancelled, newest first: a launched one comes up
        waiting = [eid for eid, ready in sa.starting.items() if ready is None]
        while len(sa.starting) > want and waiting:
            self._cancel_executor(sa, waiting.pop())

    def _cancel_executor(self, sa: SparkApp, eid: str) -> None:
        del sa.starting[eid]
        if not self.pool.cancel(eid):
            self._give(eid)

    def _kill(self, sa: SparkApp, e: SimExecutor) -> None:
        lost = len(e.tasks)
        sa.pending += lost
        sa.running -= lost
        self.busy.tasks(sa.job.task_amounts, -lost)
        sa.usage.tasks(self.now, -lost, sa.job.task_amounts)
        e.tasks.clear()
        e.began.clear()
        self._remove(sa, e)

    def _remove(self, sa: SparkApp, e: SimExecutor) -> None:
        assert not e.tasks, "an executor leaves with running tasks only through _kill"
        del sa.executors[e.executor_id]
        sa.usage.executor_of(self.now, sa.executor_size, -1)
        self._give(e.executor_id)

    def _end(self, now: float, sa: SparkApp, exit_code: int) -> None:
        for e in list(sa.executors.values()):
            self._kill(sa, e)
        for eid in list(sa.starting):
            self._cancel_executor(sa, eid)
        job = sa.job
        if sa.driver_placed:
            sa.usage.driver_of(now, job.driver, -1)
        if not job.in_cluster:
            self.pool.give_slot()
        elif sa.driver_placed:
            self.driver_cores -= job.driver.cores
            self._give(sa.name)
        else:
            self.pool.cancel(sa.name)
        sa.phase = Phase.DONE
        sa.ended_at = now
        sa.exit_code = exit_code

    def _give(self, key: str) -> None:
        self._started(self.pool.give(key))
