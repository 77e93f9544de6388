"""A driver on a worker (cluster deploy mode): a Spark REST create's, or a ``submit`` JVM
app's once its spark-submit logged the driver id (``WorkerDriver.after_submit``).

Launching (``launch_rest``, ``Launch.rest_request``): forwarded to the master's own REST
server (``spark.master`` set to the real master, and the marker ``spark.sessionsched.appId``
set to our app id); the master's driver id is kept. Its record is written before the create is
sent (no driver id yet). A create whose answer is lost (``AnswerLost``: the master may have run
it) is not failed: the driver is looked for on the master (``recognize``) and adopted if found;
if the master surely has no such driver the launch fails as ``BackendUnavailable`` (tried again
with back-off), and so it does while that cannot be told yet (a candidate not placed on a
worker). Every later launch of an app whose record has no driver id looks for its driver first
(after a restart too), so a create the master carried out late is adopted, not sent again.

Observing (``WorkerDriver.observe``): the Spark application id from the driver's log, fetched
from its worker over HTTP (``read_log``: only when an application the backend cannot place has
appeared since the last fetch, or at most every DRIVER_LOG_EVERY_S while one stays unplaced);
DriverStarted and its executors as for a local driver; DriverExited from the master's final
driver state (``clusterview.DRIVER_EXIT_CODES``), with a reason when that is ERROR (its worker
lost) or the driver is no longer listed (-1, after DRIVER_MISSING_S). Its worker is its
``placement``. Stopping: the master's REST kill.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...engine.events import DriverExited, Event
from .. import driver_files, recognize
from ..applog import find_app_id
from ..base import BackendError, BackendUnavailable, Launch, Placement
from ..clusterview import ClusterView
from ..commands import rest_request
from ..driver_files import DriverRecord
from ..master import AnswerLost, MasterClient
from .client_mode import LocalDriver
from .part import UNKNOWN_EXIT, Part

log = logging.getLogger("sessionsched.backend")

DRIVER_LOG_EVERY_S = 1.0  # a cluster driver's log is fetched over HTTP: at most this often
DRIVER_MISSING_S = 30.0  # a cluster driver the master no longer lists is gone after this


@dataclass
class WorkerDriver(Part):
    log_read_at: float = -1e18
    log_read_for: frozenset[str] = frozenset()  # the unplaced apps at that read
    placement: Placement | None = None  # its worker, as last seen in the master's JSON

    @staticmethod
    def after_submit(submitter: LocalDriver, driver_id: str) -> WorkerDriver:
        """The driver a cluster-mode spark-submit got (its record now says so)."""
        rec = submitter.record
        rec.kind, rec.driver_id = "cluster-driver", driver_id
        return WorkerDriver(rec, submitter.seen, submitter.started_sent,
                            stop_requested=submitter.stop_requested)

    def read_log(self, view: ClusterView, unplaced: frozenset[str], now: float,
                 fetch: Callable[[ClusterView, str], str]) -> str | None:
        """Its Spark application id, from its log when one may be there (see the module doc)."""
        if self.record.spark_app_id is not None or not unplaced:
            return None
        if unplaced == self.log_read_for and now - self.log_read_at < DRIVER_LOG_EVERY_S:
            return None
        self.log_read_at, self.log_read_for = now, unplaced
        return find_app_id(fetch(view, self.record.driver_id))

    def observe(self, view: ClusterView, now: float) -> list[Event]:
        out = self.started()
        rec = self.record
        if rec.spark_app_id:
            changed = self.executors(view, rec.spark_app_id, now)
            if changed is not None:
                out.append(changed)
        driver = view.master.driver(rec.driver_id)
        worker = view.master.worker(driver.worker_id) if driver is not None else None
        if worker is not None:
            self.placement = Placement(worker.id, worker.host_port)
        if driver is None:
            code = UNKNOWN_EXIT if now - rec.launched_at > DRIVER_MISSING_S else None
        else:
            code = driver.exit_code
        if code is not None:
            self.exited = True
            out.append(DriverExited(self.app_id, code, _ended_why(rec, view)))
        return out


def _ended_why(record: DriverRecord, view: ClusterView) -> str | None:
    """Why a cluster driver ended, where its exit code alone would not say (None: the code
    says it). The master's ERROR is not an exit of the driver: its worker was lost (or it could
    not be started); a driver the master no longer lists ended unseen (a restarted master
    forgets its drivers)."""
    driver = view.master.driver(record.driver_id)
    if driver is None:
        return (f"the master no longer lists driver {record.driver_id} "
                f"(restarted?): how it ended is unknown")
    if driver.state == "ERROR":
        return (f"the master ended driver {record.driver_id} in state ERROR: its worker was "
                f"lost, or it could not be started")
    return None


@dataclass(frozen=True)
class RestLaunch:
    """What a REST create needs of the backend."""

    client: MasterClient
    master: str
    run_dir: Path
    executors_every_s: float
    ours_drivers: set[str]  # the backend's: driver ids known to be ours (read only here)
    clock: Callable[[], float]

    def launch(self, launch: Launch) -> WorkerDriver:
        """The driver of a REST create, sent now or found on the master (see the module doc);
        its record says which driver it is."""
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
        record = DriverRecord(app_id, "cluster-driver", self.clock())
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
        found = recognize.find(view, app_id, main_class, sent_at, self.ours_drivers,
                               lambda v, driver_id: self.client.driver_log(v, driver_id, 65536))
        if found == recognize.UNSURE:
            raise BackendUnavailable(f"{why}; cannot tell yet whether the master runs a driver "
                                     f"of {app_id}")
        if found == recognize.NOT_FOUND:
            return None
        log.warning("%s: %s, but the master runs its driver %s: adopted", app_id, why, found)
        return found

    def _keep(self, record: DriverRecord, driver_id: str) -> WorkerDriver:
        record.driver_id = driver_id
        driver_files.save(self.run_dir, record)
        return WorkerDriver(record)
