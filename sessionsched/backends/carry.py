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

With ``retries`` (the server's), a launch that fails for a transient reason
(``BackendUnavailable``: the master could not be reached, nothing was started) is not failed
at once: it is tried again after ``LaunchRetry.first_s``, then twice as long each time, at
most ``attempts`` tries in all; then the app fails with the last reason and the count. A
permanent refusal (bad arguments, a master that refused the submission) fails at once. (A
create whose answer was lost is the backend's to settle: the standalone backend looks for the
driver and adopts it, or fails the launch as ``BackendUnavailable`` when none runs.) The app
stays STARTING meanwhile (it holds its StateAware place); the caller adds ``retries.due(now)``
to a later step's launches. The server writes each wait to the store (``Retries.waiting``)
and puts it back after a restart (``Retries.resume``), so a restart during the back-off goes
on with the same count.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..engine.events import Decision, LaunchDriver, Reclaim, SetTarget, StopDriver
from .base import BackendError, BackendUnavailable, ClusterBackend, Handle, Launch

log = logging.getLogger("sessionsched.backend")


@dataclass
class Carried:
    """``launched``: (app id, handle, log path) per driver started; ``failed``: (app id, one-line
    reason) per launch that could not be made; ``retrying``: (app id, one line: why, which
    attempt, when the next) per launch tried again later."""

    launched: list[tuple[str, Handle, str | None]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    retrying: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class LaunchRetry:
    """Back-off for transient launch failures: waits of ``first_s``, ``first_s * factor``, ...
    (at most ``max_s``) between at most ``attempts`` tries. Defaults: 1, 2, 4, 8, 16 s: a
    master restarting within half a minute loses no launch."""

    first_s: float = 1.0
    factor: float = 2.0
    max_s: float = 30.0
    attempts: int = 6


@dataclass
class Waiting:
    """A launch waiting to be tried again: ``tries`` failed so far, the next at ``at``."""

    tries: int
    at: float

    def to_json(self) -> dict:
        return {"tries": self.tries, "at": self.at}

    @staticmethod
    def from_json(data: dict) -> Waiting:
        """ValueError if ``data`` is not what ``to_json`` wrote."""
        try:
            return Waiting(int(data["tries"]), float(data["at"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a launch wait: {data!r}") from e


class Retries:
    """Launches waiting to be tried again (transient failures), by app."""

    def __init__(self, policy: LaunchRetry = LaunchRetry()):
        self.policy = policy
        self._waiting: dict[str, Waiting] = {}

    def failed(self, app_id: str, why: str, now: float) -> tuple[bool, str]:
        """A transient failure of ``app_id``'s launch: (tried again?, one line saying so)."""
        w = self._waiting.get(app_id) or Waiting(0, now)
        w.tries += 1
        if w.tries >= self.policy.attempts:
            self._waiting.pop(app_id, None)
            return False, f"{why} (gave up after {w.tries} attempts)"
        wait_s = min(self.policy.max_s, self.policy.first_s * self.policy.factor ** (w.tries - 1))
        w.at = now + wait_s
        self._waiting[app_id] = w
        return True, f"{why}; attempt {w.tries} of {self.policy.attempts}, next in {wait_s:g}s"

    def waiting(self, app_id: str) -> Waiting | None:
        """How ``app_id``'s launch waits, if it does."""
        return self._waiting.get(app_id)

    def resume(self, app_id: str, wait: Waiting) -> None:
        """Wait as before a restart: the count goes on, the next try at the same time."""
        self._waiting[app_id] = Waiting(wait.tries, wait.at)

    def due(self, now: float) -> list[LaunchDriver]:
        """The launches to try again now, by app (their terms are the caller's to have the
        engine decide again: ``agent_terms.launch_decision``)."""
        return [LaunchDriver(a) for a, w in self._waiting.items() if w.at <= now]

    def drop(self, app_ids: Iterable[str]) -> None:
        """These apps no longer wait (launched, ended, killed)."""
        for app_id in app_ids:
            self._waiting.pop(app_id, None)

    def __contains__(self, app_id: object) -> bool:
        return app_id in self._waiting


def carry_out(
    decisions: Sequence[Decision],
    backend: ClusterBackend,
    launch_for: Callable[[LaunchDriver], Launch | None],
    retries: Retries | None = None,
    now: float = 0.0,
) -> Carried:
    """Carry out one step's decisions (module doc). ``launch_for(decision)``: the Launch to
    start for a LaunchDriver (on its terms), or None when there is nothing to launch here (a
    notebook session: its notebook starts its own driver). ``retries``: transient launch
    failures wait there (at ``now``) instead of failing."""
    carried = Carried()
    for d in decisions:
        if isinstance(d, StopDriver):
            try:
                backend.stop(d.app_id)
            except Exception as e:  # noqa: BLE001 - the kill is recorded; the cluster follows
                log.error("could not stop %s's driver: %s", d.app_id, error_line(e))
    for d in decisions:
        if isinstance(d, LaunchDriver):
            _launch(d, backend, launch_for, carried, retries, now)
    steering = [d for d in decisions if isinstance(d, SetTarget | Reclaim)]
    if steering:
        try:
            backend.steer(steering)
        except Exception:  # noqa: BLE001 - the agents' heartbeats carry the same orders
            log.exception("backend could not steer the drivers")
    return carried


def _launch(d: LaunchDriver, backend: ClusterBackend,
            launch_for: Callable[[LaunchDriver], Launch | None], carried: Carried,
            retries: Retries | None, now: float) -> None:
    app_id = d.app_id
    try:
        launch = launch_for(d)
        if launch is None:
            return
        handle = backend.launch(launch)
    except Exception as e:  # noqa: BLE001 - whatever went wrong, the app must not hang
        if not isinstance(e, BackendError | OSError | ValueError):
            log.exception("backend failed to launch %s", app_id)
        why = error_line(e)
        if retries is not None and isinstance(e, BackendUnavailable):
            again, why = retries.failed(app_id, why, now)
            if again:
                log.warning("launch of %s failed: %s", app_id, why)
                carried.retrying.append((app_id, why))
                return
        log.error("launch of %s failed: %s", app_id, why)
        carried.failed.append((app_id, why))
        return
    if retries is not None:
        retries.drop([app_id])
    carried.launched.append((app_id, handle, launch.log_path))


def error_line(e: BaseException) -> str:
    """The exception as one line for a user: its first line, else its type's name."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
