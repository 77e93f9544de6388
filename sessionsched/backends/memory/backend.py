"""The memory backend: a ``ClusterBackend`` over a ``MemoryCluster`` (no Spark, no process).

It takes every launch a real backend takes -- a spark-submit ``argv`` (client or cluster
mode, Python wrapped by the agent's bootstrap or a jar), a Spark REST CreateSubmissionRequest
-- reads its Spark properties (``job.py``) and runs the job in the cluster; nothing is
executed and no file is opened. The clock is the caller's: ``poll(now)`` advances the cluster
to ``now``, and launches, stops and steering act at that time.

What ``poll`` reports, for each app it launched or adopted, in launch order:
``DriverStarted`` (with a made-up Spark app id) once the driver is up; ``ExecutorsChanged``
when its executors changed, reported as its agent's (``Witness.AGENT``: with idle flags, this
cluster knows them as an agent does) and ``DemandChanged`` when its demand changed, as the
app's agent reports them; ``DriverExited`` with the exit code (0 finished, the job's
``spark.sessionsched.memory.exitCode``, 143 stopped). Apps told by ``manage``: their
executors as the cluster sees them (``Witness.CLUSTER``), not their exit. Last,
``CapacityChanged`` when the capacity (the cluster's minus external apps not managed), the
driver slots or the workers (``MemoryCluster.lose_worker``) changed since last sent, and with
more than one worker when what is free on one changed (the engine asks a driver's room per
worker: ``engine.placement.free_now``).
Only the apps the cluster changed since the last poll (``MemoryCluster.watch``) and those
adopted since are looked at; the events are the same as if every app were.

Handles: kind ``memory``, ``ref`` the cluster's driver id. ``adopt`` looks the driver up in
the same ``MemoryCluster`` object (a new backend over it is a restarted scheduler).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ...engine.events import (
    CapacityChanged,
    Decision,
    DemandChanged,
    DriverExited,
    DriverStarted,
    Event,
    ExecutorsChanged,
    Witness,
)
from ...model import Executor, Resources, Worker
from ...model.stages import Progress
from ..base import BackendError, BackendUnavailable, ClusterBackend, Handle, Launch
from .cluster import MemoryCluster
from .job import LAUNCH_FAILURES, job_from_launch
from .spark import Phase, SparkApp

KIND = "memory"


@dataclass
class _Reported:
    """What this backend has told about one app."""

    driver_id: str
    order: int  # its place in launch order (a relaunch of a live app keeps it)
    started: bool = False
    executors: tuple[Executor, ...] = ()
    demand: int = 0


class MemoryBackend(ClusterBackend):
    def __init__(self, cluster: MemoryCluster):
        self.cluster = cluster
        self._apps: dict[str, _Reported] = {}  # live apps this backend reports on
        self._changed = cluster.watch()  # apps the cluster changed since the last poll
        self._fresh: set[str] = set()  # adopted since the last poll: reported whole
        self._orders = itertools.count()
        self._managed: dict[str, tuple[str, tuple[Executor, ...]]] = {}  # spark id -> (app, view)
        self._capacity_sent: tuple | None = None  # capacity, slots, workers' names and sizes
        self._attempts: dict[str, int] = {}  # launches tried per app (``launchFailures``)
        self._ended: dict[str, Progress] = {}  # apps' last stages, ended since last asked

    # --- contract -------------------------------------------------------------------------

    def capacity(self) -> tuple[Resources, int]:
        c = self.cluster
        return c.capacity - c.external_usage(set(self._managed)), c.driver_slots

    def workers(self) -> tuple[Worker, ...]:
        return self.cluster.pool.workers()

    def launch(self, launch: Launch) -> Handle:
        try:
            job = job_from_launch(launch, self.cluster.work_s)
        except ValueError as e:
            raise BackendError(f"{launch.app_id}: {e}") from None
        tried = self._attempts[launch.app_id] = self._attempts.get(launch.app_id, 0) + 1
        if tried <= job.launch_failures:
            raise BackendUnavailable(f"the memory cluster's master cannot be reached (launch "
                                     f"{tried} of {launch.app_id}; {LAUNCH_FAILURES}="
                                     f"{job.launch_failures})")
        sa = self.cluster.launch(job)
        self._track(launch.app_id, sa.driver_id)
        return Handle(launch.app_id, KIND, sa.driver_id, sa.launched_at)

    def stop(self, app_id: str) -> None:
        self.cluster.stop(app_id)

    def adopt(self, handle: Handle) -> bool:
        sa = self.cluster.apps.get(handle.app_id)
        if handle.kind != KIND or sa is None or sa.driver_id != handle.ref:
            return False
        if handle.app_id not in self._apps:
            self._track(handle.app_id, sa.driver_id)
        return True

    def _track(self, app_id: str, driver_id: str) -> None:
        """Report on this app from the next poll on, as on one never seen (launch order: a
        relaunch of an app still tracked keeps its place, as a dict key does)."""
        was = self._apps.get(app_id)
        order = next(self._orders) if was is None else was.order
        self._apps[app_id] = _Reported(driver_id, order)
        self._fresh.add(app_id)

    def manage(self, app_id: str, spark_app_id: str) -> None:
        self._managed.setdefault(spark_app_id, (app_id, ()))

    def steer(self, decisions: list[Decision]) -> None:
        self.cluster.steer(decisions)

    def stage_progress(self, now: float) -> dict[str, Progress]:
        out, self._ended = self._ended, {}
        for app_id in self._apps:
            sa = self.cluster.apps.get(app_id)
            if sa is not None and (p := sa.progress(now)) is not None:
                out[app_id] = p
        return out

    def poll(self, now: float) -> list[Event]:
        self.cluster.advance(now)
        events: list[Event] = []
        apps = self._apps
        look = (self._changed | self._fresh) & apps.keys()
        self._changed.clear()
        self._fresh.clear()
        for app_id in sorted(look, key=lambda a: apps[a].order):
            seen = apps[app_id]
            sa = self.cluster.apps[app_id]
            if sa.driver_id != seen.driver_id:  # relaunched through another backend: not ours
                del self._apps[app_id]
                continue
            events.extend(self._report(app_id, sa, seen))
        for sid, (app_id, last) in list(self._managed.items()):
            ext = self.cluster.externals.get(sid)
            if ext is None:
                continue
            view = () if ext.ended else tuple(Executor(e, ext.started_at)
                                              for e in ext.executor_ids)
            if view != last:
                self._managed[sid] = (app_id, view)
                events.append(ExecutorsChanged(app_id, view))
        cap, workers = self.capacity(), self.workers()
        # What is free changes with every executor: news only where the engine asks it per
        # worker (more than one worker: ``engine.placement.free_now``), not for one.
        sent = (cap, workers if len(workers) > 1 else tuple((w.name, w.size) for w in workers))
        if sent != self._capacity_sent:
            self._capacity_sent = sent
            events.append(CapacityChanged(*cap, workers))
        return events

    # --- reports --------------------------------------------------------------------------

    def _report(self, app_id: str, sa: SparkApp, seen: _Reported) -> list[Event]:
        out: list[Event] = []
        if sa.driver_up_at is not None and not seen.started:
            seen.started = True
            out.append(DriverStarted(app_id, sa.spark_app_id))
        if sa.phase is Phase.DONE:
            del self._apps[app_id]  # its executors died with it
            if (last := sa.progress(self.cluster.now)) is not None:
                self._ended[app_id] = last
            out.append(DriverExited(app_id, sa.exit_code if sa.exit_code is not None else -1))
            return out
        where = self.cluster.pool.worker_of
        executors = tuple(Executor(e.executor_id, e.started_at, idle=not e.tasks,
                                   worker=where(e.executor_id))
                          for e in sa.executors.values())
        demand = sa.demand()
        if executors != seen.executors:
            out.append(ExecutorsChanged(app_id, executors, Witness.AGENT))
        if demand != seen.demand:
            out.append(DemandChanged(app_id, demand))
        seen.executors, seen.demand = executors, demand
        return out
