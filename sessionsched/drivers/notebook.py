"""Notebook sessions: ``sessionsched.session(...)`` waits for admission and returns a SparkSession.

    import sessionsched
    spark = sessionsched.session("analyst-a", queue="root.default", priority=5000)
    spark.range(10).count()
    spark.sessionsched.set_priority(10000)   # the scheduler re-arbitrates executors at once
    spark.stop()                             # ends the session on the scheduler too

Steps:
  1. ``POST /api/v1/sessions`` registers the session as an app of kind ``session``;
  2. the notebook polls ``GET /api/v1/apps/{id}`` and shows its place in the queue until the
     scheduler admits it (state STARTING) -- a terminal state raises ``SessionError`` with the
     scheduler's reason; a timeout or Ctrl-C withdraws the session (kill) and re-raises;
  3. a SparkSession is built in this process against the master of the cluster it was placed
     on (``master_of``) with dynamic allocation on and what the agent needs for the
     queue's reclaim mode (``agent.launch``), and the agent is attached to its SparkContext.
     The notebook's driver then behaves like any managed app: its executors are capped at the
     scheduler's grant, reclaimed on order, and -- through Spark's own
     ``spark.dynamicAllocation.executorIdleTimeout`` (60 s unless ``conf`` says otherwise) --
     given back when the notebook sits idle, and asked for again by the next job;
  4. ``spark.stop()`` (or ``spark.sessionsched.stop()``, or the kernel exiting) stops Spark and
     ends the session with ``POST /api/v1/sessions/{id}/stop``. If the scheduler kills the
     session, the agent stops the SparkContext.

Only one SparkSession per process (Spark's rule): ``session`` refuses to start while another
SparkContext is active rather than silently returning it.
"""

from __future__ import annotations

import atexit
import logging
import math
import sys
import time
from collections.abc import Mapping
from typing import Any

from ..client import (
    ApiError,
    App,
    SchedulerClient,
    SchedulerError,
    default_ca,
    default_server,
    default_token,
)
from ..model import AppState

log = logging.getLogger("sessionsched.notebook")

POLL_S = 0.5


class SessionError(RuntimeError):
    """The session could not be started; ``str()`` says why (the scheduler's reason)."""


def session(
    app_name: str,
    queue: str | None = None,
    priority: int | None = None,
    server: str | None = None,
    token: str | None = None,
    conf: dict[str, str] | None = None,
    *,
    wait_s: float = 3600.0,
    progress: bool = True,
):
    """Wait for admission, then return a SparkSession with the agent attached (module doc).

    ``conf``: Spark properties for the session (they win over what sessionsched adds).
    ``wait_s``: how long to wait in the queue before withdrawing the session.

    An argument this side can tell is wrong (a ``conf`` that is no mapping of properties, a
    ``wait_s`` that is no number of seconds) is a ``TypeError`` or ``ValueError`` raised before
    anything is submitted; the scheduler's refusals (a queue, a priority) are ``SessionError``.
    """
    from pyspark import SparkContext

    if server is not None and not isinstance(server, str):
        raise TypeError(f"server: expected a URL such as http://host:6066, not "
                        f"{type(server).__name__} {server!r}")
    wait_s = _seconds("wait_s", wait_s)
    user_conf = _conf(conf)
    if SparkContext._active_spark_context is not None:
        raise SessionError("a SparkContext is already running in this process; stop it first")
    server = (server or default_server()).rstrip("/")
    try:  # --token's order: the argument, $SESSIONSCHED_TOKEN, the user's client file
        token = token or default_token()
        client = SchedulerClient(server, token, ca=default_ca())
    except SchedulerError as e:
        raise SessionError(str(e)) from None
    body = {"name": app_name, "queue": queue, "priority": priority, "conf": user_conf}
    try:
        app = client._json("POST", "/api/v1/sessions", json=body)
    except SchedulerError as e:
        client.close()
        # only an answer is a refusal: no server there, or no URL, says so in its own words
        said = f"the scheduler refused the session: {e}" if isinstance(e, ApiError) else str(e)
        raise SessionError(said) from None
    handle = Session(client, app["id"], server, token)
    try:
        handle.wait_for_admission(wait_s, _Progress(app_name) if progress else None)
        handle.start_spark(app_name, user_conf)
    except BaseException:
        handle._abandon()
        raise
    return handle.spark


