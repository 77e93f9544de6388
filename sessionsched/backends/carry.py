"""Carrying out the engine's decisions on a cluster backend: one function for the server and
the simulator, so both act on a step's decisions the same way.

Order, giving back before taking: every ``StopDriver`` first (a stopped driver's slot or
cores may be what a launch in the same step is admitted into), then every ``LaunchDriver`` in
the engine's order, then ``SetTarget`` and ``Reclaim`` together through ``backend.steer``
(on a real cluster a no-op: the driver agent picks its grant and orders up at its next
heartbeat; the memory cluster's drivers obey at once, and a launch waiting for room there
gets the room a reclaim frees before any grown app's new executors do).

Nothing here raises for a backend's failure: a launch that fails in any way is reported in
``Carried.failed`` (the caller ends the app, e.g. with ``DriverExited(app, -1)``); a stop or
steer that fails is logged (the kill is recorded; the cluster's view follows).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..engine.events import Decision, LaunchDriver, Reclaim, SetTarget, StopDriver
from .base import BackendError, ClusterBackend, Handle, Launch

log = logging.getLogger("sessionsched.backend")


@dataclass
class Carried:
    """``launched``: (app id, handle, log path) per driver started; ``failed``: (app id, one-line
    reason) per launch that could not be made."""

    launched: list[tuple[str, Handle, str | None]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def carry_out(
    decisions: Sequence[Decision],
    backend: ClusterBackend,
    launch_for: Callable[[str], Launch | None],
) -> Carried:
    """Carry out one step's decisions (module doc). ``launch_for(app_id)``: the Launch to start
    for a LaunchDriver, or None when there is nothing to launch here (a notebook session: its
    notebook starts its own driver)."""
    carried = Carried()
    for d in decisions:
        if isinstance(d, StopDriver):
            try:
                backend.stop(d.app_id)
            except Exception as e:  # noqa: BLE001 - the kill is recorded; the cluster follows
                log.error("could not stop %s's driver: %s", d.app_id, one_line(e))
    for d in decisions:
        if isinstance(d, LaunchDriver):
            _launch(d.app_id, backend, launch_for, carried)
    steering = [d for d in decisions if isinstance(d, SetTarget | Reclaim)]
    if steering:
        try:
            backend.steer(steering)
        except Exception:  # noqa: BLE001 - the agents' heartbeats carry the same orders
            log.exception("backend could not steer the drivers")
    return carried


def _launch(app_id: str, backend: ClusterBackend, launch_for: Callable[[str], Launch | None],
            carried: Carried) -> None:
    try:
        launch = launch_for(app_id)
        if launch is None:
            return
        handle = backend.launch(launch)
    except Exception as e:  # noqa: BLE001 - whatever went wrong, the app must not hang
        if not isinstance(e, BackendError | OSError | ValueError):
            log.exception("backend failed to launch %s", app_id)
        log.error("launch of %s failed: %s", app_id, one_line(e))
        carried.failed.append((app_id, one_line(e)))
        return
    carried.launched.append((app_id, handle, launch.log_path))


def one_line(e: BaseException) -> str:
    """The exception as one line for a user: its first line, else its type's name."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
