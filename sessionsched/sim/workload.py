"""Simulator workload YAML -> validated, typed workload (docs/operator/simulator.md).

```yaml
start: 2026-12-01T08:00:00+00:00   # optional: what the run's 0 stands for (a config's plans)
cluster: {cores: 64, memory: 256g, workers: 1, driver_slots: 8, driver_start_s: 5,
          executor_start_s: 3, executor_idle_timeout_s: 60, cycle_s: 1, max_time_s: 86400}
queues: [...]      # the server config's `queues` schema; default: one queue root.default
apps:
  - {name: etl-1, submit: 0, queue: root.etl, user: alice, priority: 5000,
     driver: {cores: 1, memory: 2g, in_cluster: true}, executor: {cores: 2, memory: 4g},
     min_executors: 0, max_executors: 16, slots_max: null, startup_s: 20,
     stages: [{tasks: 200, task_s: 5}], exit_code: 0, updates: [{at: 60, priority: 9000}],
     conf: {spark.sessionsched.gang.size: 8, spark.sessionsched.gang.style: hard}}
```

Decisions the format leaves open:
- ``start`` (optional): the date and time the run's 0 stands for (``from-eventlogs`` writes
  the first app's), from which ``simulate --config`` fires the config's time-of-day plans
  (``queue_trees``; ``--start`` wins); a time without an offset is local. It changes nothing
  else: the workload's own queues have no plans.
- ``cycle_s`` (how often the scheduler steps) and ``max_time_s`` (the run is stopped there and
  unfinished apps count as stuck) are cluster settings.
- Memory is a Spark size (``512m``, ``2g``); a bare number is MiB, as for ``spark.executor.memory``.
- An app's ``queue`` is resolved like a submission's (``root.etl``, ``etl``); default: the only
  leaf queue if there is one, else ``root.default``. Names are unique: they are the app ids.
- Submission order (``seq``) is by submit time, then by place in the file.
- ``cores`` and ``memory`` are the whole cluster's, split evenly among ``workers`` equal
  workers (as the server's memory backend): a driver or an executor runs on one of them, the
  one its queue's ``node_sort`` chooses (``fair``: the freest; ``binpacking``: the fullest
  that fits; docs/design/placement.md). Or ``worker_groups: [{count, cores, memory,
  resources: {gpu: 4}}]``, each group's sizes per worker: workers not all alike, some with
  custom resources (docs/operator/resources.md).
- A workload that could never run is refused, not simulated: an app the server would refuse
  at submission (``engine.placement.never_fits``: an executor or an in-cluster driver larger
  than any worker, first executors more than the workers hold or above a queue's
  ``max_cores``), ``min_executors`` above ``max_executors``, a priority update before the app
  is submitted, a submission after ``max_time_s``. An app that merely waits forever is a
  result (``stuck``).
- Stages run one after another, in the order given. A stage read from an event log
  (``sessionsched workload from-eventlogs``) also has its Spark stage ``id``, ``after``: the
  ids of the earlier stages it waited for (Spark may have run independent stages side by side;
  the simulator runs them in turn, which keeps every wait), and ``task_s_quantiles``: its task
  times' evenly spaced quantiles, shortest to longest, from which the memory cluster draws
  each task's time (``backends.memory.job.Stage.task_time``; ``task_s``, the mean, is then
  only read by people).
- ``gap_s`` (a stage's) and ``tail_s`` (an app's): seconds the driver works alone between two
  stages and after its last one (an app's own code between and after its Spark jobs, read
  from its event log), asking for no executor meanwhile; ``warmup_s`` (an app's): how much
  longer the first task on each of its executors takes (its Python worker starting; read
  from its log), a killed executor's replacement paying it again.
- ``host_cpus`` (the cluster's): the CPUs its drivers' and executors' starts share, as on one
  machine (``backends.memory.starts``); unset, each start takes its latency.
- ``stages: []`` is a driver that never asks for executors: it works ``startup_s`` in the
  driver alone and exits (as YuniKorn says of its StateAware timeout, "not all
  applications will request more than one allocation"); ``exit_code`` (default 0) is the
  driver's when its work is done, so a driver that fails at start is ``stages: []``, a short
  ``startup_s`` and ``exit_code: 1``.
- ``conf``: Spark properties as a submission carries them (values may be YAML numbers). The
  gang's are read as at submission (``gang_properties.gang_from_conf``:
  ``spark.sessionsched.gang.*`` and YuniKorn's
  ``spark.kubernetes.driver.annotation.yunikorn.apache.org/*`` annotations), and a
  malformed one refuses the workload with the gateway's own line; so are custom resources
  (``spark.{driver,executor,task}.resource.{name}.amount``, ``spark.resource_props``). The
  properties the app's
  own keys set (``spark.driver.cores``, ``spark.executor.memory``, ``min_executors`` ...) are
  refused in ``conf``, so no size has two sources; the rest ride on the launch unread.
- Bursts of identical apps: YAML anchors and merge keys (``<<: *app``). Top-level keys that
  start with ``x-`` are ignored, to hold the anchored templates (as in docker compose files).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..backends.memory.job import Stage
from ..config import (
    DEFAULT_QUEUES,
    QueueConfig,
    build_queue_tree,
    load_yaml,
    parse_model,
    resolve_queue,
)
from ..config.plan_times import date_time
from ..engine.clusters import PlacementRule, eligible, tree_for
from ..engine.placement import Workers, never_fits
from ..engine.tree import QueueTree
from ..model import (
    PRIORITY_DEFAULT,
    AppSpec,
    Queue,
    Resources,
    parse_priority,
)
from ..spark.allocation import backlog_timeouts
from ..spark.gang_properties import gang_from_conf
from ..spark.resource_props import resource_ask
from .cluster_config import Cluster, ClusterConfig, MiB, NamedCluster
from .cluster_config import Strict as _Strict
from .clusters_config import NamedClusterConfig, Outage, OutageConfig, clusters_problem
from .queue_trees import QueueChange

# What the app's own keys set: in ``conf`` they would be a second, conflicting source.
OWN_KEYS = {
    "spark.driver.cores": "driver.cores",
    "spark.driver.memory": "driver.memory",
    "spark.executor.cores": "executor.cores",
    "spark.executor.memory": "executor.memory",
    "spark.dynamicAllocation.minExecutors": "min_executors",
    "spark.dynamicAllocation.maxExecutors": "max_executors",
    "spark.app.name": "name",
}


def _conf_value(v: object) -> str:
    """A property's value as a submission carries it: a string (YAML ``8`` is ``"8"``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (str, int, float)):
        return str(v)
    raise ValueError(f"a Spark property's value is a string or a number, not {v!r}")


