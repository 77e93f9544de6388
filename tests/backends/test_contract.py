"""The cluster backend contract (``sessionsched/backends/base.py``), one suite for every
backend: ``memory`` always, ``standalone`` on the session's real Spark cluster (marked
``cluster``). What a backend must provide to run it: ``conftest.py``'s docstring."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest

from sessionsched.backends.base import BackendError, ClusterBackend
from sessionsched.engine.events import (
    CapacityChanged,
    DriverExited,
    DriverStarted,
    Event,
    ExecutorsChanged,
    SetTarget,
)
from tests.backends.conftest import EXTERNAL_CORES, Rig


@dataclass
class Watch:
    """Polls one backend on the rig's clock and keeps every event."""

    rig: Rig
    backend: ClusterBackend
    events: list[Event] = field(default_factory=list)

    def poll(self) -> list[Event]:
        got = self.backend.poll(self.rig.clock.now())
        self.events.extend(got)
        return got

    def until(self, done: Callable[[Watch], bool], what: str) -> None:
        """Poll until ``done(self)``; fail after the rig's patience, in its clock's seconds."""
        clock = self.rig.clock
        deadline = clock.now() + self.rig.patience_s
        while True:
            self.poll()
            if done(self):
                return
            if clock.now() >= deadline:
                pytest.fail(f"{self.rig.name}: timed out waiting for {what}; saw "
                            f"{[e for e in self.events if not isinstance(e, CapacityChanged)]}")
            clock.sleep(self.rig.poll_every_s)

    def of(self, app_id: str, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind) and e.app_id == app_id]

    def index(self, app_id: str, kind: type, pred=lambda e: True) -> int:
        return next(i for i, e in enumerate(self.events)
                    if isinstance(e, kind) and e.app_id == app_id and pred(e))

    def exit_code(self, app_id: str) -> int | None:
        exits = self.of(app_id, DriverExited)
        return exits[0].exit_code if exits else None

    def executors(self, app_id: str) -> int:
        """The app's executors as last reported (0 before any report)."""
        changes = self.of(app_id, ExecutorsChanged)
        return len(changes[-1].executors) if changes else 0

    def capacities(self) -> list[CapacityChanged]:
        return [e for e in self.events if isinstance(e, CapacityChanged)]


def grant_one(backend: ClusterBackend, *app_ids: str) -> None:
    """What the scheduler does after a launch: each app may hold one executor. A real
    cluster's drivers ask for theirs anyway (their agent would cap them); the memory
    cluster's drivers wait for their grant, as its simulated agents do."""
    backend.steer([SetTarget(app_id, 1, 1) for app_id in app_ids])


def exited(*app_ids: str) -> Callable[[Watch], bool]:
    return lambda w: all(w.exit_code(a) is not None for a in app_ids)


def test_drivers_report_start_executors_and_exit_codes_through_a_restart(rig):
    """One story, so a real cluster starts only three apps: two drivers end (0, 3) and one runs
    on; the scheduler "restarts" (a new backend instance) and adopts the running one and an
    ended one, answers False for an unknown handle, and stops the running one (143)."""
    first = rig.new_backend()
    before = Watch(rig, first)
    opening = before.poll()
    codes = {"driver-ok": 0, "driver-fails": 3}
    handles = {a: first.launch(rig.app(a, work_s=2, exit_code=c)) for a, c in codes.items()}
    handles["driver-long"] = first.launch(rig.app("driver-long", work_s=600))
    assert {a: h.app_id for a, h in handles.items()} == {a: a for a in handles}
    with pytest.raises(BackendError, match="driver-ok"):
        first.launch(rig.app("driver-ok", work_s=2))  # it has a driver already
    grant_one(first, *handles)
    before.until(lambda w: exited(*codes)(w) and w.executors("driver-long") >= 1,
                 "two drivers to exit and the long one to get an executor")

    for app_id, code in codes.items():
        assert before.exit_code(app_id) == code
        started = before.of(app_id, DriverStarted)
        assert len(started) == 1 and started[0].spark_app_id, before.events
        assert len(before.of(app_id, DriverExited)) == 1
        # in the order they happened: started, an executor, exited
        assert (before.index(app_id, DriverStarted)
                < before.index(app_id, ExecutorsChanged, lambda e: len(e.executors) >= 1)
                < before.index(app_id, DriverExited)), before.events
    assert before.exit_code("driver-long") is None
    # Capacity at the first poll; our own apps' executors are never taken off it.
    caps = [e for e in opening if isinstance(e, CapacityChanged)]
    assert [(e.capacity, e.driver_slots) for e in caps] == [(rig.capacity, first.capacity()[1])]
    # every backend names its workers, and their sizes add up to the capacity
    assert caps[0].workers and sum(w.size.cores for w in caps[0].workers) == rig.capacity.cores
    assert {c.capacity for c in before.capacities()} == {rig.capacity}
    first.close()  # the scheduler is gone; its drivers are not

    second = rig.new_backend()
    assert second.adopt(handles["driver-long"]) is True  # still running
    assert second.adopt(handles["driver-fails"]) is True  # ended: its exit code is known
    unknown = replace(handles["driver-long"], app_id="driver-unknown",
                      ref=handles["driver-long"].ref + "0")
    assert second.adopt(unknown) is False
    after = Watch(rig, second)
    after.until(lambda w: w.exit_code("driver-fails") is not None
                and w.executors("driver-long") >= 1, "the adopted drivers' news")
    assert after.exit_code("driver-fails") == 3
    assert after.exit_code("driver-long") is None
    assert after.of("driver-ok", DriverExited) == []  # not adopted: not reported

    second.stop("driver-long")
    second.stop("driver-unknown")  # unknown: no error
    after.until(exited("driver-long"), "the stopped driver's exit")
    assert after.exit_code("driver-long") == 143
    assert after.of("driver-unknown", DriverExited) == []


def test_capacity_follows_what_the_backend_does_not_manage(rig):
    backend = rig.new_backend()
    watch = Watch(rig, backend)
    full = rig.capacity
    watch.until(lambda w: w.capacities() and w.capacities()[-1].capacity == full,
                "the cluster's capacity")
    with rig.external("notebook") as spark_app_id:
        less = full.cores - EXTERNAL_CORES
        watch.until(lambda w: w.capacities()[-1].capacity.cores == less,
                    f"capacity down to {less} cores while someone else's app runs")
        assert watch.of("driver-nb", ExecutorsChanged) == []
        backend.manage("driver-nb", spark_app_id)  # a notebook session's driver: ours now
        watch.until(lambda w: w.capacities()[-1].capacity == full
                    and w.executors("driver-nb") == EXTERNAL_CORES,
                    "capacity back and the managed app's executors")
    watch.until(lambda w: w.of("driver-nb", ExecutorsChanged)[-1].executors == (),
                "the managed app's executors gone with it")
    assert watch.of("driver-nb", DriverExited) == []  # its driver is not the backend's


def test_launches_the_cluster_refuses(rig):
    backend = rig.new_backend()
    watch = Watch(rig, backend)
    for message, launch in rig.refused().items():
        with pytest.raises(BackendError, match=message) as refused:
            backend.launch(launch)
        assert "\n" not in str(refused.value)
    watch.poll()
    assert [e for e in watch.events if getattr(e, "app_id", None)] == []
