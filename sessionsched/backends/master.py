"""Talking to a standalone master and its workers over HTTP (httpx, bounded timeouts).

* ``read()``: the master's ``/json/`` and every alive worker's ``/json/`` as a ClusterView.
  An unreachable master is a BackendError; the workers' lists are read again once older than
  the age asked for (on the client's ``clock``) or when a worker appears, and a worker that
  does not answer keeps its last known list (a slow worker must not make executors seem to
  come and go; a new one has none until it answers).
* The master's REST submission server (``create``/``kill``): cluster deploy mode drivers.
  Its URL is given, or read once from the master's UI page ("REST URL: spark://H:P"), which
  shows it only when ``spark.master.rest.enabled=true``.
* ``driver_log()``: the head of a cluster-mode driver's stderr, through its worker's
  ``/log/`` endpoint (the driver runs on the worker's machine, not ours).

Environment proxies are ignored (``trust_env=False``): the cluster is addressed directly.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import httpx

from .base import BackendError, BackendUnavailable
from .clusterview import (
    ClusterView,
    ExecutorInfo,
    MasterView,
    parse_master,
    parse_worker_executors,
)

_REST_URL = re.compile(r"REST URL:</strong>\s*spark://([^\s<]+)")


def http_url(spark_url: str) -> str:
    """``spark://host:port`` -> ``http://host:port`` (the REST server speaks HTTP)."""
    if not spark_url.startswith("spark://"):
        raise ValueError(f"not a spark:// URL: {spark_url!r}")
    return "http://" + spark_url[len("spark://"):].rstrip("/")


# A create or kill is not given up after the reads' few seconds: the master may still carry it
# out (a busy master has been seen answering a create after more than 3 s, and the driver it
# launched then ran unknown to the scheduler).
WRITE_TIMEOUT_S = 30.0


class AnswerLost(BackendError):
    """A create or kill reached the master's REST server but its answer was lost (timed out,
    the connection broke): the master may have carried it out."""


