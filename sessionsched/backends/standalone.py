"""The Spark standalone backend: drivers launched on the scheduler host or in the cluster,
observed through the master's and workers' JSON.

Launching (``launch``):
* a client-mode driver (Python apps; any app not ``in_cluster``): ``spark-submit --master M
  --deploy-mode client ...`` (command line: ``commands.submit_command``) run by ``runner.py``
  as the leader of a new process session, output to the app's log file. The session keeps
  it alive when the scheduler stops; the runner writes its exit code to
  ``<run_dir>/<app>.exit``, so a restarted scheduler still learns how it ended.
* a REST submission (``Launch.rest_request``, JVM app in cluster deploy mode): forwarded to
  the master's own REST server (``spark.master`` set to the real master, and the marker
  ``spark.sessionsched.appId`` set to our app id); the master's driver id is kept. Its record
  is written before the create is sent (no driver id yet). A create whose answer is lost
  (``AnswerLost``: the master may have run it) is not failed: the driver is looked for on the
  master (``recognize``) and adopted if found; if the master surely has no such driver the
  launch fails as ``BackendUnavailable`` (tried again with back-off), and so it does while
  that cannot be told yet (a candidate not placed on a worker). Every later launch of an app
  whose record has no driver id looks for its driver first (after a restart too), so a
  create the master carried out late is adopted, not sent again.
* a ``submit`` JVM app in cluster deploy mode (``in_cluster``, no REST request): real
  ``spark-submit --deploy-mode cluster`` to the master's REST server, run like a client-mode
  driver; the driver id it logs ("Submission successfully created as driver-...") turns the
  app into a cluster driver. Its spark-submit exits 0 even when the submission fails, so an
  exit without a driver id counts as a failure (exit code 1 if it said 0).

Observing (``poll``), in this order for each app, in launch order:
* ``DriverStarted(app, spark_app_id)`` once, when the Spark application id is learnt from the
  driver's log (``applog`` says why the log);
* ``ExecutorsChanged`` when the set of the application's executors in the workers' JSON
  changed (``idle`` is unknown there: False; ``started_at`` is when it was first seen);
* ``DriverExited(app, code)``: the runner's exit file; a driver process gone without one (it
  was SIGKILLed) gives 137 if we stopped it, else -1 (unknown). Cluster drivers: the master's
  final driver state (``clusterview.DRIVER_EXIT_CODES``), with a reason when that is ERROR
  (its worker lost) or the driver is no longer listed (-1, after ``DRIVER_MISSING_S``);
* then ``CapacityChanged`` when capacity or driver slots changed since last reported.

A client-mode driver whose application the master forgot (listed active, the master then
unreachable, and now listing it nowhere: a master restarted without recovery mode) would wait
for executors forever: it is stopped and its DriverExited says why (``_forgotten``).

Capacity: alive workers minus the usage of applications and cluster drivers this backend did
not launch, adopt, or get told about (``manage``); driver slots are configured. An application
that has just registered is presumed to be one of our drivers whose log line is not read yet
(``clusterview.presumed_ours``), so that capacity does not dip for a cycle at every launch.

Stopping: SIGTERM to the driver's process group at once; ``poll`` (or ``close``) sends
SIGKILL to whatever is left after ``stop_grace_s``. Cluster drivers: the master's REST kill.

Files in ``run_dir``: ``<app>.json`` (``driver_files``), ``<app>.exit``, ``<app>.log`` (unless
``Launch.log_path`` says otherwise).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from ..engine.events import (
    CapacityChanged,
    DriverExited,
    DriverStarted,
    Event,
    ExecutorsChanged,
)
from ..model import Executor, Resources
from . import driver_files, procs, recognize
from .applog import LogWatch, find_app_id
from .base import (
    RELAUNCH,
    BackendError,
    BackendUnavailable,
    ClusterBackend,
    Handle,
    Launch,
    Placement,
)
from .clusterview import ClusterView, DriverInfo, capacity_for_managed, presumed_ours
from .commands import redacted, rest_request, submit_command
from .driver_files import DriverRecord
from .master import WRITE_TIMEOUT_S, AnswerLost, MasterClient
from .procs import ProcessId
from .spark_home import SparkNotFound, spark_home, spark_submit

log = logging.getLogger("sessionsched.backend")

RUNNER = str(Path(__file__).with_name("runner.py"))
UNKNOWN_EXIT = -1
KILLED_EXIT = 128 + signal.SIGKILL
DRIVER_LOG_EVERY_S = 1.0  # a cluster driver's log is fetched over HTTP: at most this often
CLAIM_S = 120.0  # how long after launch an unidentified driver may be presumed an app's
DRIVER_MISSING_S = 30.0  # a cluster driver the master no longer lists is gone after this


@dataclass
class _Tracked:
    record: DriverRecord
    proc: ProcessId | None = None
    popen: subprocess.Popen | None = None
    watch: LogWatch | None = None
    external: bool = False  # told by ``manage``: report executors only
    started_sent: bool = False
    first_seen: dict[str, float] = field(default_factory=dict)  # executor id -> time
    reported: frozenset[str] = frozenset()
    exited: bool = False
    stop_requested: bool = False
    log_read_at: float = -1e18
    log_read_for: frozenset[str] = frozenset()  # the unplaced apps at that read
    seen_active: bool = False  # its Spark application was listed active by the master
    master_lost: bool = False  # the master could not be read since it was last listed
    forgotten: str | None = None  # why it was stopped: the master forgot its application


class StandaloneBackend(ClusterBackend):
    """A Spark standalone cluster (``master`` spark://..., ``master_ui`` http://...).

    ``rest_url``: the master's REST server (http://host:port); default: read from the master's
    UI page when first needed. ``executors_every_s``: how often the workers' JSON (the
    executor lists) is read; the master's JSON is read at every call. ``run_dir``: where
    records, exit files and default logs go; a backend created with the same ``run_dir``
    after a restart finds the drivers again.
    """

    def __init__(
        self,
        master: str,
        master_ui: str,
        run_dir: str | Path,
        driver_slots: int = 4,
        *,
        rest_url: str | None = None,
        stop_grace_s: float = 10.0,
        http_timeout_s: float = 3.0,
        executors_every_s: float = 1.0,
        write_timeout_s: float = WRITE_TIMEOUT_S,
    ):
        if not master.startswith("spark://"):
            raise ValueError(f"cluster master {master!r}: expected spark://HOST:PORT")
        self.master = master
        self.driver_slots = driver_slots
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stop_grace_s = stop_grace_s
        self.executors_every_s = executors_every_s
        self.client = MasterClient(master_ui, rest_url, http_timeout_s, write_timeout_s)
        self._apps: dict[str, _Tracked] = {}
        self._ours_spark: set[str] = set()  # Spark app ids that are ours, even once ended
        self._ours_drivers: set[str] = set()
        self._kill_at: dict[str, float] = {}  # app -> monotonic time to SIGKILL its group
        self._kill_later: set[str] = set()  # cluster drivers to kill through the master
        self._capacity_sent: tuple[Resources, int] | None = None
        # Cluster drivers' workers, as last seen in the master's JSON; read by other threads
        # (the REST status answer): each entry is replaced whole, never changed in place.
        self._placements: dict[str, Placement] = {}
        loopback = _is_loopback(urlparse(master.replace("spark://", "http://", 1)).hostname)
        # A loopback cluster only reaches a driver bound to loopback (reference doc pitfall).
        self._conf_defaults = {"spark.driver.host": "127.0.0.1"} if loopback else {}
        self._env_defaults = {"SPARK_LOCAL_IP": "127.0.0.1"} if loopback else {}

    # --- contract ---------------------------------------------------------------------------

    def capacity(self) -> tuple[Resources, int]:
        view = self._read()
        self._learn_ids(view)
        cap = (self._free(view), self.driver_slots)
        self._capacity_sent = cap
        return cap

    def launch(self, launch: Launch) -> Handle:
        current = self._apps.get(launch.app_id)
        if current is not None and not current.exited:
            raise BackendError(f"{launch.app_id} has a driver already")
        if launch.rest_request is not None:
            return self._launch_rest(launch)
        if not launch.argv:
            raise BackendError(f"{launch.app_id}: nothing to launch (no spark-submit arguments)")
        return self._launch_process(launch)

    def stop(self, app_id: str) -> None:
        t = self._apps.get(app_id)
        if t is None or t.exited:
            return
        t.stop_requested = True
        if t.record.kind == "cluster-driver":
            self.client.kill(t.record.driver_id)
            return
        if t.proc is not None and procs.signal_group(t.proc, signal.SIGTERM):
            self._kill_at[app_id] = time.monotonic() + self.stop_grace_s

    def adopt(self, handle: Handle) -> bool:
        """True when this backend will report on the driver from now on: it still runs, or it
        ended meanwhile and its exit code is known (the next ``poll`` reports DriverExited).
        False when it is gone without a trace."""
        current = self._apps.get(handle.app_id)
        if current is not None:
            return not current.exited
        record = driver_files.load(self.run_dir, handle.app_id)
        if handle.kind == "cluster-driver" or (record and record.kind == "cluster-driver"):
            driver_id = record.driver_id if record and record.driver_id else handle.ref
            view = self.client.read(self.executors_every_s)
            if view.master.driver(driver_id) is None:
                return False
            record = record or DriverRecord(handle.app_id, "cluster-driver", handle.started_at)
            record.kind, record.driver_id = "cluster-driver", driver_id
            self._track(_Tracked(record))
            return True
        if handle.kind != "process":
            return False
        try:
            proc = ProcessId.parse(handle.ref)
        except ValueError:
            return False
        if record is None:  # no record (another run_dir?): the handle alone still identifies it
            record = DriverRecord(handle.app_id, "process", handle.started_at, process=handle.ref,
                                  exit_path=str(self.run_dir / f"{handle.app_id}.exit"))
        if not procs.is_running(proc) and driver_files.read_exit_code(record.exit_path) is None:
            return False
        self._track(_Tracked(record, proc=proc, watch=_watch(record)))
        return True

    def recover(self, app_id: str, rest: bool, decided_at: float) -> Handle | str | None:
        """A launch the store did not record, from this backend's record (``run_dir``): a
        driver id or a driver process is a Handle. A REST create is RELAUNCH: the next
        ``launch`` looks for the driver an earlier create may have started first (its record
        has no driver id; one is written now if there is none -- the create may have been
        sent by a scheduler on another host, with another ``run_dir``). A process launch's
        record is written after the process started: without one, None (it may run)."""
        record = driver_files.load(self.run_dir, app_id)
        if record is not None and record.driver_id:
            return Handle(app_id, "cluster-driver", record.driver_id, record.launched_at)
        if record is not None and record.process:
            return Handle(app_id, "process", record.process, record.launched_at)
        if not rest:
            return None
        if record is None:
            driver_files.save(self.run_dir, DriverRecord(app_id, "cluster-driver", decided_at))
        return RELAUNCH

    def manage(self, app_id: str, spark_app_id: str) -> None:
        if app_id in self._apps:
            return
        record = DriverRecord(app_id, "external", time.time(), spark_app_id=spark_app_id)
        self._track(_Tracked(record, external=True))

    def placement(self, app_id: str) -> Placement | None:
        return self._placements.get(app_id)

    def poll(self, now: float) -> list[Event]:
        view = self._read()
        self._escalate_stops()
        self._learn_ids(view)
        self._kill_pending()
        events: list[Event] = []
        for t in list(self._apps.values()):
            if not t.exited:
                events.extend(self._observe(t, view, now))
        cap = (self._free(view), self.driver_slots)
        if cap != self._capacity_sent:
            self._capacity_sent = cap
            events.append(CapacityChanged(*cap))
        return events

    def _read(self) -> ClusterView:
        """The cluster now; a failed read marks every client-mode driver's application as
        possibly forgotten (``_forgotten``)."""
        try:
            return self.client.read(self.executors_every_s)
        except BackendError:
            for t in self._apps.values():
                t.master_lost = True
            raise

    def close(self) -> None:
        """Finish pending stops (bounded by their grace), then close the HTTP client. Drivers
        that were not stopped keep running: they are adopted at the next start."""
        try:
            for app_id, deadline in list(self._kill_at.items()):
                t = self._apps[app_id]
                if t.proc is not None:
                    procs.finish_stop(t.proc, max(deadline - time.monotonic(), 0.0))
                self._reap(t)
            self._kill_at.clear()
        finally:
            self.client.close()

    # --- launching --------------------------------------------------------------------------

    def _launch_process(self, launch: Launch) -> Handle:
        try:
            submit = spark_submit(spark_home())
        except SparkNotFound as e:
            raise BackendError(str(e)) from None
        submitter = launch.in_cluster
        try:
            if submitter:
                master = "spark://" + self.client.rest_url().removeprefix("http://")
                conf = {**launch.conf, "spark.master.rest.enabled": "true"}
                cmd = submit_command(submit, master, "cluster", launch.argv, conf)
            else:
                cmd = submit_command(submit, self.master, "client", launch.argv, launch.conf,
                                     self._conf_defaults)
        except ValueError as e:
            raise BackendError(f"{launch.app_id}: {e}") from None
        log_path = Path(launch.log_path or self.run_dir / f"{launch.app_id}.log")
        exit_path = self.run_dir / f"{launch.app_id}.exit"
        exit_path.unlink(missing_ok=True)
        env = {**self._env_defaults, **os.environ, **launch.env}
        if not ({"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"} & env.keys()
                or "spark.pyspark.python" in launch.conf):
            # pyspark's bundled Spark would run "python3" from PATH, which may lack pyspark.
            env["PYSPARK_PYTHON"] = sys.executable
        log_path.parent.mkdir(parents=True, exist_ok=True)
        launched_at = time.time()
        try:
            with open(log_path, "ab") as out:
                line = f"sessionsched: launching {launch.app_id}: {' '.join(redacted(cmd))}\n"
                out.write(line.encode())
                out.flush()
                popen = subprocess.Popen(
                    [sys.executable, RUNNER, "--exit-file", str(exit_path), "--", *cmd],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    cwd=launch.cwd, env=env, start_new_session=True,
                )
        except OSError as e:
            raise BackendError(f"{launch.app_id}: cannot start spark-submit: {e}") from None
        try:
            proc = procs.identify(popen.pid)
        except ProcessLookupError:  # ended at once; its exit file says how
            proc = ProcessId(popen.pid, 0)
        record = DriverRecord(launch.app_id, "process", launched_at, process=str(proc),
                              log_path=str(log_path), exit_path=str(exit_path),
                              submitter=submitter)
        driver_files.save(self.run_dir, record)
        self._track(_Tracked(record, proc=proc, popen=popen, watch=LogWatch(log_path)))
        return Handle(launch.app_id, "process", str(proc), launched_at)

    def _launch_rest(self, launch: Launch) -> Handle:
        app_id = launch.app_id
        try:
            body = rest_request(launch.rest_request, self.master,
                                {**launch.conf, recognize.MARKER: app_id}, launch.env)
        except ValueError as e:
            raise BackendError(f"{app_id}: {e}") from None
        main_class = str(body.get("mainClass") or "")
        earlier = driver_files.load(self.run_dir, app_id)
        if earlier is not None and earlier.kind == "cluster-driver" and not earlier.driver_id:
            # An earlier create's outcome is unknown: its driver may be there.
            found = self._look_for(app_id, main_class, earlier.launched_at, "an earlier create")
            if found is not None:
                return self._keep(earlier, found)
        record = DriverRecord(app_id, "cluster-driver", time.time())
        driver_files.save(self.run_dir, record)  # before sending: a lost answer is looked into
        try:
            driver_id = self.client.create(body)
        except AnswerLost as e:
            driver_id = self._look_for(app_id, main_class, record.launched_at, str(e))
            if driver_id is None:
                raise BackendUnavailable(f"{e}; the master runs no driver of {app_id}") from None
        except BackendError:  # never sent, or refused: no driver of it can run
            driver_files.record_path(self.run_dir, app_id).unlink(missing_ok=True)
            raise
        return self._keep(record, driver_id)

    def _look_for(self, app_id: str, main_class: str, sent_at: float, why: str) -> str | None:
        """Our driver of ``app_id`` on the master (``recognize``): its id, or None when surely
        none runs. BackendUnavailable while that cannot be told (tried again later)."""
        try:
            view = self.client.read(self.executors_every_s)
        except BackendError as e:
            raise BackendUnavailable(f"{why}; cannot look for its driver: {e}") from None
        found = recognize.find(view, app_id, main_class, sent_at, self._ours_drivers,
                               lambda v, driver_id: self.client.driver_log(v, driver_id, 65536))
        if found == recognize.UNSURE:
            raise BackendUnavailable(f"{why}; cannot tell yet whether the master runs a driver "
                                     f"of {app_id}")
        if found == recognize.NOT_FOUND:
            return None
        log.warning("%s: %s, but the master runs its driver %s: adopted", app_id, why, found)
        return found

    def _keep(self, record: DriverRecord, driver_id: str) -> Handle:
        """A create's driver (sent now, or found on the master) recorded and tracked."""
        record.driver_id = driver_id
        driver_files.save(self.run_dir, record)
        self._track(_Tracked(record))
        return Handle(record.app_id, "cluster-driver", driver_id, record.launched_at)

    def _track(self, t: _Tracked) -> None:
        self._apps[t.record.app_id] = t
        if t.record.spark_app_id:
            self._ours_spark.add(t.record.spark_app_id)
        if t.record.driver_id:
            self._ours_drivers.add(t.record.driver_id)

    # --- observing --------------------------------------------------------------------------

    def _free(self, view: ClusterView) -> Resources:
        recent = self._recent_unidentified()
        apps, drivers = presumed_ours(
            view, self._ours_spark, self._ours_drivers,
            [t.record.launched_at for t in recent],
            [t.record.launched_at for t in recent
             if t.record.submitter and t.record.driver_id is None])
        return capacity_for_managed(view, self._ours_spark | apps, self._ours_drivers | drivers)

    def _recent_unidentified(self) -> list[_Tracked]:
        """Our live drivers launched less than CLAIM_S ago whose Spark app id is not known."""
        now = time.time()
        return [t for t in self._apps.values()
                if not t.exited and not t.external and t.record.spark_app_id is None
                and now - t.record.launched_at < CLAIM_S]

    def _learn_ids(self, view: ClusterView) -> None:
        """Read what the drivers' logs say now (ids are needed before capacity is computed).

        A cluster driver's log is fetched over HTTP only when an application the backend
        cannot place has appeared since the last fetch (it may be this driver's), or at most
        every DRIVER_LOG_EVERY_S while one stays unplaced."""
        now = time.monotonic()
        unplaced = frozenset(a.id for a in view.master.active_apps) - self._ours_spark
        for t in self._apps.values():
            if t.exited or t.external:
                continue
            rec = t.record
            if t.watch is not None and (rec.spark_app_id is None
                                        or (rec.submitter and rec.driver_id is None)):
                t.watch.scan()
                if rec.submitter and rec.driver_id is None and t.watch.driver_id:
                    self._became_cluster_driver(t, t.watch.driver_id)
                elif not rec.submitter and t.watch.app_id and rec.spark_app_id is None:
                    self._learnt_spark_id(t, t.watch.app_id)
            if (rec.kind == "cluster-driver" and rec.spark_app_id is None and unplaced
                    and (unplaced != t.log_read_for or now - t.log_read_at >= DRIVER_LOG_EVERY_S)):
                t.log_read_at, t.log_read_for = now, unplaced
                found = find_app_id(self.client.driver_log(view, rec.driver_id))
                if found:
                    self._learnt_spark_id(t, found)

    def _learnt_spark_id(self, t: _Tracked, spark_app_id: str) -> None:
        t.record.spark_app_id = spark_app_id
        self._ours_spark.add(spark_app_id)
        self._save(t.record)

    def _became_cluster_driver(self, t: _Tracked, driver_id: str) -> None:
        t.record.kind, t.record.driver_id = "cluster-driver", driver_id
        self._ours_drivers.add(driver_id)
        self._save(t.record)
        self._kill_at.pop(t.record.app_id, None)
        if t.stop_requested:  # stopped while spark-submit was still submitting
            self._kill_later.add(t.record.app_id)

    def _save(self, record: DriverRecord) -> None:
        """Rewrite a record mid-poll. A failure costs only what a restart could re-learn
        (from the log), so it is logged rather than allowed to lose this poll's events."""
        try:
            driver_files.save(self.run_dir, record)
        except OSError as e:
            log.warning("cannot update %s's record in %s: %s", record.app_id, self.run_dir, e)

    def _kill_pending(self) -> None:
        """Cluster drivers stopped before their id was known: ask the master now (again at the
        next poll if it cannot be asked)."""
        for app_id in list(self._kill_later):
            t = self._apps[app_id]
            try:
                if not t.exited:
                    self.client.kill(t.record.driver_id)
            except BackendError as e:
                log.warning("cannot kill %s's driver yet: %s", app_id, e)
                continue
            self._kill_later.discard(app_id)

    def _observe(self, t: _Tracked, view: ClusterView, now: float) -> list[Event]:
        if t.external:
            return self._observe_external(t, view, now)
        out: list[Event] = []
        app_id, rec = t.record.app_id, t.record
        if rec.spark_app_id and not t.started_sent:
            t.started_sent = True
            out.append(DriverStarted(app_id, rec.spark_app_id))
        if rec.spark_app_id:
            changed = self._executors(t, view, now)
            if changed is not None:
                out.append(changed)
            self._forgotten(t, view)
        code = self._exit_code(t, view, now)
        if code is not None:
            t.exited = True
            out.append(DriverExited(app_id, code, t.forgotten or _ended_why(rec, view)))
        return out

    def _forgotten(self, t: _Tracked, view: ClusterView) -> None:
        """Stop a client-mode driver whose application the master forgot: listed active, then
        the master could not be read, and now it lists the application neither active nor
        completed. A master restarted without recovery mode knows nothing of it, and kills its
        executors as their workers register again: the driver waits for executors forever.
        Stopped, it ends FAILED with a reason saying why (not launched again: it may have done
        part of its work)."""
        sid = t.record.spark_app_id
        if t.record.kind != "process" or t.stop_requested:
            return
        if any(a.id == sid for a in view.master.active_apps):
            t.seen_active, t.master_lost = True, False
        elif (t.seen_active and t.master_lost
              and not any(a.id == sid for a in view.master.completed_apps)):
            t.forgotten = (f"the master forgot application {sid} (restarted?): its driver could "
                           f"get no executors, so it was stopped")
            log.warning("%s: %s", t.record.app_id, t.forgotten)
            self.stop(t.record.app_id)

    def _observe_external(self, t: _Tracked, view: ClusterView, now: float) -> list[Event]:
        sid = t.record.spark_app_id
        if any(a.id == sid for a in view.master.active_apps):
            changed = self._executors(t, view, now)
            return [changed] if changed is not None else []
        if any(a.id == sid for a in view.master.completed_apps):
            t.exited = True  # its driver is not ours to report on; its executors are gone
            if t.reported:
                t.reported = frozenset()
                return [ExecutorsChanged(t.record.app_id, ())]
        return []

    def _executors(self, t: _Tracked, view: ClusterView, now: float) -> ExecutorsChanged | None:
        """ExecutorsChanged if the app's executors in the cluster differ from the last report."""
        current = {e.executor_id for e in view.executors_of(t.record.spark_app_id)}
        for eid in current - t.first_seen.keys():
            t.first_seen[eid] = now
        for eid in t.first_seen.keys() - current:
            del t.first_seen[eid]
        if frozenset(current) == t.reported:
            return None
        t.reported = frozenset(current)
        executors = sorted(
            (Executor(eid, started_at=t.first_seen[eid], idle=False) for eid in current),
            key=lambda e: (e.started_at, _numeric(e.executor_id)),
        )
        return ExecutorsChanged(t.record.app_id, tuple(executors))

    def _exit_code(self, t: _Tracked, view: ClusterView, now: float) -> int | None:
        rec = t.record
        if rec.kind == "cluster-driver":
            driver = view.master.driver(rec.driver_id)
            self._place(rec.app_id, view, driver)
            if driver is None:
                missing = time.time() - rec.launched_at > DRIVER_MISSING_S
                return UNKNOWN_EXIT if missing else None
            return driver.exit_code
        code = driver_files.read_exit_code(rec.exit_path)
        if code is None:
            if self._process_alive(t):
                return None
            # Gone: the runner writes the file before it exits, so look once more.
            code = driver_files.read_exit_code(rec.exit_path)
            if code is None:
                code = KILLED_EXIT if t.stop_requested else UNKNOWN_EXIT
        self._reap(t)
        if rec.submitter:  # spark-submit ended without a driver id: the submission failed
            return code or 1
        return code

    def _place(self, app_id: str, view: ClusterView, driver: DriverInfo | None) -> None:
        worker = view.master.worker(driver.worker_id) if driver is not None else None
        if worker is not None:
            placed = Placement(worker.id, worker.host_port)
            if self._placements.get(app_id) != placed:
                self._placements[app_id] = placed

    def _process_alive(self, t: _Tracked) -> bool:
        if t.popen is not None and t.popen.poll() is not None:
            return False
        return t.proc is not None and procs.is_running(t.proc)

    def _reap(self, t: _Tracked) -> None:
        if t.popen is not None:
            t.popen.poll()

    def _escalate_stops(self) -> None:
        now = time.monotonic()
        for app_id, deadline in list(self._kill_at.items()):
            t = self._apps[app_id]
            self._reap(t)
            if t.proc is None or not procs.group_alive(t.proc.pid):
                del self._kill_at[app_id]
            elif now >= deadline:
                procs.signal_group(t.proc, signal.SIGKILL)
                del self._kill_at[app_id]


def _ended_why(record: DriverRecord, view: ClusterView) -> str | None:
    """Why a cluster driver ended, where its exit code alone would not say (None: the code
    says it). The master's ERROR is not an exit of the driver: its worker was lost (or it could
    not be started); a driver the master no longer lists ended unseen (a restarted master
    forgets its drivers)."""
    if record.kind != "cluster-driver":
        return None
    driver = view.master.driver(record.driver_id)
    if driver is None:
        return (f"the master no longer lists driver {record.driver_id} "
                f"(restarted?): how it ended is unknown")
    if driver.state == "ERROR":
        return (f"the master ended driver {record.driver_id} in state ERROR: its worker was "
                f"lost, or it could not be started")
    return None


def _watch(record: DriverRecord) -> LogWatch | None:
    if not record.log_path:
        return None
    return LogWatch(record.log_path)


def _numeric(executor_id: str) -> tuple[int, str]:
    return (int(executor_id), "") if executor_id.isdigit() else (1 << 62, executor_id)


def _is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