def _seconds(name: str, value: Any) -> float:
    """A wait in seconds: NaN would never run out (a session queued for good), and a wait
    that is no number would fail only after the session was submitted."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name}: expected a number of seconds, not {type(value).__name__} "
                        f"{value!r}")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name}: expected a number of seconds >= 0, not {value!r}")
    return float(value)


def _conf(conf: Any) -> dict[str, str]:
    """Spark properties as text, the way Spark writes them: a bool as true/false (Python's
    str() would give "True"), a number as itself; None or an object is no property value."""
    if conf is None:
        return {}
    if not isinstance(conf, Mapping):
        raise TypeError(f"conf: expected a mapping of Spark properties (a dict), not "
                        f"{type(conf).__name__}")
    out = {}
    for key, value in conf.items():
        if not isinstance(key, str):
            raise TypeError(f"conf: a property name must be a string, not "
                            f"{type(key).__name__} {key!r}")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif not isinstance(value, str | int | float):
            raise TypeError(f"conf: {key} must be a string or a number, not "
                            f"{type(value).__name__} {value!r}")
        out[key] = str(value)
    return out


class Session:
    """A notebook session on the scheduler; reachable as ``spark.sessionsched``."""

    def __init__(self, client: SchedulerClient, app_id: str, server: str, token: str | None):
        self.client = client
        self.app_id = app_id
        self.server = server
        self.token = token
        self.spark = None
        self.agent = None
        self.ended = False

    # --- what a notebook user calls ------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The app object (docs/user/api.md): state, executors, target, demand, priority..."""
        return self.client.app(self.app_id).raw

    def set_priority(self, priority: int) -> dict[str, Any]:
        return self.client.set_priority(self.app_id, priority).raw

    def stop(self, exit_code: int = 0) -> None:
        """Stop Spark and end the session on the scheduler. Safe to call more than once."""
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            # checked before anything stops: the scheduler would refuse the code after Spark
            # had stopped, and the session be left open until its timeout
            raise TypeError(f"exit_code: expected a whole number, not "
                            f"{type(exit_code).__name__} {exit_code!r}")
        if self.ended:
            return
        self.ended = True
        if self.agent is not None:
            self.agent.stop()
        if self.spark is not None:
            try:
                type(self.spark).stop(self.spark)
            except Exception as e:
                log.warning("stopping the SparkSession failed: %s", e)
        try:
            self.client._json("POST", f"/api/v1/sessions/{self.app_id}/stop",
                              json={"exit_code": exit_code})
        except SchedulerError as e:  # already ended (killed), or the server is gone
            log.info("session %s: stop not recorded: %s", self.app_id, e)
        self.client.close()

    # --- steps ------------------------------------------------------------------------------

    def wait_for_admission(self, wait_s: float, progress: _Progress | None) -> None:
        started = time.monotonic()
        try:
            while True:
                app = self.client.app(self.app_id)
                if app.state.terminal:
                    raise SessionError(
                        f"session {self.app_id} ended before it started: {app.state.value}"
                        f" ({app.reason or 'no reason given'})"
                    )
                if app.state in (AppState.STARTING, AppState.RUNNING):
                    if progress:
                        progress.done(f"admitted after {time.monotonic() - started:.1f}s")
                    return
                if progress:
                    where = f"position {app.position}" if app.position else "queued"
                    progress.update(f"waiting in {app.queue}: {where} - {app.reason or ''}")
                if time.monotonic() - started > wait_s:
                    raise TimeoutError(f"session {self.app_id} not admitted within {wait_s:g}s")
                time.sleep(POLL_S)
        finally:
            if progress:
                progress.close()

    def start_spark(self, app_name: str, user_conf: dict[str, str]) -> None:
        from pyspark.sql import SparkSession

        from ..agent.attach import attach
        from ..agent.launch import agent_conf, dynamic_allocation_conf

        app = self.client.app(self.app_id)
        master, queue = master_of(self.client, app), app.queue
        rows = {q.name: q.raw for q in self.client.queues()}
        reclaim_timeout_s = float(rows.get(queue, {}).get("reclaim_timeout") or 0)
        conf, warnings = dynamic_allocation_conf(user_conf)
        extra, more = agent_conf(user_conf, reclaim_timeout_s)
        for w in warnings + more:
            log.warning("session %s: %s", self.app_id, w)
        conf.update(extra)
        conf.update(user_conf)
        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in conf.items():
            builder = builder.config(key, value)
        self.spark = builder.getOrCreate()
        self.agent = attach(self.spark.sparkContext, self.app_id, self.server, self.token,
                            ca=default_ca())
        self.spark.sessionsched = self
        self.spark.stop = self.stop  # the instance's stop ends the session as well
        atexit.register(self.stop)

    def _abandon(self) -> None:
        """Admission failed or was interrupted: withdraw the session, stop what started."""
        try:
            state = self.client.app(self.app_id).state
            if not state.terminal:
                if self.spark is None and state is AppState.ACCEPTED:
                    self.client.kill(self.app_id)
                else:
                    self.stop(exit_code=1)
                    return
        except SchedulerError as e:
            log.warning("session %s: could not withdraw it: %s", self.app_id, e)
        if self.spark is not None:
            type(self.spark).stop(self.spark)
        self.client.close()


def master_of(client: SchedulerClient, app: App) -> str:
    """The Spark master a session's driver connects to: behind several clusters that of the
    cluster the scheduler placed it on (``GET /api/v1/cluster``), else the one cluster's
    (``GET /api/v1/health``)."""
    cluster = app.raw.get("cluster")
    if cluster is None:
        master = client._json("GET", "/api/v1/health").get("master")
    else:
        rows = client.cluster().get("clusters") or []
        master = next((r.get("master") for r in rows if r["name"] == cluster), None)
    if not master:
        where = f" of cluster {cluster}" if cluster else ""
        raise SessionError(f"the scheduler did not say which Spark master{where} to use")
    return master


class _Progress:
    """One status line while waiting: rich's spinner in a terminal, an updating line in
    Jupyter (IPython's display, no widgets needed), else a printed line per change."""

    def __init__(self, name: str):
        self.name = name
        self.last = ""
        self._status = self._display = None
        try:
            from rich.console import Console

            console = Console(stderr=True)
            if console.is_terminal and not console.is_jupyter:
                self._status = console.status(f"{name}: submitting")
                self._status.start()
        except Exception:
            self._status = None

    def update(self, text: str) -> None:
        if text == self.last:
            return
        self.last = text
        line = f"{self.name}: {text}"
        if self._status is not None:
            self._status.update(line)
            return
        if self._jupyter_update(line):
            return
        print(line, file=sys.stderr, flush=True)

    def done(self, text: str) -> None:
        self.update(text)

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()
            print(f"{self.name}: {self.last}", file=sys.stderr, flush=True)

    def _jupyter_update(self, line: str) -> bool:
        ipython = sys.modules.get("IPython")
        if ipython is None or getattr(ipython, "get_ipython", lambda: None)() is None:
            return False
        from IPython.display import display

        if self._display is None:
            self._display = display(line, display_id=True)
        else:
            self._display.update(line)
        return True
