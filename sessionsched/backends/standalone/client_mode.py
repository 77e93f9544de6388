"""A process on this host: a client-mode driver (Python apps; any app not ``in_cluster``), or
the ``spark-submit --deploy-mode cluster`` of a ``submit`` JVM app until it logs its driver id.

Launching (``launch_process``): ``spark-submit --master M --deploy-mode client ...`` (command
line: ``commands.submit_command``) run by ``runner.py`` as the leader of a new process
session, output to the app's log file (``spawn.start``). The session keeps it alive when the
scheduler stops; the runner writes its exit code to ``<run_dir>/<app>.exit``, so a restarted
scheduler still learns how it ended. A ``submit`` JVM app in cluster deploy mode
(``in_cluster``, no REST request) is a real ``spark-submit --deploy-mode cluster`` to the
master's REST server, run the same way (``record.submitter``); the driver id it logs
("Submission successfully created as driver-...") makes the backend track it as a driver on a
worker (``cluster_mode.WorkerDriver.after_submit``). Its spark-submit exits 0 even when the
submission fails, so an exit without a driver id counts as a failure (exit code 1 if it said 0).

Observing (``LocalDriver.observe``): DriverStarted once the driver's log names its Spark
application (``applog`` says why the log), its executors as the workers list them, and
DriverExited from the runner's exit file; a process gone without one (it was SIGKILLed) gives
137 if we stopped it, else -1 (unknown).

A driver whose application the master forgot (listed active, the master then unreachable, and
now, ALIVE, listing it nowhere: a master restarted without recovery mode) would wait for
executors forever: it is stopped and its DriverExited says why (``_check_forgotten``).

Stopping: SIGTERM to the driver's process group at once, SIGKILL to whatever is left after the
backend's grace (``spawn.GraceStops``).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...engine.events import DriverExited, Event
from .. import driver_files, procs, spawn
from ..applog import LogTail
from ..base import BackendError, Launch
from ..clusterview import ClusterView
from ..commands import submit_command
from ..driver_files import DriverRecord
from ..procs import ProcessId
from ..spark_home import SparkNotFound, spark_home, spark_submit
from .part import UNKNOWN_EXIT, Part

log = logging.getLogger("sessionsched.backend")

KILLED_EXIT = 128 + signal.SIGKILL


@dataclass
class LocalDriver(Part):
    proc: ProcessId | None = None
    popen: subprocess.Popen | None = None
    log_tail: LogTail | None = None  # the driver's log, read as it grows
    seen_active: bool = False  # its Spark application was listed active by the master
    master_lost: bool = False  # the master could not be read since it was last listed
    forgotten: str | None = None  # why it was stopped: the master forgot its application

    def read_log(self) -> tuple[str | None, str | None]:
        """What the driver's log says that is newly needed: (its Spark application id, the
        driver id a cluster-mode spark-submit got), either None when not said (yet)."""
        rec, tail = self.record, self.log_tail
        if tail is None or not (rec.submitter or rec.spark_app_id is None):
            return None, None
        tail.scan()
        if rec.submitter:
            return None, tail.driver_id
        return tail.app_id, None

    def stop(self, stops: spawn.GraceStops, now: float) -> None:
        self.stop_requested = True
        if self.proc is not None:
            stops.begin(self.app_id, self.proc, self.popen, now)

    def observe(self, view: ClusterView, now: float, stops: spawn.GraceStops) -> list[Event]:
        out = self.started()
        sid = self.record.spark_app_id
        if sid:
            changed = self.executors(view, sid, now)
            if changed is not None:
                out.append(changed)
            self._check_forgotten(view, stops, now)
        code = self._exit_code()
        if code is not None:
            self.exited = True
            out.append(DriverExited(self.app_id, code, self.forgotten))
        return out

    def _check_forgotten(self, view: ClusterView, stops: spawn.GraceStops, now: float) -> None:
        """Stop a driver whose application the master forgot: listed active, then the master
        could not be read, and now it lists the application neither active nor completed. A
        master restarted without recovery mode knows nothing of it, and kills its executors as
        their workers register again: the driver waits for executors forever. Stopped, it
        ends FAILED with a reason saying why (not launched again: it may have done part of
        its work). Only a master that is ALIVE says so: one STANDBY or RECOVERING (with a
        recovery mode) answers its web UI before it has read its applications back."""
        sid = self.record.spark_app_id
        if self.stop_requested or view.master.status != "ALIVE":
            return
        if any(a.id == sid for a in view.master.active_apps):
            self.seen_active, self.master_lost = True, False
        elif (self.seen_active and self.master_lost
              and not any(a.id == sid for a in view.master.completed_apps)):
            self.forgotten = (f"the master forgot application {sid} (restarted?): its driver "
                              f"could get no executors, so it was stopped")
            log.warning("%s: %s", self.app_id, self.forgotten)
            self.stop(stops, now)

    def _exit_code(self) -> int | None:
        rec = self.record
        code = driver_files.read_exit_code(rec.exit_path)
        if code is None:
            if self._alive():
                return None
            # Gone: the runner writes the file before it exits, so look once more.
            code = driver_files.read_exit_code(rec.exit_path)
            if code is None:
                code = KILLED_EXIT if self.stop_requested else UNKNOWN_EXIT
        spawn.reap(self.popen)
        if rec.submitter:  # spark-submit ended without a driver id: the submission failed
            return code or 1
        return code

    def _alive(self) -> bool:
        if self.popen is not None and self.popen.poll() is not None:
            return False
        return self.proc is not None and procs.is_running(self.proc)


def adopted_process(app_id: str, record: DriverRecord | None, ref: str, started_at: float,
                    run_dir: Path) -> LocalDriver | None:
    """The driver process a Handle names, found again after a restart: None when it is gone
    without a trace (not running, and no exit code written)."""
    try:
        proc = ProcessId.parse(ref)
    except ValueError:
        return None
    if record is None:  # no record (another run_dir?): the handle alone still identifies it
        record = DriverRecord(app_id, "process", started_at, process=ref,
                              exit_path=str(run_dir / f"{app_id}.exit"))
    if not procs.is_running(proc) and driver_files.read_exit_code(record.exit_path) is None:
        return None
    tail = LogTail(record.log_path) if record.log_path else None
    return LocalDriver(record, proc=proc, log_tail=tail)


def launch_process(launch: Launch, master: str, rest_url: Callable[[], str], run_dir: Path,
                   conf_defaults: dict[str, str], env_defaults: dict[str, str],
                   clock: Callable[[], float]) -> LocalDriver:
    """spark-submit started for ``launch`` (see the module doc), its record written."""
    try:
        submit = spark_submit(spark_home())
    except SparkNotFound as e:
        raise BackendError(str(e)) from None
    submitter = launch.in_cluster
    try:
        if submitter:
            rest_master = "spark://" + rest_url().removeprefix("http://")
            conf = {**launch.conf, "spark.master.rest.enabled": "true"}
            cmd = submit_command(submit, rest_master, "cluster", launch.argv, conf)
        else:
            cmd = submit_command(submit, master, "client", launch.argv, launch.conf,
                                 conf_defaults)
    except ValueError as e:
        raise BackendError(f"{launch.app_id}: {e}") from None
    log_path = Path(launch.log_path or run_dir / f"{launch.app_id}.log")
    exit_path = run_dir / f"{launch.app_id}.exit"
    exit_path.unlink(missing_ok=True)
    env = {**env_defaults, **os.environ, **launch.env}
    if not ({"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"} & env.keys()
            or "spark.pyspark.python" in launch.conf):
        # pyspark's bundled Spark would run "python3" from PATH, which may lack pyspark.
        env["PYSPARK_PYTHON"] = sys.executable
    log_path.parent.mkdir(parents=True, exist_ok=True)
    launched_at = clock()
    popen, proc = spawn.start(launch.app_id, cmd, log_path, exit_path, launch.cwd, env)
    record = DriverRecord(launch.app_id, "process", launched_at, process=str(proc),
                          log_path=str(log_path), exit_path=str(exit_path), submitter=submitter)
    driver_files.save(run_dir, record)
    return LocalDriver(record, proc=proc, popen=popen, log_tail=LogTail(log_path))
