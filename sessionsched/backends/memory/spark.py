"""One Spark application in the memory cluster: its driver's phases, its stages of tasks, its
executors and the dynamic-allocation arithmetic. Plain data and small functions; the cluster
(``cluster.py``) moves time and carries out what these functions say.

Assumptions of the model (Spark standalone, dynamic allocation on):
- Phases: QUEUED -> LAUNCHING (the cluster's ``driver_start_s``) -> PREPROCESSING (the job's
  ``startup_s``: the driver works before it creates its SparkContext, so it asks for no
  executor) -> RUNNING (stages)
  -> DONE (the driver exits with the job's exit code, 0 by default, ``tail_s`` after the last
  task; a job without stages is DONE when its pre-processing ends, having asked for no
  executor). Between two stages the driver may work alone (the next stage's ``gap_s``): back
  in PREPROCESSING for that long, asking for no executor, its idle ones timing out.
- Stages run one after another; a stage's tasks are all pending when it starts. Each task takes
  one of an executor's task slots (``Job.slots``: Spark's rule over its cores,
  ``spark.task.cpus`` and its task resources, ``job.py``) for ``task_s``, or, for a stage with
  task-time quantiles, for a time drawn from them (``Stage.task_time``). A task on a killed
  executor goes back to pending and starts over (its work is lost).
- Task placement: round-robin over the executors in the order they came up, one task per
  executor per round (Spark's ``resourceOffers`` spreads tasks the same way, minus its shuffle).
- Demand (Spark's ``maxNumExecutorsNeeded``, what its agent reports): ``ceil((pending +
  running) / task slots)``, capped by ``max_executors``.
- Requests: with the job's backlog timeouts (``Job.backlog_s``), as Spark's allocation manager
  ramps them (``ramp``): once tasks have waited the first timeout it asks for 1 executor more,
  then after each sustained timeout of backlog for twice as many more as the last time (1, 2,
  4, ...: reset to 1 when a round adds fewer, and when the backlog clears), never above the
  demand or the grant (the agent's cap); a falling demand lowers the request at once. Without
  them it asks for its whole demand at once. This matters when grants move: a request not yet
  made can still go to another app, an executor launched cannot.
- Allocation: the app wants ``min(max(min_executors, request), grant)`` working executors and
  launches none while ``grant`` executors are alive or starting (the master's executor limit),
  so executors it is giving back (decommissioning) count against its grant until they are
  gone. When the grant falls, requests still waiting for room are cancelled, newest first; an
  executor already launched comes up all the same (the limit stops launches, it kills
  nothing), above the grant, until the scheduler's reclaim takes it back.
- Idle timeout: an executor idle for ``executor_idle_timeout_s`` is released, unless that would
  leave fewer than ``min_executors`` working executors (Spark keeps the minimum).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from ...model import Resources
from ...model.stages import MAX_DONE, ActiveStage, DoneStage, Progress
from ...model.usage import AppUsage
from .job import Job


class Phase(str, Enum):
    QUEUED = "QUEUED"
    LAUNCHING = "LAUNCHING"
    PREPROCESSING = "PREPROCESSING"
    RUNNING = "RUNNING"
    DONE = "DONE"


@dataclass
class SimExecutor:
    executor_id: str
    cores: int  # its task slots (``Job.slots``): as many tasks run on it at once
    started_at: float
    tasks: dict[int, float] = field(default_factory=dict)  # task id -> done at
    began: dict[int, float] = field(default_factory=dict)  # task id -> started at
    idle_since: float | None = None
    leaving: bool = False  # decommissioning: takes no new task, leaves when its tasks are done
    warm: bool = False  # it has started a task: the job's warm-up is behind it

    @property
    def free_cores(self) -> int:
        return 0 if self.leaving else self.cores - len(self.tasks)


@dataclass
class SparkApp:
    """``driver_id``/``spark_app_id``: made-up ids, like a master's; the times are the cluster
    clock's (None: not yet); ``exit_code`` once DONE."""

    job: Job
    phase: Phase = Phase.QUEUED
    stage: int = -1
    pending: int = 0  # tasks of the current stage not running
    running: int = 0
    executors: dict[str, SimExecutor] = field(default_factory=dict)  # up, in start order
    # requested executors: id -> when it is up, None while it waits for room in the cluster
    starting: dict[str, float | None] = field(default_factory=dict)
    driver_placed: bool = False  # the driver has its slot or its cores (it may still be starting)
    grant: int = 0
    # Spark's allocation manager (``ramp``): its executor target, how many it adds next, when
    target: int = 0
    to_add: int = 1
    add_at: float | None = None
    driver_id: str = ""
    spark_app_id: str = ""
    launched_at: float = 0.0
    driver_up_at: float | None = None
    first_executor_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    usage: AppUsage = field(default_factory=AppUsage)  # counted by the cluster as it happens
    # Its completed stages, as its agent reports them (``progress``)
    done_stages: list[DoneStage] = field(default_factory=list)
    _made: int = 0
    _started: int = 0  # tasks the current stage started (again after a loss, too)
    stage_done_s: float = 0.0  # the current stage's completed tasks' times, summed

    @property
    def name(self) -> str:
        return self.job.app_id

    @property
    def cores_per_executor(self) -> int:
        """Task slots per executor (``Job.slots``; its cores when tasks ask one core and
        nothing else)."""
        return self.job.slots

    @property
    def executor_size(self) -> Resources:
        return self.job.executor

    def active(self) -> int:
        """Executors that take tasks (up and not being given back)."""
        return sum(1 for e in self.executors.values() if not e.leaving)

    def demand(self) -> int:
        """Spark's maxNumExecutorsNeeded, capped by maxExecutors; 0 before the SparkContext."""
        if self.phase is not Phase.RUNNING:
            return 0
        c = self.cores_per_executor
        need = -(-(self.pending + self.running) // c)
        cap = self.job.max_executors
        return need if cap is None else min(need, cap)

    def ramp(self, now: float) -> float | None:
        """Spark's allocation manager, for a job with backlog timeouts (module doc): moves
        ``target`` as Spark's moves its ``numExecutorsTarget``. Returns the time of its next
        add when that time is new (the cluster sets a timer for it), else None."""
        if self.job.backlog_s is None:
            return None
        before, (first, sustained) = self.add_at, self.job.backlog_s
        need, low = self.demand(), self.job.min_executors  # no demand between stages
        cap = self.grant if self.job.max_executors is None else min(self.grant,
                                                                  self.job.max_executors)
        if need < self.target:
            self.target, self.to_add = max(need, low), 1
        self.target = min(self.target, max(cap, low))  # the agent lowers it to the grant
        if self.pending == 0 or self.phase is not Phase.RUNNING:
            self.add_at, self.to_add = None, 1
        elif self.add_at is None:
            self.add_at = now + first
        elif now >= self.add_at:
            if self.target >= cap:
                self.to_add = 1
            else:
                old = self.target
                more = min(max(old, len(self.executors)) + self.to_add, need)
                self.target = max(min(more, cap), low)
                self.to_add = self.to_add * 2 if self.target - old == self.to_add else 1
            self.add_at = now + sustained
        return self.add_at if self.add_at != before else None

    def starting_wanted(self) -> int:
        """How many executors should be starting, by the allocation rule in the module doc."""
        if self.phase is not Phase.RUNNING:
            return 0
        request = self.demand() if self.job.backlog_s is None else self.target
        desired = max(self.job.min_executors, request)
        cap = self.job.max_executors
        if cap is not None:
            desired = min(desired, cap)
        want = min(desired, self.grant) - self.active()
        room = self.grant - len(self.executors)
        return max(0, min(want, room))

    def new_executor_id(self) -> str:
        self._made += 1
        return f"{self.name}-exec-{self._made}"

    def start_next_stage(self) -> bool:
        """Move to the next stage; False when there is none (the job is done)."""
        self.stage += 1
        if self.stage >= len(self.job.stages):
            return False
        self.pending = self.job.stages[self.stage].tasks
        self._started, self.stage_done_s = 0, 0.0
        return True

    def driver_work(self) -> float:
        """After a stage: the seconds the driver works alone before the next stage (its
        ``gap_s``) or, after the last, before it exits (``tail_s``); PREPROCESSING meanwhile.
        The stage is done: its agent would list it now."""
        tasks = self.job.stages[self.stage].tasks
        if tasks and len(self.done_stages) < MAX_DONE:  # every task completed: their mean
            self.done_stages.append(DoneStage(tasks, self.stage_done_s / tasks))
        stages = self.job.stages
        work = stages[self.stage + 1].gap_s if self.stage + 1 < len(stages) else self.job.tail_s
        if work > 0:
            self.phase = Phase.PREPROCESSING
        return work

    def next_task_s(self) -> float:
        """The time of the next task the current stage starts (``Stage.task_time``)."""
        self._started += 1
        return self.job.stages[self.stage].task_time(self._started - 1)

    def start_task(self, executor_id: str, task_id: int, now: float) -> float:
        """The current stage's next task, started now on the executor: its time, with the job's
        warm-up on top if it is the first task the executor runs (``Job.warmup_s``)."""
        task_s = self.next_task_s()
        e = self.executors[executor_id]
        if not e.warm:
            e.warm = True
            task_s += self.job.warmup_s
        e.tasks[task_id] = now + task_s
        e.began[task_id] = now
        self.pending -= 1
        self.running += 1
        return task_s

    def progress(self, now: float) -> Progress | None:
        """Its stages as its agent would report them now (``model.stages``); None before its
        first stage."""
        if self.stage < 0:
            return None
        active: tuple[ActiveStage, ...] = ()
        if self.phase is Phase.RUNNING and self.stage < len(self.job.stages):
            tasks = self.job.stages[self.stage].tasks
            began = [b for e in self.executors.values() for b in e.began.values()]
            done = tasks - self.pending - self.running
            active = (ActiveStage(tasks, done, self.running, now - min(began) if began else None,
                                  self.stage_done_s / done if done else None),)
        return Progress(tuple(self.done_stages), active, now)

    def placements(self) -> list[str]:
        """Executor ids for the pending tasks that can start now, round-robin (module doc)."""
        free = {eid: e.free_cores for eid, e in self.executors.items() if e.free_cores > 0}
        out: list[str] = []
        budget = self.pending
        while budget > 0 and free:
            for eid in list(free):
                if budget == 0:
                    break
                out.append(eid)
                budget -= 1
                free[eid] -= 1
                if free[eid] == 0:
                    del free[eid]
        return out


def surplus(apps: Iterable[SparkApp]) -> Resources | None:
    """The room held by executors above their apps' grants, up or launched and starting (a
    grant fell after they were launched: ``pool.py``); None if none."""
    held = None
    for sa in apps:
        launched = sum(1 for ready in sa.starting.values() if ready is not None)
        over = len(sa.executors) + launched - sa.grant
        if over > 0 and sa.phase is not Phase.DONE:
            more = sa.executor_size.times(over)
            held = more if held is None else held + more
    return held
