"""Learning a driver's Spark application id (and a cluster-mode submission's driver id) from
the driver's own log.

Why the log: on a standalone cluster the application id is chosen by the master when the
driver registers, and nothing we launch can name it in advance (``spark.app.id`` is
overwritten), while the master's JSON lists applications without anything linking them to a
process (name, user and start time are ambiguous: names repeat and apps start together). The
one place that states "this driver is that application" is the line the driver's
``StandaloneSchedulerBackend`` logs at INFO the moment the master registers it::

    ... INFO StandaloneSchedulerBackend: Connected to Spark cluster with app ID app-2026...-0003

It is printed at the same instant the application appears in the master's JSON, so a scan of
the new log bytes each poll finds it before the app's executors could be counted as someone
else's. The log is ours (one file per app) for client mode; for cluster mode the worker
serves the driver's stderr over HTTP. Spark's default log configuration
(``log4j2-defaults.properties``, root at INFO for non-shell apps) prints it; an app whose own
log4j2 configuration silences ``org.apache.spark.scheduler.cluster`` below INFO is never
matched to its Spark application (its executors then count as unmanaged usage until its
agent reports its id) -- docs/operator/running.md says so. The same match is plain text, so it also
works with Spark's structured (JSON) logging.

``spark-submit --deploy-mode cluster`` to the REST server logs the driver id it got:
"Submission successfully created as driver-..." (the legacy gateway: "Driver successfully
submitted as driver-...").
"""

from __future__ import annotations

import re
from pathlib import Path

APP_ID = re.compile(r"Connected to Spark cluster with app ID (app-[0-9]+-[0-9]+)")
DRIVER_ID = re.compile(
    r"(?:Submission successfully created as|Driver successfully submitted as) "
    r"(driver-[0-9]+-[0-9]+)"
)

_CHUNK = 1 << 20  # read at most this much per scan: a poll must stay quick


def find_app_id(text: str) -> str | None:
    m = APP_ID.search(text)
    return m.group(1) if m else None


def find_driver_id(text: str) -> str | None:
    m = DRIVER_ID.search(text)
    return m.group(1) if m else None


class LogTail:
    """Reads a growing log file incrementally and remembers the ids it has seen.

    ``scan()`` reads what was appended since the last scan (up to 1 MiB at a time), whole
    lines only (a line still being written is read again next time). A missing file is
    simply not there yet.
    """

    def __init__(self, path: str | Path, offset: int = 0):
        self.path = Path(path)
        self.offset = offset
        self.app_id: str | None = None
        self.driver_id: str | None = None

    def scan(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(_CHUNK)
        except FileNotFoundError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            if len(data) < _CHUNK:
                return
            end = len(data) - 1  # one enormous line: skip it rather than stall on it
        text = data[: end + 1].decode("utf-8", "replace")
        self.offset += end + 1
        self.app_id = self.app_id or find_app_id(text)
        self.driver_id = self.driver_id or find_driver_id(text)
