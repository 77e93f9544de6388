"""Attaching the agent to a SparkContext.

``install()`` wraps ``pyspark.SparkContext.__init__`` so that every SparkContext the driver
creates -- ``SparkSession.builder.getOrCreate()``, ``SparkContext.getOrCreate()``, a plain
``SparkContext(...)`` -- gets an agent the moment it is constructed, before the user's first
job, with the identity the launcher put in the environment (``SESSIONSCHED_APP_ID``,
``SESSIONSCHED_SERVER``, optional ``SESSIONSCHED_TOKEN`` and ``SESSIONSCHED_CA``: the CA file
to verify an HTTPS server with, from ``server.tls.ca``; behind several clusters
``SESSIONSCHED_ATTEMPT``, which every report carries). Wrapping the constructor, rather
than polling for an active context, is what guarantees the cap is in place before dynamic
allocation can ask for anything. A context stopped and created again gets a new agent.

``SparkContext.stop`` is wrapped too (by both forms): once the context is stopped, its live
agent sends one last report -- no executors, looked at when the stop was called
(``Agent.ended``) -- so that the usage figures end where Spark's own record of the app does.

``attach(sc, ...)`` is the explicit form (the notebook API uses it). Both never raise: a failure
to attach is logged and the app runs on unmanaged.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time

from .agent import Agent
from .spark_control import SparkControl
from .stages import StageReader
from .transport import JsonClient

log = logging.getLogger("sessionsched.agent")

ENV_APP_ID = "SESSIONSCHED_APP_ID"
ENV_SERVER = "SESSIONSCHED_SERVER"
ENV_TOKEN = "SESSIONSCHED_TOKEN"
ENV_CA = "SESSIONSCHED_CA"
ENV_ATTEMPT = "SESSIONSCHED_ATTEMPT"  # the launch's attempt, behind several clusters
_ATTR = "_sessionsched_agent"
_lock = threading.Lock()


def attach(
    sc,
    app_id: str | None = None,
    server: str | None = None,
    token: str | None = None,
    heartbeat_s: float = 1.0,
    ca: str | None = None,
) -> Agent | None:
    """Start an agent for ``sc`` (arguments default to the environment). Returns the agent, the
    one already attached, or None when there is no identity or attaching failed."""
    app_id = app_id or os.environ.get(ENV_APP_ID)
    server = server or os.environ.get(ENV_SERVER)
    token = token or os.environ.get(ENV_TOKEN) or None
    ca = ca or os.environ.get(ENV_CA) or None
    if not app_id or not server:
        return None
    with _lock:
        existing = getattr(sc, _ATTR, None)
        if existing is not None and existing.alive:
            return existing
        started = time.perf_counter()
        try:
            control = SparkControl(sc)
            agent = Agent(
                control,
                JsonClient(server, token, timeout_s=5.0, ca=ca, stamp=attempt_stamp()),
                app_id,
                spark_app_id=sc.applicationId,
                spark_version=sc.version,
                heartbeat_s=heartbeat_s,
                stages=StageReader(sc),
                on_terminal=lambda state: _stop_context(sc),
            )
            agent.start()
            _wrap_stop()
        except Exception as e:
            log.warning("sessionsched agent: could not attach to the SparkContext (%s); "
                        "the app runs unmanaged", e)
            return None
        setattr(sc, _ATTR, agent)
        # What the agent cost the driver's start (it registers from its own thread).
        log.info("sessionsched agent: %s attached in %.3f s (control %s)", app_id,
                 time.perf_counter() - started, control.probe.control)
        return agent


def attempt_stamp() -> dict:
    """What each report says of the driver's attempt: the launch's, if it gave one."""
    attempt = os.environ.get(ENV_ATTEMPT, "")
    return {"attempt": int(attempt)} if attempt.isdigit() and int(attempt) > 0 else {}


def current() -> Agent | None:
    """The agent of the active SparkContext, if any."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    return getattr(sc, _ATTR, None) if sc is not None else None


def detach(release: bool = True) -> None:
    """Stop the active context's agent; with ``release`` the app gets its own maxExecutors back."""
    agent = current()
    if agent is not None:
        agent.stop(release=release)


def install() -> None:
    """Attach an agent to every SparkContext created from now on (and to one already active)."""
    from pyspark import SparkContext

    init = SparkContext.__init__
    if getattr(init, "_sessionsched_wrapped", False):
        return

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            attach(self)
        except Exception as e:  # attach() does not raise; this guards the guard
            log.warning("sessionsched agent: attach failed: %s", e)

    __init__._sessionsched_wrapped = True
    SparkContext.__init__ = __init__
    _wrap_stop()
    active = SparkContext._active_spark_context
    if active is not None:
        attach(active)


def _wrap_stop() -> None:
    """``SparkContext.stop`` tells the context's live agent when it was called, once done."""
    from pyspark import SparkContext

    stop = SparkContext.stop
    if getattr(stop, "_sessionsched_wrapped", False):
        return

    @functools.wraps(stop)
    def wrapped(self, *args, **kwargs):
        agent = getattr(self, _ATTR, None)
        live = agent is not None and agent.alive  # a detached agent stays silent
        at = time.time()
        try:
            return stop(self, *args, **kwargs)
        finally:
            if live:
                try:
                    agent.ended(at)
                except Exception as e:  # ended() does not raise; this guards the guard
                    log.warning("sessionsched agent: the last report failed: %s", e)

    wrapped._sessionsched_wrapped = True
    SparkContext.stop = wrapped


def _stop_context(sc) -> None:
    try:
        sc.stop()
    except Exception as e:
        log.warning("sessionsched agent: stopping the SparkContext failed: %s", e)