class MasterClient:
    def __init__(self, master_ui: str, rest_url: str | None = None, timeout_s: float = 3.0,
                 write_timeout_s: float = WRITE_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic):
        """``clock``: seconds, for the age of the workers' executor lists (``read``)."""
        self.master_ui = master_ui.rstrip("/")
        self._rest_url = rest_url.rstrip("/") if rest_url else None
        self.write_timeout_s = write_timeout_s
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 2.0)),
            trust_env=False,
            follow_redirects=True,
        )
        self._executors: dict[str, tuple[ExecutorInfo, ...]] = {}  # worker id -> last list
        self._executors_read_at = -1e18
        self._clock = clock

    def close(self) -> None:
        self._http.close()

    # --- reading ----------------------------------------------------------------------------

    def _get_json(self, url: str, what: str) -> object:
        try:
            response = self._http.get(url)
        except httpx.HTTPError as e:
            raise BackendError(f"cannot reach the {what} at {url}: {_reason(e)}") from None
        if response.status_code != 200:
            raise BackendError(f"the {what} at {url} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:  # e.g. a starting UI: it listens before /json/ is attached
            raise BackendError(f"the {what} at {url} did not answer JSON") from None

    def read_master(self) -> MasterView:
        """The master's own view. Raises BackendError if it cannot be read."""
        url = f"{self.master_ui}/json/"
        try:
            return parse_master(self._get_json(url, "Spark master"))
        except ValueError as e:
            raise BackendError(f"unexpected answer from the Spark master at {url}: {e}") from None

    def read(self, executors_max_age_s: float = 0.0) -> ClusterView:
        """The whole cluster. The master is read now (BackendError if it cannot be); the
        workers' executor lists are re-read when older than ``executors_max_age_s``. A worker
        that does not answer keeps its last known list: a slow worker must not make executors
        seem to come and go."""
        master = self.read_master()
        now = self._clock()
        alive = {w.id: w for w in master.alive_workers()}
        stale = now - self._executors_read_at >= executors_max_age_s
        if stale or alive.keys() - self._executors.keys():
            self._executors_read_at = now
            for worker in alive.values():
                try:
                    data = self._get_json(f"{worker.webui.rstrip('/')}/json/", "Spark worker")
                    self._executors[worker.id] = parse_worker_executors(data, worker.id)
                except (BackendError, ValueError):
                    self._executors.setdefault(worker.id, ())
        for gone in self._executors.keys() - alive.keys():
            del self._executors[gone]  # a dead worker's executors are dead
        executors = tuple(e for wid in alive for e in self._executors.get(wid, ()))
        return ClusterView(master, executors)

    def driver_log(self, view: ClusterView, driver_id: str, max_bytes: int = 256 * 1024) -> str:
        """The first ``max_bytes`` of a cluster-mode driver's stderr; "" if not readable now."""
        driver = view.master.driver(driver_id)
        worker = view.master.worker(driver.worker_id) if driver else None
        if worker is None:
            return ""
        url = f"{worker.webui.rstrip('/')}/log/"
        params = {"driverId": driver_id, "logType": "stderr", "offset": 0,
                  "byteLength": max_bytes}
        try:
            response = self._http.get(url, params=params)
        except httpx.HTTPError:
            return ""
        return response.text if response.status_code == 200 else ""

    # --- the REST submission server -------------------------------------------------------

    def rest_url(self) -> str:
        """The master's REST server, ``http://host:port``. Raises BackendError if it has none."""
        if self._rest_url is None:
            try:
                page = self._http.get(f"{self.master_ui}/")
            except httpx.HTTPError as e:  # a read: nothing was asked of the master yet
                raise BackendUnavailable(
                    f"cannot reach the Spark master at {self.master_ui}: {_reason(e)}"
                ) from None
            m = _REST_URL.search(page.text)
            if m is None:
                raise BackendError(
                    f"the Spark master at {self.master_ui} has no REST submission server "
                    "(start it with spark.master.rest.enabled=true); cluster deploy mode "
                    "needs it"
                )
            self._rest_url = f"http://{m.group(1)}"
        return self._rest_url

    def _post(self, path: str, body: dict | None) -> dict:
        url = f"{self.rest_url()}{path}"
        try:
            response = self._http.post(url, json=body, timeout=self.write_timeout_s)
        except httpx.HTTPError as e:
            # Not connected: the request never reached the master. Any later failure (an
            # answer that timed out) may come after the master acted on it.
            unsent = isinstance(e, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
            raise (BackendUnavailable if unsent else AnswerLost)(
                f"cannot reach the Spark master's REST server at {url}: {_reason(e)}"
            ) from None
        try:
            data = response.json()
        except ValueError:
            # 503: the master's REST server says it cannot take requests now.
            raise (BackendUnavailable if response.status_code == 503 else BackendError)(
                f"the Spark master's REST server at {url} answered HTTP {response.status_code} "
                "without JSON"
            ) from None
        if not isinstance(data, dict):
            raise BackendError(f"the Spark master's REST server at {url} answered {data!r}")
        return data

    def create(self, request: dict) -> str:
        """Submit a CreateSubmissionRequest; the master's driver id. BackendError if refused."""
        data = self._post("/v1/submissions/create", request)
        driver_id = data.get("submissionId")
        if data.get("success") is not True or not isinstance(driver_id, str):
            # The master's message may carry a Java stack trace after its first line.
            message = str(data.get("message") or data).strip().splitlines()[0]
            raise BackendError(f"the Spark master refused the submission: {message}")
        return driver_id

    def kill(self, driver_id: str) -> bool:
        """Ask the master to kill a driver. False if it had already finished or is unknown."""
        data = self._post(f"/v1/submissions/kill/{driver_id}", None)
        return data.get("success") is True


def _reason(e: httpx.HTTPError) -> str:
    if isinstance(e, httpx.TimeoutException):
        return "timed out"
    if isinstance(e, httpx.ConnectError):
        return "connection refused" if "refused" in str(e).lower() else (str(e) or "cannot connect")
    return str(e) or type(e).__name__
