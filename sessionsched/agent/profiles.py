"""Stage-level resource profiles: what the agent reads of each and how it caps each.

A PySpark app may run a stage with executors of another shape (``rdd.withResources``, a
``ResourceProfile``: one core and a GPU, say). Spark keeps one executor target per profile
id: the allocation manager's ``numExecutorsTargetPerResourceProfileId`` (id 0, the default
profile, always; another id once a stage of that profile was submitted, mid-run). The agent
reads each id found there:

* its executor shape, once per id (a profile never changes): the SparkContext's
  ``resourceProfileManager().resourceProfileFromId(id)``, ``executorResources`` (cores,
  memory in MiB, custom resources) and ``taskResources`` (cpus, custom amounts); what a
  profile leaves out (memory, cores) is the app's own ``spark.executor.*``, as Spark does;
* its demand (``maxNumExecutorsNeededPerResourceProfile(id)``) and its pending and running
  tasks (the manager's listener, per profile), every look;
* each executor's profile, once per executor: the backend's
  ``getExecutorResourceProfileId(id)``, which knows it from the executor's registration on,
  else the manager's ``executorMonitor().getResourceProfileId(id)`` (-1 while neither knows
  it: reported as the default profile until one does). The monitor alone learns of a new
  executor from the listener bus, a moment after the backend lists it: a new GPU executor
  reported as a default one in between is over that profile's grant, and the scheduler may
  take back a working GPU executor for it (which Spark then starts again).

Capping: the manager has one ``maxNumExecutors`` for every profile, and the moment it adds
to a profile's target it asks the backend, whose master launches at once; lowering that
target a moment later stops further launches but kills none (a launched executor registers
anyway). So once an app has several profiles ``cap`` writes 0 there - the manager adds to no
profile - and sets each profile's target itself, every look: its need
(``maxNumExecutorsNeededPerResourceProfile``) within its cap, lowered to the cap when above
it, then asks the backend for the full map of targets (``requestTotalExecutors(Map[id -> n],
...)``: the backend replaces its whole request, so a map with one profile would drop the
others). The manager still lowers a target to the need as tasks finish, and still removes
idle executors. One window stays: the first stage of an app's first other profile comes
while the one cap is still the grant, and if another profile's tasks are backlogged already
(the manager's backlog timer is one for all profiles) it may get an executor before the
agent's next look (a quarter second); the scheduler sees the surplus and takes it back.

Standard library only (the agent ships alone); py4j objects come from ``SparkControl``.
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN_PROFILE = -1  # the executor monitor's answer for an executor it has not seen yet


@dataclass(frozen=True)
class Shape:
    """A profile's executor and task resources."""

    cores: int
    memory_mib: int
    resources: tuple[tuple[str, float], ...] = ()  # executor custom resources: (name, amount)
    task_cpus: float = 1.0
    task_resources: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ProfileFact:
    profile_id: int
    shape: Shape
    demand: int
    pending_tasks: int
    running_tasks: int


class ProfileCaps:
    """Which caps the agent sets (``SparkControl.set_cap`` or ``set_caps``). With the grant
    split per profile (``grants``, from the answers): each profile its part. A profile besides
    the default that the server has not given a part yet (it appeared mid-run, the server's
    cycle has not answered it) is held at 0 until it does, for up to ``wait_s``: the one
    maximum of Spark's manager would otherwise let it ask for as many executors as the whole
    grant on top of the default profile's. No part after ``wait_s``: an older server, which
    knows no profiles: the one cap, as before."""

    def __init__(self, wait_s: float = 30.0):
        self.wait_s = wait_s
        self.grants: tuple[tuple[int, int], ...] = ()
        self._new_since: float | None = None  # since when a profile waits for its part

    def seen(self, profiles: tuple[ProfileFact, ...], now: float) -> None:
        granted = {rp for rp, _ in self.grants}
        waiting = any(p.profile_id and p.profile_id not in granted for p in profiles)
        if not waiting:
            self._new_since = None
        elif self._new_since is None:
            self._new_since = now

    def choose(self, grant: int, now: float) -> dict[int, int] | None:
        """The caps per profile, or None: the one cap ``grant``."""
        if self._new_since is not None and now - self._new_since < self.wait_s:
            return {**dict(self.grants), **({} if self.grants else {0: grant})}
        return dict(self.grants) if any(rp for rp, _ in self.grants) else None


def profile_body(p: ProfileFact) -> dict:
    """A profile as a heartbeat carries it (docs/design/agent-protocol.md)."""
    s = p.shape
    return {"id": p.profile_id, "cores": s.cores, "memory_mib": s.memory_mib,
            "resources": dict(s.resources), "task_cpus": s.task_cpus,
            "task_resources": dict(s.task_resources), "demand": p.demand,
            "pending_tasks": p.pending_tasks, "running_tasks": p.running_tasks}