Conf = dict[str, Annotated[str, BeforeValidator(_conf_value)]]
Priority = Annotated[int, BeforeValidator(parse_priority)]


class DriverConfig(_Strict):
    cores: int = Field(1, ge=0)
    memory: MiB = 1024
    in_cluster: bool = False


class ExecutorConfig(_Strict):
    cores: int = Field(1, ge=1)
    memory: MiB = 1024


class StageConfig(_Strict):
    tasks: int = Field(ge=1)
    task_s: float = Field(gt=0)
    # A stage read from an event log (module doc): its Spark stage id, the ids of the stages
    # it waited for, and its task times' evenly spaced quantiles, shortest to longest.
    id: int | None = None
    after: list[int] = Field(default_factory=list)
    task_s_quantiles: list[float] | None = None
    gap_s: float = Field(0.0, ge=0)  # the driver's own work before it (after the stage before)

    @field_validator("task_s_quantiles")
    @classmethod
    def _quantiles(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and (len(v) < 2 or not all(x > 0 for x in v)
                              or any(b < a for a, b in zip(v, v[1:], strict=False))):
            raise ValueError("expected at least 2 times above 0, shortest to longest")
        return v


class UpdateConfig(_Strict):
    at: float = Field(ge=0)
    priority: Priority


class AppConfig(_Strict):
    name: str
    submit: float = Field(0.0, ge=0)
    queue: str | None = None
    user: str = ""
    priority: Priority = PRIORITY_DEFAULT
    driver: DriverConfig = DriverConfig()
    executor: ExecutorConfig = ExecutorConfig()
    min_executors: int = Field(0, ge=0)
    max_executors: int | None = Field(None, ge=1)
    slots_max: int | None = Field(None, ge=1)
    startup_s: float = Field(0.0, ge=0)
    tail_s: float = Field(0.0, ge=0)  # the driver's own work after its last stage
    warmup_s: float = Field(0.0, ge=0)  # each executor's first task takes this much longer
    stages: list[StageConfig]  # [] : the driver works startup_s alone, asks for no executor
    exit_code: int = 0  # the driver's exit code when its work is done (non-zero: FAILED)
    updates: list[UpdateConfig] = Field(default_factory=list)
    conf: Conf = Field(default_factory=dict)  # Spark properties (module doc)
    clusters: list[str] = Field(default_factory=list)  # it may run on these only (``clusters:``)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("an app needs a name")
        return v.strip()


class WorkloadConfig(_Strict):
    # The date and time the run's 0 stands for (``from-eventlogs``: the first app's), for a
    # server config's plans to fire on (``simulate --config``; ``queue_trees``).
    start: Annotated[datetime, BeforeValidator(date_time)] | None = None
    cluster: ClusterConfig = ClusterConfig()
    clusters: list[NamedClusterConfig] | None = Field(None, min_length=1)
    placement: PlacementRule = PlacementRule.SPILL
    cluster_down: list[OutageConfig] = Field(default_factory=list)
    queues: list[QueueConfig] = Field(default_factory=lambda: list(DEFAULT_QUEUES))
    apps: list[AppConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _cross_checks(self) -> WorkloadConfig:
        problem = _first_problem(self)
        if problem:
            raise ValueError(problem)
        return self


def _queue_name(app: AppConfig, root: Queue) -> str:
    if app.queue is not None:
        return app.queue
    leaves = root.leaves()
    return leaves[0].name if len(leaves) == 1 else "root.default"


def _first_problem(w: WorkloadConfig) -> str | None:
    root = build_queue_tree(w.queues)
    problem = clusters_problem(
        w.clusters, "cluster" in w.model_fields_set, w.cluster_down,
        [*((f"queues: {q.name}.clusters", list(q.clusters)) for q in root.walk()),
         *((f"queues: {q.name}.max_cores_per_cluster", [c for c, _ in q.cluster_max_cores])
           for q in root.walk()),
         *((f"queues: {q.name}.max_resources_per_cluster",
            [c for c, _ in q.cluster_max_resources]) for q in root.walk()),
         *((f"apps[{i}].clusters", a.clusters) for i, a in enumerate(w.apps))])
    if problem:
        return problem
    seen: dict[str, int] = {}
    c = (w.clusters or [w.cluster])[0]
    workers = {getattr(k, "name", ""): Workers(k.worker_list()) for k in w.clusters or [c]}
    for i, app in enumerate(w.apps):
        where = f"apps[{i}]"
        if app.name in seen:
            return f"{where}.name: {app.name!r} is already the name of apps[{seen[app.name]}]"
        seen[app.name] = i
        if app.submit > c.max_time_s:
            return (
                f"{where}.submit: {app.submit:g} is after the end of the run "
                f"(cluster.max_time_s {c.max_time_s:g})"
            )
        try:
            resolve_queue(root, _queue_name(app, root))
        except LookupError as e:
            return f"{where}.queue: {e}"
        ex, dr = app.executor, app.driver
        if not dr.in_cluster and c.driver_slots == 0:
            return (
                f"{where}.driver: a client-mode driver needs a driver slot; "
                "cluster.driver_slots is 0"
            )
        if app.max_executors is not None and app.min_executors > app.max_executors:
            return (
                f"{where}.min_executors: {app.min_executors} is above max_executors "
                f"{app.max_executors}"
            )
        if app.slots_max is not None and app.slots_max < ex.cores:
            return (
                f"{where}.slots_max: {app.slots_max} cores cannot hold one executor of "
                f"{ex.cores} cores"
            )
        for j, up in enumerate(app.updates):
            if up.at < app.submit:
                return (
                    f"{where}.updates[{j}].at: {up.at:g} is before the app is submitted "
                    f"(submit {app.submit:g})"
                )
        problem = _stage_problem(app.stages)
        if problem:
            return f"{where}.{problem}"
        for key in app.conf:
            if key in OWN_KEYS:
                return f"{where}.conf: {key}: set it as the app's {OWN_KEYS[key]}"
        try:
            gang_from_conf(app.conf)
            resource_ask(app.conf)
            backlog_timeouts(app.conf)
        except ValueError as e:
            return f"{where}.conf: {e}"
        spec = _sim_app(app, i, root).spec
        may = eligible(spec, QueueTree.of(root).path[spec.queue], list(workers))
        if not may:
            return f"{where}: no cluster it may use (it asks for {', '.join(app.clusters)})"
        nevers = [never_fits(spec, QueueTree.of(tree_for(root, name)).path[spec.queue],
                             workers[name]) for name in may]
        if all(n is not None for n in nevers):
            return f"{where}: never fits: " + "; ".join(
                f"{name}: {n}" if name else n for name, n in zip(may, nevers, strict=True))
    return None


def _stage_problem(stages: list[StageConfig]) -> str | None:
    """Stages run in the order given, so a stage may wait only for earlier ones."""
    ids: set[int] = set()
    for j, s in enumerate(stages):
        if s.id is not None and s.id in ids:
            return f"stages[{j}].id: {s.id} is already an earlier stage's id"
        late = [p for p in s.after if p not in ids]
        if late:
            return (f"stages[{j}].after: {late[0]} is not the id of an earlier stage "
                    "(stages run in the order given)")
        if s.id is not None:
            ids.add(s.id)
    return None


# --- typed workload: what the simulator reads -------------------------------------------------


@dataclass(frozen=True)
class Update:
    at_s: float
    priority: int


@dataclass(frozen=True)
class SimApp:
    """One app of the workload: what it asks the scheduler for, and how its Spark job runs."""

    spec: AppSpec
    startup_s: float
    stages: tuple[Stage, ...]
    updates: tuple[Update, ...]
    exit_code: int = 0
    tail_s: float = 0.0
    conf: Mapping[str, str] = field(default_factory=dict)  # the app's ``conf:``, as written
    warmup_s: float = 0.0

    @property
    def name(self) -> str:
        return self.spec.app_id


@dataclass(frozen=True)
class Workload:
    cluster: Cluster  # with ``clusters``: the first (``cycle_s`` and ``max_time_s`` are all's)
    root: Queue
    apps: tuple[SimApp, ...]  # in file order
    clusters: tuple[NamedCluster, ...] = ()  # several clusters (``clusters_config``)
    placement: PlacementRule = PlacementRule.SPILL
    outages: tuple[Outage, ...] = ()
    queue_changes: tuple[QueueChange, ...] = ()  # a config's plans (``queue_trees``)


def to_workload(cfg: WorkloadConfig) -> Workload:
    root = build_queue_tree(cfg.queues)
    order = sorted(range(len(cfg.apps)), key=lambda i: (cfg.apps[i].submit, i))
    seq = {i: n for n, i in enumerate(order)}
    apps = tuple(_sim_app(a, seq[i], root) for i, a in enumerate(cfg.apps))
    named = tuple(NamedCluster(c.name, c.to_cluster(), c.weight, c.lost_timeout_s)
                  for c in cfg.clusters or ())
    return Workload(cluster=named[0].cluster if named else cfg.cluster.to_cluster(), root=root,
                    apps=apps, clusters=named, placement=cfg.placement,
                    outages=tuple(Outage(o.cluster, o.at, o.until) for o in cfg.cluster_down))


def _sim_app(a: AppConfig, seq: int, root: Queue) -> SimApp:
    ask = resource_ask(a.conf)  # checked with the rest (``_first_problem``)
    spec = AppSpec(
        app_id=a.name,
        queue=resolve_queue(root, _queue_name(a, root)).name,
        seq=seq,
        submitted_at=a.submit,
        priority=a.priority,
        name=a.name,
        user=a.user,
        driver=Resources(a.driver.cores, a.driver.memory, ask.driver),
        driver_in_cluster=a.driver.in_cluster,
        executor=Resources(a.executor.cores, a.executor.memory, ask.executor),
        min_executors=a.min_executors,
        max_executors=a.max_executors,
        slots_max=a.slots_max,
        gang=gang_from_conf(a.conf),
        clusters=tuple(a.clusters),
    )
    return SimApp(
        spec=spec,
        startup_s=a.startup_s,
        stages=tuple(Stage(s.tasks, s.task_s, tuple(s.task_s_quantiles or ()), s.gap_s)
                     for s in a.stages),
        updates=tuple(Update(u.at, u.priority) for u in a.updates),
        exit_code=a.exit_code,
        conf=dict(a.conf),
        tail_s=a.tail_s,
        warmup_s=a.warmup_s,
    )


def load_workload(path: str | Path) -> Workload:
    """The workload in ``path``, or ConfigError with one line naming the file and the problem."""
    data = load_yaml(path)
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("x-"))}
    return to_workload(parse_model(WorkloadConfig, data, str(path)))
