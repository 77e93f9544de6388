"""The Kubernetes backend: drivers run as pods, started by real ``spark-submit --master
k8s://... --deploy-mode cluster`` and observed through the API server.

Launching: spark-submit (``submit.submit_argv``) runs through ``runner.py`` as the leader of a
new process session, output to the app's log, its exit code to ``<run_dir>/<app>.exit``. It
takes tens of seconds (a JVM) and returns once the driver pod exists
(``waitAppCompletion=false``); from then on the pod is the truth. If a pod labelled with the
app's id already exists (a launch repeated after a crash), nothing is submitted: the pod is
tracked. Under ``node_sort: binpacking`` the driver pod is pinned to the fullest node that
holds it now (``placing``); under ``fair`` the kube scheduler chooses, as before.

Observing: two informers (``informer.Informer``) keep pods (all namespaces: foreign pods take
capacity) and nodes (matching the node selector). ``poll`` reads those caches; it never waits
on the API server. For each app, in launch order, what its driver pod and executor pods say
(``driver.Tracked.observe``: DriverStarted, ExecutorsChanged, DriverExited -- the pod's phase
and driver container decide, spark-submit's own exit code does not tell a failed driver);
then ``CapacityChanged`` when capacity or the nodes' sizes changed. It names the nodes one by
one (``pods.node_workers``: a node's allocatable less what pods not ours request on it; free:
less our pods' requests too): the engine decides fit per node.

Capacity: allocatable cpu/memory of the Ready, schedulable nodes the node selector picks, minus
the requests of running pods on them that the scheduler does not manage -- all but our apps'
executors and in-cluster drivers. A driver whose app the engine counts as a client-mode driver
(recorded so before every driver counted as in-cluster here) is taken off here too, since its
pod does use the nodes.

Stopping: the driver pod is deleted (``apiserver.delete_pod``, as ``spark-submit --kill
NS:POD`` does); a spark-submit still submitting gets SIGTERM (SIGKILL after ``stop_grace_s``)
and the pod, if it appears, is deleted then.

Restart: ``adopt`` finds the driver pod by its ``sessionsched.io/app-id`` label (or a
submitting spark-submit by its record in ``run_dir``); it never submits.

Time: ``poll`` uses the ``now`` it is given; everything else reads the injected ``clock``
(epoch seconds; the wall clock by default). Nothing here reads the clock itself.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from kubernetes import client

from ...agent.package import build_zip
from ...config import KubernetesSection
from ...engine.events import CapacityChanged, Event
from ...model import Resources, Worker
from .. import driver_files, procs, spawn
from ..base import BackendError, ClusterBackend, Handle, Launch
from ..driver_files import DriverRecord
from ..procs import ProcessId
from ..spark_home import SparkNotFound, spark_submit
from . import apiserver, placing, pods
from .driver import Tracked
from .informer import Informer
from .submit import submit_argv

log = logging.getLogger("sessionsched.backend.kubernetes")


class KubernetesBackend(ClusterBackend):
    """Drivers as pods in ``settings.namespace`` (see the module doc). ``run_dir``: records,
    exit files, default logs and the agent zip; a backend created with the same ``run_dir``
    after a restart finds the submitters again (the pods are found by label)."""

    drivers_in_cluster = True  # spark-submit --deploy-mode cluster: a driver pod, Python too

    def __init__(self, settings: KubernetesSection, run_dir: str | Path,
                 driver_slots: int | None = 4,
                 *, sync_timeout_s: float = 10.0, stop_grace_s: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        for path in (settings.driver_pod_template, settings.executor_pod_template):
            if path and not os.path.isfile(path):
                raise BackendError(f"cluster.kubernetes: pod template {path} does not exist")
        self.settings = settings
        self.namespace = settings.namespace
        self.driver_slots = driver_slots
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.sync_timeout_s = sync_timeout_s
        self.clock = clock
        self.api, host, self._submit_env = apiserver.api_client(settings)
        self.master = f"k8s://{host}"
        self.core = client.CoreV1Api(self.api)
        selector = ",".join(f"{k}={v}" for k, v in settings.node_selector.items())
        common = {"watch_timeout_s": settings.watch_timeout_s,
                  "max_failures": settings.max_failures}
        self.pods = Informer("pods", self.core.list_pod_for_all_namespaces, **common).start()
        self.nodes = Informer("nodes", self.core.list_node, label_selector=selector or None,
                              **common).start()
        self._apps: dict[str, Tracked] = {}
        self._external_spark: set[str] = set()
        self._stops = spawn.GraceStops(stop_grace_s)
        self._capacity_sent: tuple | None = None  # capacity, slots, nodes' names and sizes
        self._workers: tuple[Worker, ...] = ()  # the usable nodes, as last read
        self._agent_zip: str | None = None

    # --- contract ---------------------------------------------------------------------------

    def capacity(self) -> tuple[Resources, int]:
        self._ready()
        cap = (self._free(), self.driver_slots)
        self._workers = pods.node_workers(self.nodes.snapshot(), self.pods.snapshot(),
                                          self._theirs())
        self._capacity_sent = (cap, _sizes(self._workers))
        return cap

    def workers(self) -> tuple[Worker, ...]:
        return self._workers

    def launch(self, launch: Launch) -> Handle:
        current = self._apps.get(launch.app_id)
        if current is not None and not current.exited:
            raise BackendError(f"{launch.app_id} has a driver already")
        self._ready()
        existing = self._driver_pod(launch.app_id)
        if existing is not None:  # launched before a crash: never submit twice
            log.warning("%s: a driver pod exists already (%s); tracking it", launch.app_id,
                        existing["metadata"]["name"])
            now = self.clock()
            self._track_pod(launch.app_id, existing, now)
            return Handle(launch.app_id, "cluster-driver", self.namespace, now)
        launch = placing.pinned(launch, self.nodes.snapshot(), self.pods.snapshot(),
                                self._theirs(), self.settings.driver_node_selector)
        try:
            submit = self.settings.spark_submit or spark_submit()
            cmd = submit_argv(submit, self.master, launch, self.settings, self._agent())
        except (SparkNotFound, ValueError, OSError) as e:
            raise BackendError(f"{launch.app_id}: {e}") from None
        log_path = Path(launch.log_path or self.run_dir / f"{launch.app_id}.log")
        exit_path = self.run_dir / f"{launch.app_id}.exit"
        exit_path.unlink(missing_ok=True)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self._submit_env}
        launched_at = self.clock()
        popen, proc = spawn.start(launch.app_id, cmd, log_path, exit_path, launch.cwd, env)
        record = DriverRecord(launch.app_id, "process", launched_at, process=str(proc),
                              log_path=str(log_path), exit_path=str(exit_path), submitter=True)
        driver_files.save(self.run_dir, record)
        self._apps[launch.app_id] = Tracked(record, launch.in_cluster, proc, popen)
        return Handle(launch.app_id, "cluster-driver", self.namespace, launched_at)

    def stop(self, app_id: str) -> None:
        t = self._apps.get(app_id)
        if t is None or t.exited or t.external:
            return
        t.stop_requested = True
        if t.pod_name is not None:
            self._delete_pod(t)
        elif t.proc is not None and t.submitting():
            self._stops.begin(app_id, t.proc, t.popen, self.clock())

    def adopt(self, handle: Handle) -> bool:
        current = self._apps.get(handle.app_id)
        if current is not None:
            return not current.exited
        found = apiserver.driver_pods(self.core, self.namespace, handle.app_id)
        if found:
            self._track_pod(handle.app_id, found[-1], handle.started_at)
            return True
        record = driver_files.load(self.run_dir, handle.app_id)
        if record is None or not record.process:
            return False
        try:
            proc = ProcessId.parse(record.process)
        except ValueError:
            return False
        if procs.is_running(proc) or (driver_files.read_exit_code(record.exit_path) or 0) != 0:
            # still submitting, or it failed while nobody watched: poll reports on it
            self._apps[handle.app_id] = Tracked(record, True, proc)
            return True
        return False

    def manage(self, app_id: str, spark_app_id: str) -> None:
        if app_id in self._apps:
            return
        record = DriverRecord(app_id, "external", self.clock(), spark_app_id=spark_app_id)
        self._apps[app_id] = Tracked(record, external=True)
        self._external_spark.add(spark_app_id)

    def poll(self, now: float) -> list[Event]:
        self._ready()
        self._stops.escalate(now)
        snapshot = self.pods.snapshot()
        drivers: dict[str, dict] = {}
        executors: dict[str, list[dict]] = {}
        for pod in snapshot:
            lb = pods.labels(pod)
            if pods.is_driver(pod) and pod["metadata"].get("namespace") == self.namespace:
                app = lb.get(pods.LABEL_APP)
                if app in self._apps and (app not in drivers or _newer(pod, drivers[app])):
                    drivers[app] = pod
            elif pods.is_executor(pod) and pods.phase(pod) == "Running" \
                    and not pods.deleting(pod):
                executors.setdefault(lb.get("spark-app-selector", ""), []).append(pod)
        events: list[Event] = []
        for t in list(self._apps.values()):
            if not t.exited:
                events.extend(self._observe(t, drivers.get(t.app_id), executors, now))
        cap = (self._free(), self.driver_slots)
        self._workers = pods.node_workers(self.nodes.snapshot(), self.pods.snapshot(),
                                          self._theirs())
        sent = (cap, _sizes(self._workers))
        if sent != self._capacity_sent:  # what is free changes with every pod: not news
            self._capacity_sent = sent
            events.append(CapacityChanged(*cap, self._workers))
        return events

    def close(self) -> None:
        """Finish pending submitter stops (bounded by their grace), stop the informers. Driver
        pods keep running: they are adopted at the next start."""
        try:
            self._stops.finish(self.clock)
        finally:
            self.pods.stop()
            self.nodes.stop()
            self.api.close()

    # --- internals ----------------------------------------------------------------------------

    def _ready(self) -> None:
        for inf in (self.pods, self.nodes):
            if not inf.wait_synced(self.sync_timeout_s) or not inf.healthy:
                why = inf.error or "no answer yet"
                raise BackendError(f"Kubernetes API server {self.master[6:]} unreachable "
                                   f"({inf.name}: {why})")

    def _agent(self) -> str:
        if self._agent_zip is None:
            self._agent_zip = build_zip(str(self.run_dir / "sessionsched-agent.zip"))
        return self._agent_zip

    def _driver_pod(self, app_id: str) -> dict | None:
        found = [p for p in self.pods.snapshot()
                 if pods.is_driver(p) and p["metadata"].get("namespace") == self.namespace
                 and pods.labels(p).get(pods.LABEL_APP) == app_id]
        return max(found, key=lambda p: p["metadata"].get("creationTimestamp") or "",
                   default=None)

    def _track_pod(self, app_id: str, pod: dict, launched_at: float) -> None:
        t = Tracked(DriverRecord(app_id, "cluster-driver", launched_at))
        t.found_pod(pod, self.namespace)
        self._apps[app_id] = t

    def _delete_pod(self, t: Tracked) -> None:
        if not t.deleted:
            apiserver.delete_pod(self.core, self.namespace, t.pod_name)
            t.deleted = True

    def _observe(self, t: Tracked, pod: dict | None, executors: dict[str, list[dict]],
                 now: float) -> list[Event]:
        if pod is not None and not t.external:
            if t.found_pod(pod, self.namespace):
                self._save(t.record)
            if t.stop_requested and not t.deleted:
                try:
                    self._delete_pod(t)
                except BackendError as e:
                    log.warning("%s: %s (again at the next poll)", t.app_id, e)
        events = t.observe(pod, executors, now)
        if t.exited:
            self._stops.forget(t.app_id)
        return events

    def _free(self) -> Resources:
        return pods.free_capacity(self.nodes.snapshot(), self.pods.snapshot(), self._theirs())

    def _theirs(self):
        """Whether a pod's requests are usage the scheduler does not manage."""
        ours_spark = self._external_spark | {
            t.record.spark_app_id for t in self._apps.values() if t.record.spark_app_id}
        in_cluster = {app for app, t in self._apps.items() if t.in_cluster}

        def theirs(pod: dict) -> bool:
            lb = pods.labels(pod)
            app = lb.get(pods.LABEL_APP)
            if pods.is_executor(pod):
                return app not in self._apps and lb.get("spark-app-selector") not in ours_spark
            if pods.is_driver(pod) and app in self._apps:
                return app not in in_cluster  # the engine counts it as a driver slot
            return True

        return theirs

    def _save(self, record: DriverRecord) -> None:
        try:
            driver_files.save(self.run_dir, record)
        except OSError as e:
            log.warning("cannot update %s's record in %s: %s", record.app_id, self.run_dir, e)


def _newer(a: dict, b: dict) -> bool:
    return (a["metadata"].get("creationTimestamp") or "") > (
        b["metadata"].get("creationTimestamp") or "")


def _sizes(workers: tuple[Worker, ...]) -> tuple:
    return tuple((w.name, w.size) for w in workers)
