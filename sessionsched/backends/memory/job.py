"""What the memory cluster runs for one ``Launch``: the driver's and executors' sizes, read
from the Spark properties exactly as a Spark cluster would, and the app's work.

Properties are the launch's own (the spark-submit ``argv``'s ``--conf`` and dedicated options,
or a REST request's ``sparkProperties``) with ``Launch.conf`` winning, as in a real launch.
Sizes: ``spark.driver.{cores,memory}``, ``spark.executor.{cores,memory}`` (default 1 core,
1g each, Spark's own defaults); with dynamic allocation (the default)
``spark.dynamicAllocation.{minExecutors,maxExecutors}``; without it a static
``spark.executor.instances`` (default 1) executors.

The work, by properties this backend alone reads (nothing runs: no file is opened):

* ``spark.sessionsched.memory.work``: ``S`` (seconds) runs one stage of as many tasks as an
  executor runs at once, each S seconds -- the app asks for one executor, runs S seconds, exits;
  or ``NxS,NxS...``: stages of N tasks of S seconds, one after another (``sleep_tasks.py
  --stages``); a stage ``NxS~Q0/Q1/.../Qn`` draws its tasks' times from the evenly spaced
  quantiles Q0 (the shortest) to Qn (the longest) instead (``Stage.task_time``); a stage
  ``...@G`` is preceded by G seconds the driver works alone after the stage before it ended
  (an app's own code between its Spark jobs: ``Stage.gap_s``); ``0``: no
  stage at all, the driver works ``startup`` seconds alone and exits
  without asking for an executor. Default: the cluster's ``work_s``.
* ``spark.sessionsched.memory.startup``: seconds the driver works before it asks for executors
  (pre-processing; the StateAware "starting" phase). Default 0.
* ``spark.sessionsched.memory.tail``: seconds the driver works after its last stage before it
  exits (``spark.stop()``, the app's own code after its last job). Default 0.
* ``spark.sessionsched.memory.warmup``: seconds each executor's first task takes beyond its
  time (the executor's Python worker starting, its code compiling: measured from event logs,
  ``eventlog.app_entry.warm_up``). Default 0.
* ``spark.sessionsched.memory.exitCode``: the driver's exit code after its work (non-zero: the
  app FAILED). Default 0.
* ``spark.sessionsched.memory.launchFailures``: how many launches of the app fail first as if
  the master could not be reached (``BackendUnavailable``: tried again). Default 0.

With dynamic allocation and either of Spark's backlog timeouts set
(``spark.dynamicAllocation.schedulerBacklogTimeout``, ``sustainedSchedulerBacklogTimeout``:
``spark/allocation.py``), the driver ramps its executor requests up as Spark's allocation
manager does (``spark.py``); with neither, it asks for its whole demand at once.

Tasks per executor by Spark's rule (``Job.slots``): the fewest that ``spark.executor.cores`` //
``spark.task.cpus`` or any task resource allows (``spark.executor.resource.{name}.amount``
over ``spark.task.resource.{name}.amount``: a task amount of 0.5 runs two tasks on each
unit); an executor asks the cluster for its custom resources too. Each running task uses
``Job.task_amounts`` (``busy.BusyMeter``): its cpus, its share of the executor's memory
(the memory over the tasks it runs at once) and its task amount of each resource.

A launch that could never run is refused (``ValueError``, one line naming the problem): no
application (no ``argv`` and no REST request), a REST request without ``appResource`` or
``mainClass`` (the Spark master refuses those too), a property that does not parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...model import NodeSort, Resources
from ...spark.allocation import backlog_timeouts
from ...spark.resource_props import resource_ask, tasks_per_executor
from ...spark.submit_args import (
    Prop,
    effective_properties,
    parse_spark_submit,
    scheduling_properties,
)
from ..base import Launch

WORK = "spark.sessionsched.memory.work"
STARTUP = "spark.sessionsched.memory.startup"
TAIL = "spark.sessionsched.memory.tail"
EXIT_CODE = "spark.sessionsched.memory.exitCode"
LAUNCH_FAILURES = "spark.sessionsched.memory.launchFailures"
WARMUP = "spark.sessionsched.memory.warmup"
DEFAULT_MEM_MIB = 1024


GOLDEN = 0.6180339887498949  # spreads the k-th task's quantile evenly over [0, 1)


@dataclass(frozen=True)
class Stage:
    """``tasks`` tasks of ``task_s`` seconds each; with ``quantiles`` (evenly spaced, shortest
    to longest: a task-time distribution, as read from an event log) each task's time is
    drawn from them instead. ``gap_s``: the driver's work alone before the stage (after the
    stage before it ended; the first stage's is the job's ``startup_s``)."""

    tasks: int
    task_s: float
    quantiles: tuple[float, ...] = ()
    gap_s: float = 0.0

    def task_time(self, k: int) -> float:
        """The time of the stage's ``k``-th task started: at quantile ``(k + 1/2) * golden
        ratio mod 1``, interpolated - deterministic, and any run of tasks spreads over the
        whole distribution (long tasks are not all at the end)."""
        q = self.quantiles
        if len(q) < 2:
            return self.task_s
        pos = (((k + 0.5) * GOLDEN) % 1.0) * (len(q) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(q) - 1)
        return q[lo] + (q[hi] - q[lo]) * (pos - lo)

    def work(self) -> str:
        """The stage as ``spark.sessionsched.memory.work`` writes it (module doc)."""
        tail = "~" + "/".join(repr(x) for x in self.quantiles) if self.quantiles else ""
        gap = f"@{self.gap_s!r}" if self.gap_s > 0 else ""
        return f"{self.tasks}x{self.task_s!r}{tail}{gap}"


@dataclass(frozen=True)
class Job:
    """One driver's run in the memory cluster (``spark.py`` models how it runs)."""

    app_id: str
    stages: tuple[Stage, ...]
    driver: Resources = Resources(1, DEFAULT_MEM_MIB)
    in_cluster: bool = False
    executor: Resources = Resources(1, DEFAULT_MEM_MIB)
    min_executors: int = 0
    max_executors: int | None = None
    startup_s: float = 0.0
    tail_s: float = 0.0  # the driver's work after its last stage, before it exits
    warmup_s: float = 0.0  # added to the first task each executor runs
    exit_code: int = 0
    launch_failures: int = 0
    node_sort: NodeSort = NodeSort.FAIR  # where its driver and executors go (``Pool``)
    # Spark's backlog timeouts, (first, sustained) seconds: its requests ramp up (``spark.py``);
    # None: it asks for its whole demand at once
    backlog_s: tuple[float, float] | None = None
    # Derived from the properties above (module doc), so left out of comparisons:
    slots: int = field(default=1, compare=False)  # tasks one executor runs at once
    # what one running task uses: (name, amount), "cores" and "memory" (MiB) first
    task_amounts: tuple[tuple[str, float], ...] = field(default=(("cores", 1.0),), compare=False)

    @property
    def name(self) -> str:
        return self.app_id


