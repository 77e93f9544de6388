"""The Kubernetes backend: drivers run as pods, started by real ``spark-submit --master
k8s://... --deploy-mode cluster`` and observed through the API server.

Launching: spark-submit (``submit.submit_argv``) runs through ``runner.py`` as the leader of a
new process session, output to the app's log, its exit code to ``<run_dir>/<app>.exit``. It
takes tens of seconds (a JVM) and returns once the driver pod exists
(``waitAppCompletion=false``); from then on the pod is the truth. If a pod labelled with the
app's id already exists (a launch repeated after a crash), nothing is submitted: the pod is
tracked.

Observing: two informers (``informer.Informer``) keep pods (all namespaces: foreign pods take
capacity) and nodes (matching the node selector). ``poll`` reads those caches; it never waits
on the API server. For each app, in launch order:

* ``DriverStarted(app, spark-app-selector)`` once its driver pod is Running (or has ended);
* ``ExecutorsChanged`` when its Running executor pods (``spark-role=executor``,
  ``spark-app-selector``) changed; ids from ``spark-exec-id``;
* ``DriverExited``: the pod's phase and driver container's exit code decide (Succeeded: its
  code, 0; Failed: its code, at least 1) -- spark-submit's own exit code does not tell a
  failed driver. A pod that vanished: 143 if we stopped it, else spark-submit's failure code
  (it deletes its pod when the rest of the submission fails), else the pod's last known code,
  else -1.
  spark-submit ended without a pod: its exit code, at least 1 (after POD_WAIT_S, so a pod it
  did create has reached the cache);
* then ``CapacityChanged`` when capacity changed.

Capacity: allocatable cpu/memory of the Ready, schedulable nodes the node selector picks, minus
the requests of running pods on them that the scheduler does not manage -- all but our apps'
executors and in-cluster drivers. A driver whose app the engine counts as a client-mode driver
(recorded so before every driver counted as in-cluster here) is taken off here too, since its
pod does use the nodes.

Stopping: the driver pod is deleted with ``propagationPolicy: Background`` (what
``spark-submit --kill NS:POD`` does; its executors, service and config map are owned by it);
a spark-submit still submitting gets SIGTERM and the pod, if it appears, is deleted then.

Restart: ``adopt`` finds the driver pod by its ``sessionsched.io/app-id`` label (or a
submitting spark-submit by its record in ``run_dir``); it never submits.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from ...agent.package import build_zip
from ...config import KubernetesSection
from ...engine.events import CapacityChanged, DriverExited, DriverStarted, Event, ExecutorsChanged
from ...model import Executor, Resources
from .. import driver_files, procs
from ..base import BackendError, ClusterBackend, Handle, Launch
from ..commands import redacted
from ..driver_files import DriverRecord
from ..procs import ProcessId
from ..spark_home import SparkNotFound, spark_submit
from . import pods
from .informer import Informer
from .submit import submit_argv

log = logging.getLogger("sessionsched.backend.kubernetes")

RUNNER = str(Path(__file__).parent.parent / "runner.py")
UNKNOWN_EXIT = -1
KILLED_EXIT = 143
POD_WAIT_S = 10.0  # after spark-submit ends, how long its pod may take to reach the cache
REQUEST_TIMEOUT_S = (5.0, 10.0)  # (connect, read) for single requests from the loop


@dataclass
class _Tracked:
    record: DriverRecord
    in_cluster: bool = True
    proc: ProcessId | None = None
    popen: subprocess.Popen | None = None
    external: bool = False  # told by ``manage``: report executors only
    pod_name: str | None = None
    last_code: int | None = None
    submitter_done_at: float | None = None
    started_sent: bool = False
    first_seen: dict[str, float] = field(default_factory=dict)
    reported: frozenset[str] = frozenset()
    exited: bool = False
    stop_requested: bool = False
    deleted: bool = False


def api_client(settings: KubernetesSection) -> tuple[client.ApiClient, str, dict[str, str]]:
    """(the API client, the API server URL, environment spark-submit needs to reach it)."""
    cfg = client.Configuration()
    env: dict[str, str] = {}
    try:
        if settings.api_server:
            cfg.host = settings.api_server
        elif settings.kubeconfig:
            path = os.path.abspath(os.path.expanduser(settings.kubeconfig))
            if not os.path.isfile(path):
                raise BackendError(f"cluster.kubernetes.kubeconfig: {path} does not exist")
            config.load_kube_config(path, settings.context, client_configuration=cfg)
            env["KUBECONFIG"] = path  # spark-submit's client reads the same file
        else:
            config.load_incluster_config(client_configuration=cfg)
    except (config.ConfigException, OSError) as e:
        raise BackendError(f"cluster.kubernetes: cannot configure the API client: {e}") from None
    return client.ApiClient(cfg), cfg.host.rstrip("/"), env


class KubernetesBackend(ClusterBackend):
    """Drivers as pods in ``settings.namespace`` (see the module doc). ``run_dir``: records,
    exit files, default logs and the agent zip; a backend created with the same ``run_dir``
    after a restart finds the submitters again (the pods are found by label)."""

    drivers_in_cluster = True  # spark-submit --deploy-mode cluster: a driver pod, Python too

    def __init__(self, settings: KubernetesSection, run_dir: str | Path, driver_slots: int = 4,
                 *, sync_timeout_s: float = 10.0, stop_grace_s: float = 10.0) -> None:
        for path in (settings.driver_pod_template, settings.executor_pod_template):
            if path and not os.path.isfile(path):
                raise BackendError(f"cluster.kubernetes: pod template {path} does not exist")
        self.settings = settings
        self.namespace = settings.namespace
        self.driver_slots = driver_slots
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.sync_timeout_s = sync_timeout_s
        self.stop_grace_s = stop_grace_s
        self.api, host, self._submit_env = api_client(settings)
        self.master = f"k8s://{host}"
        self.core = client.CoreV1Api(self.api)
        selector = ",".join(f"{k}={v}" for k, v in settings.node_selector.items())
        common = {"watch_timeout_s": settings.watch_timeout_s,
                  "max_failures": settings.max_failures}
        self.pods = Informer("pods", self.core.list_pod_for_all_namespaces, **common).start()
        self.nodes = Informer("nodes", self.core.list_node, label_selector=selector or None,
                              **common).start()
        self._apps: dict[str, _Tracked] = {}
        self._external_spark: set[str] = set()
        self._kill_at: dict[str, float] = {}
        self._capacity_sent: tuple[Resources, int] | None = None
        self._agent_zip: str | None = None

    # --- contract ---------------------------------------------------------------------------

    def capacity(self) -> tuple[Resources, int]:
        self._ready()
        cap = (self._free(), self.driver_slots)
        self._capacity_sent = cap
        return cap

    def launch(self, launch: Launch) -> Handle:
        current = self._apps.get(launch.app_id)
        if current is not None and not current.exited:
            raise BackendError(f"{launch.app_id} has a driver already")
        self._ready()
        existing = self._driver_pod(launch.app_id)
        if existing is not None:  # launched before a crash: never submit twice
            log.warning("%s: a driver pod exists already (%s); tracking it", launch.app_id,
                        existing["metadata"]["name"])
            self._track_pod(launch.app_id, existing, time.time())
            return Handle(launch.app_id, "cluster-driver", self.namespace, time.time())
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
        launched_at = time.time()
        try:
            with open(log_path, "ab") as out:
                out.write(f"sessionsched: launching {launch.app_id}: "
                          f"{' '.join(redacted(cmd))}\n".encode())
                out.flush()
                popen = subprocess.Popen(
                    [sys.executable, RUNNER, "--exit-file", str(exit_path), "--", *cmd],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    cwd=launch.cwd, env=env, start_new_session=True)
        except OSError as e:
            raise BackendError(f"{launch.app_id}: cannot start spark-submit: {e}") from None
        try:
            proc = procs.identify(popen.pid)
        except ProcessLookupError:
            proc = ProcessId(popen.pid, 0)
        record = DriverRecord(launch.app_id, "process", launched_at, process=str(proc),
                              log_path=str(log_path), exit_path=str(exit_path), submitter=True)
        driver_files.save(self.run_dir, record)
        self._apps[launch.app_id] = _Tracked(record, launch.in_cluster, proc, popen)
        return Handle(launch.app_id, "cluster-driver", self.namespace, launched_at)

    def stop(self, app_id: str) -> None:
        t = self._apps.get(app_id)
        if t is None or t.exited or t.external:
            return
        t.stop_requested = True
        if t.pod_name is not None:
            self._delete_pod(t)
        elif t.proc is not None and self._submitting(t):
            if procs.signal_group(t.proc, signal.SIGTERM):
                self._kill_at[app_id] = time.monotonic() + self.stop_grace_s

    def adopt(self, handle: Handle) -> bool:
        current = self._apps.get(handle.app_id)
        if current is not None:
            return not current.exited
        try:
            found = self.core.list_namespaced_pod(
                self.namespace, label_selector=f"{pods.LABEL_APP}={handle.app_id},"
                "spark-role=driver", _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
            items = sorted(_json(found).get("items") or [],
                           key=lambda p: p["metadata"].get("creationTimestamp") or "")
        except (ApiException, HTTPError, OSError, ValueError) as e:
            raise BackendError(f"cannot ask the Kubernetes API server: {e}") from None
        if items:
            self._track_pod(handle.app_id, items[-1], handle.started_at)
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
            self._apps[handle.app_id] = _Tracked(record, True, proc)
            return True
        return False

    def manage(self, app_id: str, spark_app_id: str) -> None:
        if app_id in self._apps:
            return
        record = DriverRecord(app_id, "external", time.time(), spark_app_id=spark_app_id)
        self._apps[app_id] = _Tracked(record, external=True)
        self._external_spark.add(spark_app_id)

    def poll(self, now: float) -> list[Event]:
        self._ready()
        self._escalate_stops()
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
                events.extend(self._observe(t, drivers.get(t.record.app_id), executors, now))
        cap = (self._free(), self.driver_slots)
        if cap != self._capacity_sent:
            self._capacity_sent = cap
            events.append(CapacityChanged(*cap))
        return events

    def close(self) -> None:
        """Finish pending submitter stops (bounded by their grace), stop the informers. Driver
        pods keep running: they are adopted at the next start."""
        try:
            for app_id, deadline in list(self._kill_at.items()):
                t = self._apps[app_id]
                if t.proc is not None:
                    procs.finish_stop(t.proc, max(deadline - time.monotonic(), 0.0))
                if t.popen is not None:
                    t.popen.poll()
            self._kill_at.clear()
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
        lb = pods.labels(pod)
        record = DriverRecord(app_id, "cluster-driver", launched_at,
                              driver_id=f"{self.namespace}:{pod['metadata']['name']}",
                              spark_app_id=lb.get("spark-app-selector"))
        self._apps[app_id] = _Tracked(record, lb.get(pods.LABEL_IN_CLUSTER) != "false",
                                      pod_name=pod["metadata"]["name"])

    def _submitting(self, t: _Tracked) -> bool:
        if t.popen is not None and t.popen.poll() is not None:
            return False
        return t.proc is not None and procs.is_running(t.proc)

    def _delete_pod(self, t: _Tracked) -> None:
        if t.deleted:
            return
        try:
            self.core.delete_namespaced_pod(
                t.pod_name, self.namespace, body=client.V1DeleteOptions(
                    propagation_policy="Background"), _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as e:
            if e.status != 404:
                raise BackendError(f"cannot delete driver pod {t.pod_name}: {e.status} "
                                   f"{e.reason}") from None
        except (HTTPError, OSError) as e:
            raise BackendError(f"cannot delete driver pod {t.pod_name}: {e}") from None
        t.deleted = True

    def _observe(self, t: _Tracked, pod: dict | None, executors: dict[str, list[dict]],
                 now: float) -> list[Event]:
        app_id, rec = t.record.app_id, t.record
        if t.external:
            changed = self._executors(t, executors.get(rec.spark_app_id or "", []), now)
            return [changed] if changed is not None else []
        out: list[Event] = []
        if pod is not None:
            if t.pod_name is None:
                t.pod_name = pod["metadata"]["name"]
                rec.driver_id = f"{self.namespace}:{t.pod_name}"
                rec.spark_app_id = pods.labels(pod).get("spark-app-selector")
                t.in_cluster = pods.labels(pod).get(pods.LABEL_IN_CLUSTER) != "false"
                self._save(rec)
            if t.stop_requested and not t.deleted:
                try:
                    self._delete_pod(t)
                except BackendError as e:
                    log.warning("%s: %s (again at the next poll)", app_id, e)
            phase = pods.phase(pod)
            if phase != "Pending" and not t.started_sent:
                t.started_sent = True
                out.append(DriverStarted(app_id, rec.spark_app_id))
            changed = self._executors(t, executors.get(rec.spark_app_id or "", []), now)
            if changed is not None:
                out.append(changed)
            code = pods.driver_exit(pod)
            t.last_code = pods.exit_code(pod)
            if code is not None:
                out.extend(self._ended(t, code))
            return out
        if t.pod_name is not None:  # it was there and is gone
            if t.reported:
                t.reported = frozenset()
                out.append(ExecutorsChanged(app_id, ()))
            if t.proc is not None and self._submitting(t):
                return out  # spark-submit deletes its pod when it fails: its code will say
            submitted = driver_files.read_exit_code(rec.exit_path) if t.proc is not None else None
            if t.stop_requested:
                code = KILLED_EXIT
            elif submitted:
                code = submitted
            else:
                code = t.last_code if t.last_code is not None else UNKNOWN_EXIT
            return out + self._ended(t, code)
        if t.proc is None or self._submitting(t):
            return out
        if t.submitter_done_at is None:
            t.submitter_done_at = time.monotonic()
        code = driver_files.read_exit_code(rec.exit_path)
        if code == 0 and time.monotonic() - t.submitter_done_at < POD_WAIT_S:
            return out  # its pod may not have reached the cache yet
        if t.stop_requested:
            return self._ended(t, KILLED_EXIT)
        return self._ended(t, code or 1)

    def _ended(self, t: _Tracked, code: int) -> list[Event]:
        t.exited = True
        self._kill_at.pop(t.record.app_id, None)
        if t.popen is not None:
            t.popen.poll()
        return [DriverExited(t.record.app_id, code)]

    def _executors(self, t: _Tracked, running: list[dict], now: float) -> ExecutorsChanged | None:
        current = {pods.labels(p).get("spark-exec-id") or p["metadata"]["name"] for p in running}
        for eid in current - t.first_seen.keys():
            t.first_seen[eid] = now
        for eid in t.first_seen.keys() - current:
            del t.first_seen[eid]
        if frozenset(current) == t.reported:
            return None
        t.reported = frozenset(current)
        executors = sorted((Executor(eid, started_at=t.first_seen[eid]) for eid in current),
                           key=lambda e: (e.started_at, _numeric(e.executor_id)))
        return ExecutorsChanged(t.record.app_id, tuple(executors))

    def _free(self) -> Resources:
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

        return pods.free_capacity(self.nodes.snapshot(), self.pods.snapshot(), theirs)

    def _save(self, record: DriverRecord) -> None:
        try:
            driver_files.save(self.run_dir, record)
        except OSError as e:
            log.warning("cannot update %s's record in %s: %s", record.app_id, self.run_dir, e)

    def _escalate_stops(self) -> None:
        now = time.monotonic()
        for app_id, deadline in list(self._kill_at.items()):
            t = self._apps[app_id]
            if t.popen is not None:
                t.popen.poll()
            if t.proc is None or not procs.group_alive(t.proc.pid):
                del self._kill_at[app_id]
            elif now >= deadline:
                procs.signal_group(t.proc, signal.SIGKILL)
                del self._kill_at[app_id]


def _json(resp) -> dict:
    return json.loads(resp.data)


def _newer(a: dict, b: dict) -> bool:
    return (a["metadata"].get("creationTimestamp") or "") > (
        b["metadata"].get("creationTimestamp") or "")


def _numeric(executor_id: str) -> tuple[int, str]:
    return (int(executor_id), "") if executor_id.isdigit() else (1 << 62, executor_id)
