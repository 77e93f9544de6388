"""Driving a StandaloneBackend in tests: poll it and keep every event, per app."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sessionsched.backends.local import LocalCluster
from sessionsched.backends.standalone import StandaloneBackend
from sessionsched.engine.events import (
    CapacityChanged,
    DriverExited,
    DriverStarted,
    Event,
    ExecutorsChanged,
)
from tests.sparkcluster import wait_until


def make_backend(cluster: LocalCluster, run_dir: Path, **kwargs) -> StandaloneBackend:
    return StandaloneBackend(cluster.master_url, cluster.master_ui, run_dir, driver_slots=4,
                             rest_url=kwargs.pop("rest_url", cluster.rest_url), **kwargs)


@dataclass
class Seen:
    """Everything a backend reported, with the wall time it was seen at."""

    events: list[tuple[float, Event]] = field(default_factory=list)

    def of(self, app_id: str, kind: type | None = None) -> list[tuple[float, Event]]:
        return [(t, e) for t, e in self.events
                if getattr(e, "app_id", None) == app_id and (kind is None or isinstance(e, kind))]

    def exit_code(self, app_id: str) -> int | None:
        exits = self.of(app_id, DriverExited)
        return exits[0][1].exit_code if exits else None

    def spark_app_id(self, app_id: str) -> str | None:
        started = self.of(app_id, DriverStarted)
        return started[0][1].spark_app_id if started else None

    def max_executors(self, app_id: str) -> int:
        return max((len(e.executors) for _, e in self.of(app_id, ExecutorsChanged)), default=0)

    def timeline(self) -> str:
        """The events one per line, seconds from the first: for failure messages."""
        t0 = self.events[0][0] if self.events else 0.0
        return "\n".join(f"{t - t0:7.2f} {e}" for t, e in self.events)

    def capacities(self) -> list[CapacityChanged]:
        return [e for _, e in self.events if isinstance(e, CapacityChanged)]

    def first(self, app_id: str, kind: type,
              pred: Callable[[Event], bool] = lambda e: True) -> tuple[int, float] | None:
        """(position among all events, time seen) of the first such event, or None."""
        return next(((i, t) for i, (t, e) in enumerate(self.events)
                     if getattr(e, "app_id", None) == app_id and isinstance(e, kind)
                     and pred(e)), None)


def poll_until(backend: StandaloneBackend, seen: Seen, done: Callable[[Seen], bool],
               timeout_s: float, what: str) -> Seen:
    """Poll every 0.2 s, recording events, until ``done(seen)``; fail after ``timeout_s``."""

    def step() -> bool:
        now = time.time()
        seen.events.extend((now, e) for e in backend.poll(now))
        return done(seen)

    wait_until(step, timeout_s, what)
    return seen


def exited(*app_ids: str) -> Callable[[Seen], bool]:
    return lambda seen: all(seen.exit_code(a) is not None for a in app_ids)


def spark_app_id_in_log(log: Path) -> str | None:
    """The id the app printed itself (``SPARK_APP_ID ...``): the truth to compare with."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("SPARK_APP_ID "):
            return line.split()[1]
    return None