def job_from_launch(launch: Launch, default_work_s: float) -> Job:
    """The job ``launch`` runs; ValueError (one line) if it could never run (module doc)."""
    props = _properties(launch)
    # A driver of 0 cores is a simulator's what-if (Spark asks for at least 1); read it here.
    driver_cores = props.pop("spark.driver.cores", None)
    sched = scheduling_properties(props)  # SparkArgsError (a ValueError) names the property
    cores = 1 if driver_cores is None else _whole(driver_cores, "spark.driver.cores")
    ask = resource_ask({k: p.value for k, p in props.items()})
    executor = Resources(sched.executor_cores or 1, sched.executor_mem_mib or DEFAULT_MEM_MIB,
                         ask.executor)
    cpus = _whole(props["spark.task.cpus"], "spark.task.cpus") if "spark.task.cpus" in props else 1
    per_executor = max(tasks_per_executor(executor.cores, cpus, ask), 1)
    if sched.dynamic_allocation is False:
        count = sched.executor_instances if sched.executor_instances is not None else 1
        min_executors, max_executors = count, count
    else:
        min_executors, max_executors = sched.min_executors or 0, sched.max_executors
    if max_executors is not None and min_executors > max_executors:
        raise ValueError(f"minExecutors {min_executors} is above maxExecutors {max_executors}")
    return Job(
        app_id=launch.app_id,
        driver=Resources(cores, sched.driver_mem_mib or DEFAULT_MEM_MIB, ask.driver),
        in_cluster=launch.in_cluster,
        executor=executor,
        min_executors=min_executors,
        max_executors=max_executors,
        startup_s=_seconds(props, STARTUP, 0.0),
        tail_s=_seconds(props, TAIL, 0.0),
        warmup_s=_seconds(props, WARMUP, 0.0),
        stages=_stages(props, per_executor, default_work_s),
        exit_code=_exit_code(props),
        launch_failures=(_whole(props[LAUNCH_FAILURES], LAUNCH_FAILURES)
                         if LAUNCH_FAILURES in props else 0),
        node_sort=NodeSort(launch.node_sort),
        backlog_s=(backlog_timeouts({k: p.value for k, p in props.items()})
                   if sched.dynamic_allocation is not False else None),
        slots=per_executor,
        task_amounts=(("cores", float(cpus)), ("memory", executor.mem_mib / per_executor),
                      *sorted(ask.task.items())),
    )


