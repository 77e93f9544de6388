"""Finding our cluster driver on a standalone master after a create whose answer was lost.

A Spark REST create that was sent but not answered (the answer timed out, the connection
broke) may have been carried out: the master may run the driver. Trying again blindly could
run it twice; failing the app could leave it running unknown. So the standalone backend marks
every create with the property ``spark.sessionsched.appId=<our app id>`` (``MARKER``) and, when
the answer is lost, looks for that driver.

What a Spark 4.0.1 master shows (measured): its ``/json/`` lists each driver (``activedrivers``
and ``completeddrivers``) with ``id``, ``starttime`` (epoch ms), ``state``, ``worker`` and
``mainclass`` -- not its properties. The properties are in the driver's stderr on its worker:
the worker writes ``Launch Command: "java" ... "-Dspark.sessionsched.appId=driver-..." ...``
at its top before starting the driver (values of secret-looking keys are redacted, this one
is not). So a driver is ours when its main class is the request's, it started after the
create was sent (``SLACK_S`` for clocks apart), it is not a driver already known, and the head
of its stderr (``MasterClient.driver_log``) has the marker with our app id.

The answer (``find``): the driver id; ``NOT_FOUND`` when no such driver is listed (the create
did not run: trying it again is safe); ``UNSURE`` when a candidate cannot be checked yet (not
placed on a worker, so no log yet; or its log not readable now): look again later.
"""

from __future__ import annotations

from collections.abc import Callable, Container

from .clusterview import ClusterView, DriverInfo

MARKER = "spark.sessionsched.appId"
SLACK_S = 300.0  # the master's clock may be this far behind ours
NOT_FOUND = "not found"
UNSURE = "unsure"
LAUNCH_COMMAND = "Launch Command:"


def marker_of(app_id: str) -> str:
    """How the marker appears in a worker's launch command (quoted, as Spark writes it)."""
    return f'"-D{MARKER}={app_id}"'


def find(view: ClusterView, app_id: str, main_class: str, sent_at: float,
         known: Container[str], driver_log: Callable[[ClusterView, str], str]) -> str:
    """Our driver's id for ``app_id`` (module doc), ``NOT_FOUND`` or ``UNSURE``.
    ``known``: driver ids already accounted for; ``driver_log(view, id)``: the head of a
    driver's stderr ("" if it cannot be read now)."""
    unsure = False
    for d in _candidates(view, main_class, sent_at, known):
        if d.worker_id is None:
            if d.exit_code is None:
                unsure = True  # waiting for a worker: no log yet
            continue  # ended without ever running: nothing of ours runs
        log = driver_log(view, d.id)
        if marker_of(app_id) in log:
            return d.id
        if LAUNCH_COMMAND not in log:
            unsure = True  # its worker has not written the launch command yet, or is away
    return UNSURE if unsure else NOT_FOUND


def _candidates(view: ClusterView, main_class: str, sent_at: float,
                known: Container[str]) -> list[DriverInfo]:
    since_ms = (sent_at - SLACK_S) * 1000
    return [d for d in view.master.drivers
            if d.id not in known and d.main_class == main_class and d.start_ms >= since_ms]
