"""Reading and steering a running PySpark application's executors through py4j.

The agent's only contact with Spark. It reports facts (demand, executors) and carries out
three kinds of action (a cap, kills, decommissions); it decides nothing.

Spark internals used, all reached from the driver's Python over py4j (Scala ``private[spark]``
members are public in bytecode). Measured on Spark 4.0.1; the same members exist in 4.3.0:

* ``SparkContext.executorAllocationManager()`` -- the dynamic-allocation manager (``None`` when
  dynamic allocation is off). Demand comes from its ``maxNumExecutorsNeededPerResourceProfile(0)``
  (running + pending tasks over task slots per executor, *not* clipped by the cap, so the
  scheduler sees what the app could really use), pending/running tasks from its ``listener()``,
  idle state from its ``executorMonitor().isExecutorIdle(id)`` (idle = no running task and no
  shuffle data an active job still needs, i.e. releasing it loses nothing).
* The manager's private ``maxNumExecutors`` field, written by Java reflection: the manager's own
  ramp-up never goes above it, so it is the cap. Lowering it does not lower a target the manager
  already holds, hence also ``numExecutorsTargetPerResourceProfileId().update(0, cap)`` and the
  backend's ``requestTotalExecutors`` (the standalone master then stops launching executors above
  the cap; it does not kill any -- surplus goes only through kill/decommission below).
* ``SparkContext.schedulerBackend()``: ``getExecutorsWithRegistrationTs()`` (executor ids and
  registration times), ``killExecutors(ids, adjustTargetNumExecutors=False, countFailures=False,
  force)`` and ``decommissionExecutors(Array[(id, ExecutorDecommissionInfo)], False, False)``.
  ``adjustTargetNumExecutors`` stays False because the cap already set the total; with True the
  backend would subtract again. ``SparkContext.killExecutors`` itself is refused while dynamic
  allocation is on, so the backend is called directly.
* ``SparkContext.statusStore().executorSummary(id).removeTime()``: when the driver removed an
  executor (the time its ``SparkListenerExecutorRemoved`` carries, the event log's too), read
  once per executor the agent finds gone, for the usage figures (docs/operator/usage.md). The status
  store learns it from the listener bus a moment after the removal: not there yet is None.
* ``org.apache.spark.api.python.PythonUtils.toScalaMap/toSeq`` and
  ``scala.jdk.javaapi.CollectionConverters.asJava`` to cross the Scala/Java collection border.

Every resource profile the driver knows is read and capped, each by its own cap
(``profiles``: stage-level profiles, ``rdd.withResources``).

Every hook is probed once at attach time (reflection, no side effect), in a few py4j calls: a
class's methods come back as one string (``ScalaRunTime.stringOf(getMethods())``), not one
call per method. Method by method (two calls each, the backend's 226 methods read twice and
the manager's once) it held the user's program up inside the SparkContext's constructor: 0.9 s
for one pass over the backend's on a loaded 2-core machine, 0.12 s for the one string. If one
needed for control is missing the app is reported ``admission-only``: the scheduler still
orders its driver, the agent still reports what it can read (demand from the public status
tracker), and never touches executors. Nothing here raises into the user's program: callers
catch ``SparkControlError``.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass

from .profiles import ProfileFact, ProfileReader
from .task_slots import tasks_per_executor

log = logging.getLogger("sessionsched.agent")

DEFAULT_PROFILE = 0
FULL = "full"
ADMISSION_ONLY = "admission-only"

# Hooks the manager and the backend must have: (owner, method name, parameter count).
_EAM_METHODS = (
    ("maxNumExecutorsNeededPerResourceProfile", 1),
    ("numExecutorsTargetPerResourceProfileId", 0),
    ("listener", 0),
    ("executorMonitor", 0),
)
_BACKEND_METHODS = (
    ("requestTotalExecutors", 3),
    ("killExecutors", 4),
    ("getExecutorsWithRegistrationTs", 0),
)


class SparkControlError(Exception):
    """A Spark call failed (py4j error, JVM gone, context stopped). Never reaches the user."""


@dataclass(frozen=True)
class ExecutorFact:
    executor_id: str
    started_at: float  # epoch seconds, when the executor registered with the driver
    idle: bool
    profile: int = 0  # its resource profile's id (0: the default profile)


@dataclass(frozen=True)
class SparkFacts:
    demand: int
    pending_tasks: int
    running_tasks: int
    executors: tuple[ExecutorFact, ...]
    profiles: tuple[ProfileFact, ...] = ()  # each profile's (empty: not read, admission-only)


@dataclass(frozen=True)
class Probe:
    """What the agent can do in this driver. ``reason`` names the first missing hook."""

    control: str  # FULL | ADMISSION_ONLY
    reason: str | None = None
    can_decommission: bool = False
    max_executors: int = 0  # the manager's maxNumExecutors at attach: the user's ceiling

    @property
    def full(self) -> bool:
        return self.control == FULL


class SparkControl:
    def __init__(self, sc):
        self._sc = sc
        self._jvm = sc._jvm
        self._jsc = sc._jsc.sc()
        self._eam = None
        self._backend = None
        self._max_field = None
        self._profiles: ProfileReader | None = None
        self.probe = self._probe()

    # --- probe ----------------------------------------------------------------------------

    def _probe(self) -> Probe:
        try:
            return self._probe_hooks()
        except Exception as e:  # a py4j failure while probing is itself a missing hook
            return Probe(ADMISSION_ONLY, f"probing Spark internals failed: {_one_line(e)}")

    def _probe_hooks(self) -> Probe:
        opt = self._jsc.executorAllocationManager()
        if not opt.isDefined():
            return Probe(
                ADMISSION_ONLY,
                "SparkContext.executorAllocationManager() is empty: dynamic allocation is off "
                "(a static app keeps the executors it gets)",
            )
        eam = opt.get()
        missing = _missing_methods(self._methods(eam), _EAM_METHODS, "ExecutorAllocationManager")
        if missing:
            return Probe(ADMISSION_ONLY, missing)
        try:
            field = eam.getClass().getDeclaredField("maxNumExecutors")
            field.setAccessible(True)
            max_executors = field.getInt(eam)
        except Exception as e:
            return Probe(
                ADMISSION_ONLY,
                f"ExecutorAllocationManager.maxNumExecutors field not writable: {_one_line(e)}",
            )
        backend = self._jsc.schedulerBackend()
        backend_methods = self._methods(backend)
        missing = _missing_methods(backend_methods, _BACKEND_METHODS,
                                   backend.getClass().getName())
        if missing:
            return Probe(ADMISSION_ONLY, missing)
        for cls in (
            "org.apache.spark.api.python.PythonUtils",
            "scala.jdk.javaapi.CollectionConverters",
        ):
            if not _class_exists(self._jvm, cls):
                return Probe(ADMISSION_ONLY, f"class {cls} not found")
        # Decommission is optional: without it a decommission order degrades to "release when
        # idle, kill at the deadline" (see ReclaimExecutor). It also needs the executors to
        # honour it: with spark.decommission.enabled=false they ignore the message yet stop
        # taking tasks, holding their cores until the idle timeout (measured) -- worse than a kill.
        enabled = self._sc.getConf().get("spark.decommission.enabled", "false").lower() == "true"
        has_decom = ("decommissionExecutors", 3) in backend_methods and (
            _class_exists(self._jvm, "org.apache.spark.scheduler.ExecutorDecommissionInfo")
        )
        self._eam, self._backend, self._max_field = eam, backend, field
        self._profiles = ProfileReader(self._jvm, self._jsc, eam,
                                       dict(self._sc.getConf().getAll()))
        return Probe(
            FULL, None, can_decommission=enabled and has_decom, max_executors=max_executors
        )

    def _methods(self, obj) -> set[tuple[str, int]]:
        """The object's public methods as (name, parameter count), in three py4j calls (py4j
        passes a ``Method[]`` to ``stringOf(Any)``, not to ``Arrays.toString(Object[])``)."""
        return public_methods(str(self._jvm.scala.runtime.ScalaRunTime.stringOf(
            obj.getClass().getMethods())))

    # --- facts ----------------------------------------------------------------------------

    def stopped(self) -> bool:
        """The SparkContext was stopped (by the user, by us, or the JVM went away)."""
        if getattr(self._sc, "_jsc", None) is None:
            return True
        try:
            return bool(self._jsc.isStopped())
        except Exception:
            return True

    def facts(self) -> SparkFacts:
        try:
            if self._eam is None:
                return self._public_facts()
            profiles = self._profiles.facts()
            return SparkFacts(
                demand=sum(p.demand for p in profiles),
                pending_tasks=sum(p.pending_tasks for p in profiles),
                running_tasks=sum(p.running_tasks for p in profiles),
                executors=self.executors(),
                profiles=profiles,
            )
        except Exception as e:
            raise SparkControlError(f"reading Spark state failed: {_one_line(e)}") from e

    def removed_at(self, executor_id: str) -> float | None:
        """When the driver removed the executor (epoch seconds), as its status store has it;
        None when it does not (yet) say. Never raises: this only times a report."""
        try:
            when = self._jsc.statusStore().executorSummary(executor_id).removeTime()
            return when.get().getTime() / 1000.0 if when.isDefined() else None
        except Exception:
            return None

    def pulse(self) -> tuple[int, int]:
        """The demand and the running tasks alone (two py4j calls a profile), for cheap checks
        between heartbeats: a task's start moves the one, its end one or both."""
        self._require_full()
        try:
            return self._profiles.pulse()
        except Exception as e:
            raise SparkControlError(f"reading the demand failed: {_one_line(e)}") from e

    def executors(self) -> tuple[ExecutorFact, ...]:
        """Registered executors, oldest first. Ones being killed or decommissioned are included:
        they hold their cores until they are gone, and the scheduler must count them."""
        registered = self._jvm.scala.jdk.javaapi.CollectionConverters.asJava(
            self._backend.getExecutorsWithRegistrationTs()
        )
        monitor = self._eam.executorMonitor()
        out = []
        for eid in registered.keySet():
            try:
                idle = bool(monitor.isExecutorIdle(eid))
            except Exception:
                # Registered with the backend but not yet seen by the monitor (it learns from the
                # listener bus, a moment later). Busy is the safe guess: nothing gets released.
                idle = False
            out.append(ExecutorFact(str(eid), registered.get(eid) / 1000.0, idle,
                                    self._profile_of(str(eid))))
        return tuple(sorted(out, key=lambda e: (e.started_at, e.executor_id)))

    def _profile_of(self, executor_id: str) -> int:
        try:
            return self._profiles.executor_profile(executor_id, self._backend)
        except Exception:  # a Spark without the monitor's hook: the default profile
            return DEFAULT_PROFILE

    def _public_facts(self) -> SparkFacts:
        """Admission-only: demand from the public status tracker (lags a little; stages not yet
        submitted are invisible). Tasks per executor by Spark's rule: spark.executor.cores //
        spark.task.cpus, or fewer where a task resource (a GPU share) allows fewer."""
        tracker = self._sc.statusTracker()
        pending = running = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is None:
                continue
            running += info.numActiveTasks
            pending += max(info.numTasks - info.numActiveTasks - info.numCompletedTasks, 0)
        slots = tasks_per_executor(dict(self._sc.getConf().getAll()))
        return SparkFacts(math.ceil((pending + running) / slots), pending, running, ())

    # --- actions (full control only) ------------------------------------------------------

    def set_cap(self, cap: int) -> None:
        """Hold dynamic allocation at ``cap`` executors or fewer (steps 1 and 2 of the measured
        recipe; step 3, taking back the surplus, comes as explicit reclaim orders).

        Idempotent and cheap when nothing changes, so the agent calls it every heartbeat: the
        manager's thread may have raised its target from the old maximum in the instant between
        our field write and our target write, and the next call corrects that.
        """
        self._require_full()
        cap = max(0, min(cap, self.probe.max_executors))
        try:
            if self._max_field.getInt(self._eam) != cap:
                self._max_field.setInt(self._eam, cap)
            targets = self._eam.numExecutorsTargetPerResourceProfileId()
            current = targets.get(DEFAULT_PROFILE)
            if current.isDefined() and current.get() > cap:
                targets.update(DEFAULT_PROFILE, cap)
                to_map = self._jvm.org.apache.spark.api.python.PythonUtils.toScalaMap
                self._backend.requestTotalExecutors(
                    to_map({DEFAULT_PROFILE: cap}), to_map({DEFAULT_PROFILE: 0}), to_map({})
                )
        except Exception as e:
            raise SparkControlError(f"setting the executor cap failed: {_one_line(e)}") from e

    def set_caps(self, caps: dict[int, int]) -> None:
        """Hold each resource profile at its own cap (``profiles.ProfileReader.cap``): the
        scheduler's grant split over the app's profiles; a profile left out is held at 0."""
        self._require_full()
        try:
            self._profiles.cap(caps, self.probe.max_executors, self._max_field, self._backend)
        except Exception as e:
            raise SparkControlError(f"setting the profiles' caps failed: {_one_line(e)}") from e

    def target(self) -> int:
        """The manager's current target for the default profile."""
        self._require_full()
        current = self._eam.numExecutorsTargetPerResourceProfileId().get(DEFAULT_PROFILE)
        return int(current.get()) if current.isDefined() else 0

    def kill(self, executor_ids: list[str], force: bool) -> list[str]:
        """Kill executors now. ``force=False`` makes the backend skip any that run a task (the
        check happens inside the backend's lock, so it does not race with task launch).
        Tasks of a killed executor are retried elsewhere and do not count as failures."""
        self._require_full()
        if not executor_ids:
            return []
        try:
            seq = self._jvm.org.apache.spark.api.python.PythonUtils.toSeq(list(executor_ids))
            killed = self._backend.killExecutors(seq, False, False, force)
            done = [str(x) for x in self._jvm.scala.jdk.javaapi.CollectionConverters.asJava(killed)]
        except Exception as e:
            raise SparkControlError(
                f"killing executors {executor_ids} failed: {_one_line(e)}"
            ) from e
        # Marked as going in the manager's monitor, as the manager marks its own kills: else it
        # times them out as idle while the driver lists them (5 s in standalone) and asks to
        # kill them ten times a second, warning each time. Best effort: the kill stands.
        try:
            if done:
                self._eam.executorMonitor().executorsKilled(killed)
        except Exception as e:
            log.debug("sessionsched agent: the executor monitor was not told of %s: %s", done, e)
        return done

    def decommission(self, executor_ids: list[str]) -> list[str]:
        """Gracefully decommission: no new tasks, running ones finish, shuffle and cached blocks
        migrate to peers (spark.storage.decommission.enabled), then the executor exits."""
        self._require_full()
        if not executor_ids:
            return []
        if not self.probe.can_decommission:
            raise SparkControlError("decommission is not enabled in this app")
        try:
            jvm = self._jvm
            info_cls = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo
            pairs = self._sc._gateway.new_array(jvm.scala.Tuple2, len(executor_ids))
            for i, eid in enumerate(executor_ids):
                info = info_cls("reclaimed by sessionsched", jvm.scala.Option.apply(None))
                pairs[i] = jvm.scala.Tuple2(eid, info)
            done = self._backend.decommissionExecutors(pairs, False, False)
            return [str(x) for x in jvm.scala.jdk.javaapi.CollectionConverters.asJava(done)]
        except Exception as e:
            raise SparkControlError(
                f"decommissioning executors {executor_ids} failed: {_one_line(e)}"
            ) from e

    def release_cap(self) -> None:
        """Give the manager back the user's own maximum: the app runs unmanaged from now on."""
        if self.probe.full:
            try:
                self._max_field.setInt(self._eam, self.probe.max_executors)
            except Exception as e:
                raise SparkControlError(f"restoring maxExecutors failed: {_one_line(e)}") from e

    def _require_full(self) -> None:
        if not self.probe.full:
            raise SparkControlError(f"no executor control: {self.probe.reason}")


_SIGNATURE = re.compile(r"\.([\w$]+)\(([^)]*)\)")  # ".name(erased, parameter, types)"


def public_methods(signatures: str) -> set[tuple[str, int]]:
    """(name, parameter count) of each method in ``ScalaRunTime.stringOf(cls.getMethods())``:
    ``Array(m, m, ...)`` of erased signatures such as
    ``public void a.B.kill(scala.collection.Seq,boolean) throws x.Y``."""
    return {(name, len(params.split(",")) if params.strip() else 0)
            for name, params in _SIGNATURE.findall(signatures)}


def _missing_methods(have: set[tuple[str, int]], methods, owner: str) -> str | None:
    """The first (name, arity) of ``methods`` not in ``have``, as a reason, else None."""
    for name, arity in methods:
        if (name, arity) not in have:
            where = f"{owner}." if owner else ""
            return f"{where}{name} ({arity} args) not found"
    return None


def _class_exists(jvm, name: str) -> bool:
    try:
        jvm.java.lang.Class.forName(name)
        return True
    except Exception:
        return False


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else type(e).__name__
