"""One app as the Kubernetes backend follows it, from its spark-submit to its driver pod's end,
and what each poll's pods say about it (``Tracked.observe``).

* While the driver pod is in the informer's cache: DriverStarted (with ``spark-app-selector``)
  once the pod is Running (or has ended); its Running executor pods (ids from
  ``spark-exec-id``); DriverExited from the pod's phase and driver container
  (``pods.driver_exit``: Succeeded gives its code, 0; Failed its code, at least 1).
* A pod that was there and vanished: 143 if we stopped it, else spark-submit's failure code
  (it deletes its pod when the rest of the submission fails), else the pod's last known code,
  else -1.
* spark-submit ended without a pod: its exit code, at least 1 -- after POD_WAIT_S, so that a
  pod it did create has reached the cache.
* An app told about by ``manage`` (``external``): its executors only.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from ...engine.events import DriverExited, DriverStarted, Event
from .. import driver_files, procs, spawn
from ..driver_files import DriverRecord
from ..executors_seen import ExecutorsSeen
from ..procs import ProcessId
from . import pods

UNKNOWN_EXIT = -1
KILLED_EXIT = 143
POD_WAIT_S = 10.0  # after spark-submit ends, how long its pod may take to reach the cache


@dataclass
class Tracked:
    record: DriverRecord
    in_cluster: bool = True
    proc: ProcessId | None = None  # spark-submit, while this backend knows of it
    popen: subprocess.Popen | None = None
    external: bool = False  # told by ``manage``: report executors only
    pod_name: str | None = None
    last_code: int | None = None
    submitter_done_at: float | None = None
    started_sent: bool = False
    seen: ExecutorsSeen = field(default_factory=ExecutorsSeen)
    exited: bool = False
    stop_requested: bool = False
    deleted: bool = False

    @property
    def app_id(self) -> str:
        return self.record.app_id

    def submitting(self) -> bool:
        """spark-submit still runs."""
        if self.popen is not None and self.popen.poll() is not None:
            return False
        return self.proc is not None and procs.is_running(self.proc)

    def found_pod(self, pod: dict, namespace: str) -> bool:
        """Take note of its driver pod when first seen; True when the record changed."""
        if self.pod_name is not None:
            return False
        lb = pods.labels(pod)
        self.pod_name = pod["metadata"]["name"]
        self.record.driver_id = f"{namespace}:{self.pod_name}"
        self.record.spark_app_id = lb.get("spark-app-selector")
        self.in_cluster = lb.get(pods.LABEL_IN_CLUSTER) != "false"
        return True

    def observe(self, pod: dict | None, executors: dict[str, list[dict]],
                now: float) -> list[Event]:
        """What changed, given its driver pod (None: not in the cache) and the Running
        executor pods by Spark application id."""
        running = executors.get(self.record.spark_app_id or "", [])
        if self.external:
            changed = self._executors(running, now)
            return [changed] if changed is not None else []
        if pod is not None:
            return self._with_pod(pod, running, now)
        if self.pod_name is not None:
            return self._pod_gone()
        return self._without_pod(now)

    def _with_pod(self, pod: dict, running: list[dict], now: float) -> list[Event]:
        out: list[Event] = []
        if pods.phase(pod) != "Pending" and not self.started_sent:
            self.started_sent = True
            out.append(DriverStarted(self.app_id, self.record.spark_app_id))
        changed = self._executors(running, now)
        if changed is not None:
            out.append(changed)
        code = pods.driver_exit(pod)
        self.last_code = pods.exit_code(pod)
        if code is not None:
            out.extend(self._ended(code))
        return out

    def _pod_gone(self) -> list[Event]:
        out: list[Event] = []
        gone = self.seen.gone(self.app_id)
        if gone is not None:
            out.append(gone)
        if self.proc is not None and self.submitting():
            return out  # spark-submit deletes its pod when it fails: its code will say
        submitted = (driver_files.read_exit_code(self.record.exit_path)
                     if self.proc is not None else None)
        if self.stop_requested:
            code = KILLED_EXIT
        elif submitted:
            code = submitted
        else:
            code = self.last_code if self.last_code is not None else UNKNOWN_EXIT
        return out + self._ended(code)

    def _without_pod(self, now: float) -> list[Event]:
        if self.proc is None or self.submitting():
            return []
        if self.submitter_done_at is None:
            self.submitter_done_at = now
        code = driver_files.read_exit_code(self.record.exit_path)
        if code == 0 and now - self.submitter_done_at < POD_WAIT_S:
            return []  # its pod may not have reached the cache yet
        if self.stop_requested:
            return self._ended(KILLED_EXIT)
        return self._ended(code or 1)

    def _ended(self, code: int) -> list[Event]:
        self.exited = True
        spawn.reap(self.popen)
        return [DriverExited(self.app_id, code)]

    def _executors(self, running: list[dict], now: float) -> Event | None:
        ids = [pods.labels(p).get("spark-exec-id") or p["metadata"]["name"] for p in running]
        nodes = {i: (p.get("spec") or {}).get("nodeName") or "" for i, p in zip(ids, running,
                                                                                strict=True)}
        return self.seen.update(self.app_id, ids, now, nodes)
