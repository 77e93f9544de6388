"""The standalone backend's contract (``ClusterBackend``) over its three parts, one per driver
kind: a process on this host (``client_mode.LocalDriver``), a driver on a worker
(``cluster_mode.WorkerDriver``), an app it did not start (``adopted.AdoptedApp``).

``poll(now)``, in this order: read the cluster (the master's JSON at every call, the workers'
executor lists at most every ``executors_every_s``), SIGKILL stopped drivers whose grace ended,
read what the drivers' logs say (ids are needed before capacity is computed), ask the master to
kill cluster drivers stopped before their id was known; then each app, in launch order, reports
DriverStarted, ExecutorsChanged and DriverExited (its part says when); then CapacityChanged
when capacity, driver slots or the alive workers' sizes changed since last reported; it names
the ALIVE workers of ``/json/`` one by one (``clusterview.workers_of``: cores, memory, and
what is free on each as ``coresused``/``memoryused`` say).

Capacity: alive workers minus the usage of applications and cluster drivers this backend did
not launch, adopt, or get told about (``manage``); driver slots are configured. An application
that has just registered is presumed to be one of our drivers whose log line is not read yet
(``clusterview.presumed_ours``, for CLAIM_S after a launch), so that capacity does not dip for a
cycle at every launch.

Time: ``poll`` uses the ``now`` it is given; everything else reads the injected ``clock``
(epoch seconds; the wall clock by default), the master client's executor-list age included.
Nothing here reads the clock itself.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from ...engine.events import CapacityChanged, Event
from ...model import Resources, Worker
from .. import driver_files, spawn
from ..base import RELAUNCH, BackendError, ClusterBackend, Handle, Launch, Placement
from ..clusterview import ClusterView, capacity_for_managed, presumed_ours, workers_of
from ..driver_files import DriverRecord
from ..master import WRITE_TIMEOUT_S, MasterClient
from .adopted import AdoptedApp
from .client_mode import LocalDriver, adopted_process, launch_process
from .cluster_mode import RestLaunch, WorkerDriver
from .part import Part

log = logging.getLogger("sessionsched.backend")

CLAIM_S = 120.0  # how long after launch an unidentified driver may be presumed an app's


class StandaloneBackend(ClusterBackend):
    """A Spark standalone cluster (``master`` spark://..., ``master_ui`` http://...).

    ``rest_url``: the master's REST server (http://host:port); default: read from the master's
    UI page when first needed. ``executors_every_s``: how often the workers' JSON (the
    executor lists) is read; the master's JSON is read at every call. ``run_dir``: where
    records (``driver_files``), exit files and default logs (``<app>.log``, unless
    ``Launch.log_path`` says otherwise) go; a backend created with the same ``run_dir`` after
    a restart finds the drivers again. ``clock``: see the module doc.
    """

    def __init__(
        self,
        master: str,
        master_ui: str,
        run_dir: str | Path,
        driver_slots: int | None = 4,
        *,
        rest_url: str | None = None,
        stop_grace_s: float = 10.0,
        http_timeout_s: float = 3.0,
        executors_every_s: float = 1.0,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
    ):
        if not master.startswith("spark://"):
            raise ValueError(f"cluster master {master!r}: expected spark://HOST:PORT")
        self.master = master
        self.driver_slots = driver_slots
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.executors_every_s = executors_every_s
        self.clock = clock
        self.client = MasterClient(master_ui, rest_url, http_timeout_s, write_timeout_s, clock)
        self._apps: dict[str, Part] = {}
        self._ours_spark: set[str] = set()  # Spark app ids that are ours, even once ended
        self._ours_drivers: set[str] = set()
        self._stops = spawn.GraceStops(stop_grace_s)
        self._kill_later: set[str] = set()  # cluster drivers to kill through the master
        self._capacity_sent: tuple | None = None  # capacity, slots, workers' names and sizes
        self._workers: tuple[Worker, ...] = ()  # alive, as last read (``clusterview``)
        # Cluster drivers' workers, as last seen in the master's JSON; read by other threads
        # (the REST status answer): each entry is replaced whole, never changed in place.
        self._placements: dict[str, Placement] = {}
        self._rest = RestLaunch(self.client, master, self.run_dir, executors_every_s,
                                self._ours_drivers, clock)
        loopback = _is_loopback(urlparse(master.replace("spark://", "http://", 1)).hostname)
        # A loopback cluster only reaches a driver bound to loopback (reference doc pitfall).
        self._conf_defaults = {"spark.driver.host": "127.0.0.1"} if loopback else {}
        self._env_defaults = {"SPARK_LOCAL_IP": "127.0.0.1"} if loopback else {}

    # --- contract ---------------------------------------------------------------------------

    def capacity(self) -> tuple[Resources, int]:
        now = self.clock()
        view = self._read()
        self._read_logs(view, now)
        cap = (self._free(view, now), self.driver_slots)
        self._workers = workers_of(view)
        self._capacity_sent = (cap, _sizes(self._workers))
        return cap

    def workers(self) -> tuple[Worker, ...]:
        return self._workers

    def launch(self, launch: Launch) -> Handle:
        current = self._apps.get(launch.app_id)
        if current is not None and not current.exited:
            raise BackendError(f"{launch.app_id} has a driver already")
        if launch.rest_request is not None:
            driver = self._rest.launch(launch)
            self._track(driver)
            return Handle(launch.app_id, "cluster-driver", driver.record.driver_id,
                          driver.record.launched_at)
        if not launch.argv:
            raise BackendError(f"{launch.app_id}: nothing to launch (no spark-submit arguments)")
        local = launch_process(launch, self.master, self.client.rest_url, self.run_dir,
                               self._conf_defaults, self._env_defaults, self.clock)
        self._track(local)
        return Handle(launch.app_id, "process", local.record.process, local.record.launched_at)

    def stop(self, app_id: str) -> None:
        part = self._apps.get(app_id)
        if part is None or part.exited:
            return
        part.stop_requested = True
        if isinstance(part, WorkerDriver):
            self.client.kill(part.record.driver_id)
        elif isinstance(part, LocalDriver):
            part.stop(self._stops, self.clock())

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
            self._track(WorkerDriver(record))
            return True
        if handle.kind != "process":
            return False
        local = adopted_process(handle.app_id, record, handle.ref, handle.started_at,
                                self.run_dir)
        if local is None:
            return False
        self._track(local)
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
        self._track(AdoptedApp(DriverRecord(app_id, "external", self.clock(),
                                            spark_app_id=spark_app_id)))

    def placement(self, app_id: str) -> Placement | None:
        return self._placements.get(app_id)

    def poll(self, now: float) -> list[Event]:
        view = self._read()
        self._stops.escalate(now)
        self._read_logs(view, now)
        self._kill_pending()
        events: list[Event] = []
        for part in list(self._apps.values()):
            if part.exited:
                continue
            if isinstance(part, LocalDriver):
                events.extend(part.observe(view, now, self._stops))
            elif isinstance(part, WorkerDriver):
                events.extend(part.observe(view, now))
                placed = part.placement
                if placed is not None and self._placements.get(part.app_id) != placed:
                    self._placements[part.app_id] = placed
            elif isinstance(part, AdoptedApp):
                events.extend(part.observe(view, now))
        cap = (self._free(view, now), self.driver_slots)
        self._workers = workers_of(view)
        sent = (cap, _sizes(self._workers))
        if sent != self._capacity_sent:  # what is free changes with every executor: not news
            self._capacity_sent = sent
            events.append(CapacityChanged(*cap, self._workers))
        return events

    def close(self) -> None:
        """Finish pending stops (bounded by their grace), then close the HTTP client. Drivers
        that were not stopped keep running: they are adopted at the next start."""
        try:
            self._stops.finish(self.clock)
        finally:
            self.client.close()

    # --- internals --------------------------------------------------------------------------

    def _read(self) -> ClusterView:
        """The cluster now; a failed read marks every local driver's application as possibly
        forgotten (``LocalDriver._check_forgotten``)."""
        try:
            return self.client.read(self.executors_every_s)
        except BackendError:
            for part in self._apps.values():
                if isinstance(part, LocalDriver):
                    part.master_lost = True
            raise

    def _track(self, part: Part) -> None:
        self._apps[part.app_id] = part
        if part.record.spark_app_id:
            self._ours_spark.add(part.record.spark_app_id)
        if part.record.driver_id:
            self._ours_drivers.add(part.record.driver_id)

    def _free(self, view: ClusterView, now: float) -> Resources:
        recent = [p.record for p in self._apps.values()
                  if not p.exited and not isinstance(p, AdoptedApp)
                  and p.record.spark_app_id is None and now - p.record.launched_at < CLAIM_S]
        apps, drivers = presumed_ours(
            view, self._ours_spark, self._ours_drivers, [r.launched_at for r in recent],
            [r.launched_at for r in recent if r.submitter and r.driver_id is None])
        return capacity_for_managed(view, self._ours_spark | apps, self._ours_drivers | drivers)

    def _read_logs(self, view: ClusterView, now: float) -> None:
        """What the drivers' logs say now: Spark application ids, and the driver id of a
        cluster-mode spark-submit (which then is tracked as a driver on a worker)."""
        unplaced = frozenset(a.id for a in view.master.active_apps) - self._ours_spark
        for part in list(self._apps.values()):
            if part.exited:
                continue
            if isinstance(part, LocalDriver):
                spark_app_id, driver_id = part.read_log()
                if driver_id:
                    self._submitted(part, driver_id)
                    part = self._apps[part.app_id]
                elif spark_app_id:
                    self._learnt_spark_id(part, spark_app_id)
            if isinstance(part, WorkerDriver):
                found = part.read_log(view, unplaced, now, self.client.driver_log)
                if found:
                    self._learnt_spark_id(part, found)

    def _learnt_spark_id(self, part: Part, spark_app_id: str) -> None:
        part.record.spark_app_id = spark_app_id
        self._ours_spark.add(spark_app_id)
        self._save(part.record)

    def _submitted(self, submitter: LocalDriver, driver_id: str) -> None:
        driver = WorkerDriver.after_submit(submitter, driver_id)
        self._apps[driver.app_id] = driver
        self._ours_drivers.add(driver_id)
        self._save(driver.record)
        self._stops.forget(driver.app_id)
        if driver.stop_requested:  # stopped while spark-submit was still submitting
            self._kill_later.add(driver.app_id)

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
            part = self._apps[app_id]
            try:
                if not part.exited:
                    self.client.kill(part.record.driver_id)
            except BackendError as e:
                log.warning("cannot kill %s's driver yet: %s", app_id, e)
                continue
            self._kill_later.discard(app_id)


def _is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _sizes(workers: tuple[Worker, ...]) -> tuple:
    return tuple((w.name, w.size) for w in workers)