class ProfileReader:
    """Reads the profiles of one driver (``SparkControl`` hands it the py4j objects)."""

    def __init__(self, jvm, jsc, eam, conf: dict[str, str]):
        self._jvm, self._jsc, self._eam = jvm, jsc, eam
        self._conf = conf
        self._shapes: dict[int, Shape] = {}
        self._of_executor: dict[str, int] = {}
        self.ids: tuple[int, ...] = (0,)  # as at the last look

    def _as_java(self, scala):
        return self._jvm.scala.jdk.javaapi.CollectionConverters.asJava(scala)

    def read_ids(self) -> tuple[int, ...]:
        keys = self._as_java(self._eam.numExecutorsTargetPerResourceProfileId()).keySet()
        self.ids = tuple(sorted({0, *(int(k) for k in keys)}))
        return self.ids

    def facts(self) -> tuple[ProfileFact, ...]:
        eam = self._eam
        listener = eam.listener()
        out = []
        for rp in self.read_ids():
            out.append(ProfileFact(
                rp, self.shape(rp),
                int(eam.maxNumExecutorsNeededPerResourceProfile(rp)),
                int(listener.pendingTasksPerResourceProfile(rp)),
                int(listener.totalRunningTasksPerResourceProfile(rp)),
            ))
        return tuple(out)

    def pulse(self) -> tuple[int, int]:
        """Demand and running tasks summed over the profiles known at the last look."""
        eam = self._eam
        listener = eam.listener()
        demand = running = 0
        for rp in self.ids:
            demand += int(eam.maxNumExecutorsNeededPerResourceProfile(rp))
            running += int(listener.totalRunningTasksPerResourceProfile(rp))
        return demand, running

    def shape(self, rp: int) -> Shape:
        got = self._shapes.get(rp)
        if got is None:
            got = self._shapes[rp] = self._read_shape(rp)
        return got

    def _read_shape(self, rp: int) -> Shape:
        profile = self._jsc.resourceProfileManager().resourceProfileFromId(rp)
        executor = self._amounts(profile.executorResources())
        task = self._amounts(profile.taskResources())
        conf = self._conf
        cores = int(executor.pop("cores", 0) or conf.get("spark.executor.cores", "1"))
        memory = int(executor.pop("memory", 0) or _mib(conf.get("spark.executor.memory", "1g")))
        for spark_own in ("memoryOverhead", "offHeap", "pyspark.memory"):
            executor.pop(spark_own, None)
        cpus = float(task.pop("cpus", 0) or conf.get("spark.task.cpus", "1"))
        return Shape(cores, memory, tuple(sorted(executor.items())), cpus,
                     tuple(sorted(task.items())))

    def _amounts(self, scala_map) -> dict[str, float]:
        java = self._as_java(scala_map)
        return {str(k): float(java.get(k).amount()) for k in java.keySet()}

    def executor_profile(self, executor_id: str, backend=None) -> int:
        """An executor's profile id (module doc); ``backend``: the driver's scheduler backend,
        asked first."""
        rp = self._of_executor.get(executor_id)
        if rp is None:
            rp = UNKNOWN_PROFILE
            if backend is not None:
                try:
                    rp = int(backend.getExecutorResourceProfileId(executor_id))
                except Exception:  # a backend without it: the monitor's word alone
                    rp = UNKNOWN_PROFILE
            if rp == UNKNOWN_PROFILE:
                rp = int(self._eam.executorMonitor().getResourceProfileId(executor_id))
            if rp == UNKNOWN_PROFILE:
                return 0
            self._of_executor[executor_id] = rp
        return rp

    def cap(self, caps: dict[int, int], ceiling: int, field, backend) -> None:
        """Hold each profile at its cap (module doc); a profile not in ``caps`` at 0."""
        eam = self._eam
        if field.getInt(eam) != 0:
            field.setInt(eam, 0)
        targets = eam.numExecutorsTargetPerResourceProfileId()
        java = self._as_java(targets)
        current = {int(k): int(java.get(k)) for k in java.keySet()}
        moved = False
        for rp, n in current.items():
            cap = min(caps.get(rp, 0), ceiling)
            goal = min(cap, max(n, int(eam.maxNumExecutorsNeededPerResourceProfile(rp))))
            if goal != n:
                targets.update(rp, goal)
                current[rp] = goal
                moved = True
        if moved:
            to_map = self._jvm.org.apache.spark.api.python.PythonUtils.toScalaMap
            backend.requestTotalExecutors(
                to_map(current), to_map(dict.fromkeys(current, 0)), to_map({}))


def _mib(size: str) -> int:
    """A Spark memory size (``2g``, ``512m``, a bare number in MiB) in MiB; 1024 if unreadable."""
    text = size.strip().lower().rstrip("b")
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 ** 2}
    try:
        if text and text[-1] in units:
            return max(int(float(text[:-1]) * units[text[-1]]), 1)
        return int(text)
    except ValueError:
        return 1024
