"""Idle sessions on the scheduler's host released for the apps that wait for its room
(engine/host_room.py, ``idle_to_release``): a Livy or Connect session's driver idle (no
executor held or asked for) for its queue's ``release_idle_sessions_after_s`` is stopped
while a queue's head waits for the host's room - only as many as make room, longest idle
first - and ends KILLED with a reason naming the setting."""

from __future__ import annotations

import pytest
from engine_builders import Run, app, launched, marks, one_queue, stopped

from sessionsched.engine import CapacityChanged, DemandChanged, DriverStarted, ExecutorsChanged
from sessionsched.model import Executor, Resources
from sessionsched.model.endings import RELEASE_SETTING, RELEASED_IDLE

ON_HOST = 1024 + 384  # spark.driver.memory 1g and Spark's 384 MiB floor of overhead


def _run(after: float | None, host_mib: int | None = 2 * ON_HOST,
         slots: int | None = None) -> Run:
    run = Run(one_queue(admission="none", release_idle_sessions_after_s=after), cores=16)
    run.sched.driver_slots = slots
    host = None if host_mib is None else Resources(2, host_mib)
    run.step(CapacityChanged(Resources(16, 1 << 20), host_room=host))
    return run


def _sessions() -> list[app]:
    return [app("s1").session(), app("s2").session()]


CASES = {
    # name: (setting, host MiB, driver slots, on the host, busy until (app: t), waiting
    #        apps, stepped at, released, launched then)
    "idle past the setting, an app waits: the longest idle is released": (
        60, 2 * ON_HOST, None, _sessions, {"s2": 30.0}, lambda: [app("c")], 70.0, ["s1"],
        ["c"]),
    "only as many as the waiting head needs": (
        60, 2 * ON_HOST, None, _sessions, {}, lambda: [app("c")], 500.0, ["s1"], ["c"]),
    "for the queue's head: the app behind it waits for the next step": (
        60, 2 * ON_HOST, None, _sessions, {}, lambda: [app("c"), app("d")], 500.0,
        ["s1"], ["c"]),
    "not idle for long enough: kept": (
        60, 2 * ON_HOST, None, _sessions, {}, lambda: [app("c")], 50.0, [], []),
    "idle counts from its last executor": (
        60, 2 * ON_HOST, None, _sessions, {"s1": 30.0, "s2": 30.0}, lambda: [app("c")],
        80.0, [], []),
    "nobody waits for the host: kept": (
        60, 2 * ON_HOST, None, _sessions, {}, lambda: [], 500.0, [], []),
    "the setting off (the default): kept": (
        None, 2 * ON_HOST, None, _sessions, {}, lambda: [app("c")], 500.0, [], []),
    "a batch app's driver on the host is never released": (
        60, 2 * ON_HOST, None, lambda: [app("b1"), app("b2")], {}, lambda: [app("c")],
        500.0, [], []),
    "a head they cannot make room for: none released": (
        60, 3 * ON_HOST, None, lambda: [app("b"), *_sessions()], {},
        lambda: [app("big").driver_mem(3000)], 500.0, [], []),
    "a driver slot freed when driver_slots caps the host": (
        60, None, 2, _sessions, {}, lambda: [app("c")], 500.0, ["s1"], ["c"]),
}


@pytest.mark.parametrize("after, host_mib, slots, drivers, busy_until, waiting, at, released,"
                         " then", CASES.values(), ids=CASES.keys())
def test_release(after, host_mib, slots, drivers, busy_until, waiting, at, released, then):
    run = _run(after, host_mib, slots)
    on_host = drivers()
    assert len(launched(run.submit(*on_host, at=0.0))) == len(on_host)
    run.step(*(DriverStarted(a.id) for a in on_host), at=1.0)
    run.step(*(ExecutorsChanged(a, (Executor(f"{a}-1"),)) for a in busy_until), at=1.5)
    assert launched(run.submit(*waiting(), at=2.0)) == []
    for a, t in sorted(busy_until.items(), key=lambda kv: kv[1]):
        run.step(ExecutorsChanged(a, ()), at=t)
    out = run.step(at=at)
    assert stopped(out) == released
    assert [(a, s) for a, s in marks(out) if s == "KILLED"] == [(a, "KILLED") for a in released]
    assert launched(out) == then
    assert run.sched.check() == []


def test_the_reason_names_the_setting_and_the_app_it_made_room_for():
    run = _run(60)
    run.submit(*_sessions(), at=0.0)
    run.step(DriverStarted("s1"), DriverStarted("s2"), at=1.0)
    run.submit(app("c"), at=2.0)
    assert run.sched.next_wakeup() == 61.0  # s1's release falls due
    run.step(at=61.0)
    why = run.sched.apps["s1"].reason
    assert why.startswith(RELEASED_IDLE) and RELEASE_SETTING in why
    assert "no job and held no executor for 60s" in why and "while c waited" in why
    assert "root.q" in why and "state is lost" in why


def test_a_session_asking_for_executors_is_not_idle():
    run = _run(60)
    run.submit(*_sessions(), at=0.0)
    run.step(DriverStarted("s1"), DriverStarted("s2"), DemandChanged("s1", 2), at=1.0)
    run.submit(app("c"), at=2.0)
    assert stopped(run.step(at=500.0)) == ["s2"]


def test_the_next_head_gets_the_next_idle_session_at_the_next_step():
    run = _run(60)
    run.submit(*_sessions(), at=0.0)
    run.step(DriverStarted("s1"), DriverStarted("s2"), at=1.0)
    run.submit(app("c"), app("d"), at=2.0)
    assert (stopped(run.step(at=100.0)), stopped(run.step(at=100.5))) == (["s1"], ["s2"])
    assert [run.state(a) for a in ("c", "d")] == ["STARTING", "STARTING"]
