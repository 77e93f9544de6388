"""A real Spark standalone cluster on this machine, from pyspark's bundled Spark.

``LocalCluster(dir, workers, cores, memory, ...)``: ``start()`` runs one Master and N
Workers (``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``) bound
to 127.0.0.1, each the leader of its own process session (so they outlive the command that
started them, and a Worker's executors and cluster-mode drivers share its process group);
``stop()`` stops exactly those processes; ``status()`` reads the master's JSON.

What the directory holds: ``cluster.json`` (URLs, options, and each process as PID plus start
time), ``master.pid`` / ``worker-N.pid`` (the PID alone, for humans and scripts),
``*.log`` (each process's output), ``*.conf`` (the properties files), ``worker-N/`` (the
workers' work directories: executor and driver logs).

Choices:
* The master's REST submission server is on (cluster deploy mode submissions are forwarded
  to it) on ``rest_port`` (default: master port + 1), never Spark's default 6066: that is
  sessionsched's own port.
* ``spark.port.maxRetries=0`` for the master: a busy port is an error, not a silent move to
  the next port (the URLs we print would be wrong).
* Workers take free ports chosen by the OS (RPC and web UI), or ``worker_ports`` (two per
  worker, RPC then web UI: callers that must stay in a port range); their addresses are in the
  master's JSON. Workers may advertise more cores than the machine has.
* Workers keep the last 20 finished executors and drivers in their JSON (Spark keeps
  1000, each with its full launch command): the standalone backend reads every worker's
  JSON every second.
* ``recovery``: the master keeps its workers, applications and drivers in ``recovery/``
  (Spark's ``spark.deploy.recoveryMode=FILESYSTEM``), so a master started again
  (``start_master``) takes back what was running; without it a restarted master knows nothing
  and tells the workers to kill the executors and drivers they report.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from . import procs
from .base import BackendError
from .clusterview import AppInfo, DriverInfo, WorkerInfo
from .master import MasterClient
from .ports import free_port, port_free
from .procs import ProcessId
from .spark_home import SparkNotFound, spark_class, spark_home

DEFAULT_DIR = Path(".sessionsched") / "cluster"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_MEMORY = re.compile(r"[1-9][0-9]*[mMgGtT]")


class ClusterError(Exception):
    """The local cluster could not be started, stopped or read; ``str()`` is one line."""


@dataclass(frozen=True)
class ProcessInfo:
    role: str  # "master", "worker-1", ...
    pid: int
    running: bool


@dataclass(frozen=True)
class ClusterStatus:
    master_url: str
    master_ui: str
    rest_url: str
    processes: tuple[ProcessInfo, ...]
    reachable: bool
    error: str | None = None
    workers: tuple[WorkerInfo, ...] = ()
    apps: tuple[AppInfo, ...] = ()
    drivers: tuple[DriverInfo, ...] = ()

    def as_json(self) -> dict:
        return asdict(self)


class LocalCluster:
    """One local standalone cluster, recorded in ``directory``.

    Ports left as None are chosen free at ``start()``. ``start_timeout_s`` bounds the wait for
    the master and all workers to be ALIVE.
    """

    def __init__(
        self,
        directory: str | Path = DEFAULT_DIR,
        workers: int = 1,
        cores: int = 2,
        memory: str = "2g",
        port: int | None = None,
        ui_port: int | None = None,
        rest_port: int | None = None,
        host: str = "127.0.0.1",
        start_timeout_s: float = 120.0,
        worker_ports: Sequence[int] = (),
        recovery: bool = False,
    ):
        if workers < 1:
            raise ClusterError(f"workers {workers}: expected at least 1")
        if cores < 1:
            raise ClusterError(f"cores {cores}: expected at least 1")
        if not _MEMORY.fullmatch(memory):
            raise ClusterError(f"memory {memory!r}: expected a size like 512m or 4g")
        for name, p in (("port", port), ("ui port", ui_port), ("rest port", rest_port)):
            if p is not None and not 1 <= p <= 65535:
                raise ClusterError(f"{name} {p}: expected 1..65535")
        if worker_ports and len(worker_ports) != 2 * workers:
            raise ClusterError(f"worker ports {list(worker_ports)}: expected two per worker")
        self.worker_ports = tuple(worker_ports)
        self.directory = Path(directory).resolve()
        self.workers, self.cores, self.memory = workers, cores, memory
        self.port, self.ui_port, self.rest_port = port, ui_port, rest_port
        self.host = host
        self.recovery = recovery
        self.start_timeout_s = start_timeout_s
        self._procs: dict[str, ProcessId] = {}
        self._popens: list[subprocess.Popen] = []

    # --- URLs -------------------------------------------------------------------------------

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def master_ui(self) -> str:
        return f"http://{self.host}:{self.ui_port}"

    @property
    def rest_url(self) -> str:
        return f"http://{self.host}:{self.rest_port}"

    @property
    def state_file(self) -> Path:
        return self.directory / "cluster.json"

    # --- loading what ``start`` recorded ----------------------------------------------------

    @classmethod
    def load(cls, directory: str | Path = DEFAULT_DIR) -> LocalCluster:
        """The cluster recorded in ``directory``. Raises ClusterError if there is none."""
        path = Path(directory).resolve() / "cluster.json"
        try:
            data = json.loads(path.read_text())
            cluster = cls(path.parent, data["workers"], data["cores"], data["memory"],
                          data["port"], data["ui_port"], data["rest_port"], data["host"],
                          recovery=data.get("recovery", False))
            cluster._procs = {role: ProcessId.parse(ref) for role, ref in data["procs"].items()}
        except FileNotFoundError:
            raise ClusterError(
                f"no local cluster recorded in {path.parent} "
                "(start one with `sessionsched cluster up`)"
            ) from None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ClusterError(f"cannot read {path}: {e}") from None
        return cluster

    def _save(self) -> None:
        data = {
            "workers": self.workers, "cores": self.cores, "memory": self.memory,
            "port": self.port, "ui_port": self.ui_port, "rest_port": self.rest_port,
            "host": self.host, "recovery": self.recovery, "master_url": self.master_url,
            "master_ui": self.master_ui, "rest_url": self.rest_url,
            "procs": {role: str(p) for role, p in self._procs.items()},
        }
        tmp = self.state_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.state_file)
        for role, p in self._procs.items():
            (self.directory / f"{role}.pid").write_text(f"{p.pid}\n")

    def process(self, role: str) -> ProcessId:
        """The recorded process of ``role`` ("master", "worker-1", ...), for a caller that
        signals one itself (the fault tests kill a worker or the master). KeyError if none."""
        return self._procs[role]

    def running_processes(self) -> list[str]:
        """Roles of the recorded processes that still run (same PID and start time)."""
        return [role for role, p in self._procs.items() if procs.is_running(p)]

    # --- start ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the master and the workers; return once all workers are ALIVE.
        On any failure everything started is stopped and ClusterError says why."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._refuse_if_running()
        try:
            home = spark_home()
        except SparkNotFound as e:
            raise ClusterError(str(e)) from None
        self._choose_ports()
        env = self._env(home)
        worker_conf = self._write_conf("worker.conf", {
            "spark.worker.ui.retainedExecutors": "20",
            "spark.worker.ui.retainedDrivers": "20",
        })
        deadline = time.monotonic() + self.start_timeout_s
        try:
            self._spawn_master(home, env)
            client = MasterClient(self.master_ui, timeout_s=2.0)
            try:
                self._wait(client, deadline, lambda view: True, "the master to answer")
                for i in range(1, self.workers + 1):
                    work_dir = self.directory / f"worker-{i}"
                    work_dir.mkdir(exist_ok=True)
                    rpc, ui = self.worker_ports[2 * i - 2:2 * i] or (0, 0)
                    self._spawn(f"worker-{i}", [
                        spark_class(home), WORKER_CLASS, "--host", self.host, "--port", str(rpc),
                        "--webui-port", str(ui), "--cores", str(self.cores), "--memory",
                        self.memory, "--work-dir", str(work_dir), "--properties-file",
                        str(worker_conf), self.master_url], env)
                self._wait(client, deadline,
                           lambda view: len(view.alive_workers()) >= self.workers,
                           f"{self.workers} worker(s) to be ALIVE")
            finally:
                client.close()
        except BaseException:
            self.stop()
            raise

    def start_master(self) -> None:
        """Start the master again, on its ports, after it died or was killed (the workers run
        on and register with it again); return once it answers. With ``recovery`` it takes back
        the workers, applications and drivers it had."""
        if procs.is_running(self._procs["master"]):
            raise ClusterError(f"the master of {self.directory} is still running")
        try:
            home = spark_home()
        except SparkNotFound as e:
            raise ClusterError(str(e)) from None
        self._spawn_master(home, self._env(home))
        client = MasterClient(self.master_ui, timeout_s=2.0)
        try:
            self._wait(client, time.monotonic() + self.start_timeout_s, lambda view: True,
                       "the master to answer")
        finally:
            client.close()

    def _env(self, home: Path) -> dict[str, str]:
        return {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": self.host,
                "SPARK_MASTER_HOST": self.host}

    def _spawn_master(self, home: Path, env: dict[str, str]) -> None:
        props = {"spark.master.rest.enabled": "true",
                 "spark.master.rest.port": str(self.rest_port),
                 "spark.port.maxRetries": "0"}
        if self.recovery:
            (self.directory / "recovery").mkdir(exist_ok=True)
            props |= {"spark.deploy.recoveryMode": "FILESYSTEM",
                      "spark.deploy.recoveryDirectory": str(self.directory / "recovery")}
        conf = self._write_conf("master.conf", props)
        self._spawn("master", [spark_class(home), MASTER_CLASS, "--host", self.host,
                               "--port", str(self.port), "--webui-port", str(self.ui_port),
                               "--properties-file", str(conf)], env)

    def _refuse_if_running(self) -> None:
        try:
            previous = LocalCluster.load(self.directory)
        except ClusterError:
            return
        if previous.running_processes():
            raise ClusterError(
                f"a cluster started from {self.directory} is still running "
                f"({previous.master_url}); stop it first with "
                f"`sessionsched cluster down --dir {self.directory}`"
            )
        previous._forget()  # nothing of it runs: only stale records are left

    def _choose_ports(self) -> None:
        if self.port is None:
            self.port = free_port(self.host)
        if self.rest_port is None:
            self.rest_port = self.port + 1 if self.port < 65535 else free_port(self.host)
        if self.ui_port is None:
            self.ui_port = free_port(self.host)
        names = {"port": self.port, "ui port": self.ui_port, "rest port": self.rest_port}
        if len(set(names.values())) < 3:
            raise ClusterError(f"the ports must differ: {names}")
        for name, p in names.items():
            if not port_free(p, self.host):
                raise ClusterError(f"{name} {p} on {self.host} is already in use; choose another")

    def _write_conf(self, name: str, props: dict[str, str]) -> Path:
        path = self.directory / name
        path.write_text("".join(f"{k} {v}\n" for k, v in props.items()))
        return path

    def _spawn(self, role: str, cmd: list[str], env: dict[str, str]) -> None:
        with open(self.directory / f"{role}.log", "ab") as log:
            popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, env=env, cwd=self.directory,
                                     start_new_session=True)
        self._popens.append(popen)
        try:
            self._procs[role] = procs.identify(popen.pid)
        except ProcessLookupError:
            raise ClusterError(f"the {role} exited at once: {self._log_tail(role)}") from None
        self._save()

    def _wait(self, client: MasterClient, deadline: float, ready, what: str) -> None:
        while True:
            for role, p in self._procs.items():
                if not procs.is_running(p):
                    raise ClusterError(f"the {role} exited while starting: {self._log_tail(role)}")
            try:
                if ready(client.read_master()):
                    return
            except BackendError:
                pass
            if time.monotonic() >= deadline:
                raise ClusterError(
                    f"timed out after {self.start_timeout_s:g}s waiting for {what} "
                    f"(logs in {self.directory})"
                )
            time.sleep(0.25)

    def _log_tail(self, role: str) -> str:
        """The last error-looking line of a process's log, for a one-line message."""
        try:
            lines = (self.directory / f"{role}.log").read_text(errors="replace").splitlines()
        except OSError:
            return "no log"
        for line in reversed(lines):
            if any(w in line for w in ("ERROR", "Exception", "Error", "error")):
                return line.strip()[:300]
        return lines[-1].strip()[:300] if lines else "empty log"

    # --- stop -------------------------------------------------------------------------------

    def stop(self, grace_s: float = 10.0) -> list[str]:
        """Stop the processes ``start`` started (workers first, with their executors), each
        only if it is still that same process. Returns the roles that were running."""
        stopped = []
        for role in sorted(self._procs, key=lambda r: r == "master"):
            p = self._procs[role]
            if procs.is_running(p):
                stopped.append(role)
            procs.stop_group(p, grace_s)
        for popen in self._popens:
            popen.poll()  # collect our children's exit status
        self._forget()
        return stopped

    def _forget(self) -> None:
        for role in self._procs:
            (self.directory / f"{role}.pid").unlink(missing_ok=True)
        self.state_file.unlink(missing_ok=True)
        self._procs.clear()

    # --- status -----------------------------------------------------------------------------

    def status(self) -> ClusterStatus:
        processes = tuple(ProcessInfo(role, p.pid, procs.is_running(p))
                          for role, p in self._procs.items())
        base = dict(master_url=self.master_url, master_ui=self.master_ui,
                    rest_url=self.rest_url, processes=processes)
        client = MasterClient(self.master_ui, timeout_s=3.0)
        try:
            view = client.read_master()
        except BackendError as e:
            return ClusterStatus(**base, reachable=False, error=str(e))
        finally:
            client.close()
        return ClusterStatus(**base, reachable=True, workers=view.workers,
                             apps=view.active_apps, drivers=view.drivers)