def _properties(launch: Launch) -> dict[str, Prop]:
    if launch.rest_request is not None:
        req = launch.rest_request
        if not isinstance(req, Mapping) or req.get("action") != "CreateSubmissionRequest":
            raise ValueError("not a CreateSubmissionRequest")
        if not str(req.get("appResource") or "").strip():
            raise ValueError("the CreateSubmissionRequest has no appResource")
        if not str(req.get("mainClass") or "").strip():
            raise ValueError("Main class is missing.")
        spark_props = req.get("sparkProperties") or {}
        if not isinstance(spark_props, Mapping):
            raise ValueError("sparkProperties must be a JSON object")
        props = {k: Prop(str(v), "sparkProperties") for k, v in spark_props.items()}
    elif launch.argv:
        args = parse_spark_submit(list(launch.argv))
        if args.app_file is None:
            raise ValueError("no application file in the spark-submit arguments")
        props = effective_properties(args, {}, launch.cwd or ".")
    else:
        raise ValueError("nothing to launch (no spark-submit arguments, no REST request)")
    props.update({k: Prop(v, "the launch") for k, v in launch.conf.items()})
    return props


def _seconds(props: Mapping[str, Prop], key: str, default: float) -> float:
    prop = props.get(key)
    if prop is None:
        return default
    try:
        value = float(prop.value.strip().removesuffix("s"))
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise ValueError(f"{key}={prop.value!r}: expected seconds >= 0")
    return value


def _stages(props: Mapping[str, Prop], cores: int, default_work_s: float) -> tuple[Stage, ...]:
    prop = props.get(WORK)
    if prop is None:
        return (Stage(cores, default_work_s),)
    text = prop.value.strip()
    if "x" not in text:
        seconds = _seconds(props, WORK, default_work_s)
        return (Stage(cores, seconds),) if seconds > 0 else ()
    stages = []
    for part in text.split(","):
        part, _, gap = part.partition("@")
        tasks, _, seconds = part.strip().partition("x")
        seconds, _, spread = seconds.partition("~")
        try:
            stage = Stage(int(tasks), float(seconds.removesuffix("s")),
                          tuple(float(q) for q in spread.split("/")) if spread else (),
                          float(gap) if gap else 0.0)
        except ValueError:
            stage = Stage(0, 0.0)
        if (stage.tasks < 1 or not stage.task_s > 0 or len(stage.quantiles) == 1
                or not all(q > 0 for q in stage.quantiles) or not stage.gap_s >= 0):
            raise ValueError(f"{WORK}={prop.value!r}: expected seconds, or stages like 8x2,4x1 "
                             "(tasks x seconds, both above 0; 8x2~1/2/4: times from quantiles;"
                             " 8x2@3: after 3 s of the driver's own work)")
        stages.append(stage)
    return tuple(stages)


def _whole(prop: Prop, key: str) -> int:
    text = prop.value.strip()
    if not text.isdigit():
        raise ValueError(f"{key}={prop.value!r} (from {prop.source}): expected a whole number")
    return int(text)


def _exit_code(props: Mapping[str, Prop]) -> int:
    prop = props.get(EXIT_CODE)
    if prop is None:
        return 0
    try:
        return int(prop.value.strip())
    except ValueError:
        raise ValueError(f"{EXIT_CODE}={prop.value!r}: expected a whole number") from None
