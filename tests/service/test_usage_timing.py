"""Usage timed by the agent's look (``service/usage_meter/timing.py``, docs/operator/usage.md): a
report's changes placed at the executors' registration, their driver's removal and the
agent's look, bounded by the scheduler's clock; a report without times (an older agent, the
cluster's view) counted as the scheduler takes it, as before."""

from __future__ import annotations

import pytest

from sessionsched.engine.events import ExecutorsChanged, MarkState, Reclaim
from sessionsched.model import AppSpec, AppState, Executor, ReclaimMode, Resources
from sessionsched.model.usage import HOURLY
from sessionsched.service.usage_meter import UsageMeter
from sessionsched.service.usage_meter.timing import timed_steps

SPEC = AppSpec("a", "root.q", 1, 100.0, user="alice", driver=Resources(1, 2048),
               executor=Resources(1, 1024))


def ex(eid: str, started_at: float, busy: bool = False) -> Executor:
    return Executor(eid, started_at, idle=not busy)


# (before: id -> busy, after, observed_at, removed, lo, hi) -> steps (from, executors, busy)
CASES = {
    "a new executor counts from its registration, busy from the look that says so": (
        {}, [ex("1", 101.5, busy=True), ex("2", 101.6)], 102.0, {}, 100.0, 102.3,
        [(101.5, 1, 0), (101.6, 2, 0), (102.0, 2, 1)]),
    "a gone executor leaves at its driver's removal": (
        {"1": False, "2": False}, [ex("2", 90.0)], 104.0, {"1": 103.2}, 100.0, 104.4,
        [(103.2, 1, 0), (104.0, 1, 0)]),
    "a gone executor with no removal time leaves at the look": (
        {"1": True}, [], 104.0, {}, 100.0, 104.4, [(104.0, 0, 0)]),
    "a busy executor gone stops being busy when it leaves": (
        {"1": True, "2": True}, [ex("2", 90.0, busy=True)], 104.0, {"1": 103.0}, 100.0, 105.0,
        [(103.0, 1, 1), (104.0, 1, 1)]),
    "idle flags change at the look": (
        {"1": True, "2": False}, [ex("1", 90.0), ex("2", 90.0, busy=True)], 104.0, {},
        100.0, 105.0, [(104.0, 2, 1)]),
    "a driver clock ahead: never after the scheduler's now": (
        {}, [ex("1", 108.0)], 109.0, {}, 100.0, 104.0, [(104.0, 1, 0)]),
    "a driver clock behind: never before the last counted change": (
        {"1": False}, [ex("2", 95.0)], 99.0, {"1": 98.0}, 100.0, 104.0, [(100.0, 1, 0)]),
    "a removal time after the look is the look": (
        {"1": False}, [], 103.0, {"1": 103.5}, 100.0, 104.0, [(103.0, 0, 0)]),
    "a removal time of an executor still listed is ignored": (
        {"1": False}, [ex("1", 90.0)], 103.0, {"1": 101.0}, 100.0, 104.0, [(103.0, 1, 0)]),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_timed_steps(case):
    before, after, observed_at, removed, lo, hi, expected = case
    kept = dict(before)
    assert timed_steps(before, after, observed_at, removed, lo, hi) == expected
    assert before == kept  # inputs untouched


# (observed_at, changed_after, lo, hi) -> when executor 1's flag changed
FLAG_CASES = {
    "halfway from the look before": (104.0, 103.0, 100.0, 105.0, 103.5),
    "at the look when the agent does not say": (104.0, None, 100.0, 105.0, 104.0),
    "never before the last counted change": (104.0, 90.0, 100.0, 105.0, 100.0),
    "a look before said after the look: at the look": (104.0, 106.0, 100.0, 105.0, 104.0),
}


@pytest.mark.parametrize("case", FLAG_CASES.values(), ids=FLAG_CASES.keys())
def test_a_flag_changes_halfway_between_the_looks(case):
    observed_at, changed_after, lo, hi, at = case
    steps = timed_steps({"1": False, "2": True}, [ex("1", 90.0, True), ex("2", 90.0, True)],
                        observed_at, {}, lo, hi, changed_after)
    assert steps[0] == (at, 2, 2) and steps[-1] == (observed_at, 2, 2)


# (registered, changed_after, observed_at) -> when a new executor busy at its first look
# became busy: it takes its first task once it has started up inside, after its registration
NEW_BUSY_CASES = {
    "halfway from the look before, like any flag": (101.5, 101.8, 102.0, 101.9),
    "never before its registration": (101.5, 100.5, 102.0, 101.5),
}


@pytest.mark.parametrize("case", NEW_BUSY_CASES.values(), ids=NEW_BUSY_CASES.keys())
def test_a_new_executor_busy_at_its_first_look(case):
    registered, changed_after, observed_at, busy_from = case
    steps = timed_steps({}, [ex("1", registered, True)], observed_at, {}, 100.0, 103.0,
                        changed_after)
    assert steps[0][:2] == (registered, 1)
    assert next(at for at, _, busy in steps if busy) == busy_from


def timed(now_obs: float, *executors: Executor, removed=(),
          changed_after: float | None = None) -> ExecutorsChanged:
    return ExecutorsChanged("a", executors, observed_at=now_obs, removed=tuple(removed),
                            changed_after=changed_after)


def run(m: UsageMeter, steps) -> dict:
    out: dict = {}
    for now, events, decisions in steps:
        out = m.step(now, events, decisions).get("a", out)
    return out


def started(at: float) -> MarkState:
    return MarkState("a", AppState.STARTING, "launched", at=at)


def ended(at: float) -> MarkState:
    return MarkState("a", AppState.FINISHED, "done", at=at)


def test_a_timed_app_counts_what_spark_records_not_when_reports_arrive():
    # Spark's record: executors 1 and 2 registered at 110.2 and 110.4, took their first tasks
    # once started up inside, at 110.9 and 111.0, and ran them until 120.0 and 115.0; 2 was
    # removed at its idle timeout, 1 with the stop (the last report, 121.0). The agent looks
    # a tick (0.25 s) after a task's start or end moved the running tasks, else at its
    # heartbeat; the reports arrive 0.6-0.9 s after each look.
    last = run(UsageMeter({"a": SPEC}.get), [
        (110.0, [], [started(110.0)]),
        (111.9, [timed(111.1, ex("1", 110.2, True), ex("2", 110.4, True),
                       changed_after=110.85)], []),
        (115.8, [timed(115.1, ex("1", 110.2, True), ex("2", 110.4), changed_after=114.85)], []),
        (118.9, [timed(118.3, ex("1", 110.2, True), changed_after=117.3)], []),
        (120.7, [timed(120.1, ex("1", 110.2), changed_after=119.85)], []),
        (121.8, [timed(121.0, removed=[("1", 121.0)], changed_after=120.1)], []),
        (123.0, [], [ended(123.0)]),  # the driver's process seen gone
    ])
    # held: 1 x (121.0 - 110.2) + 1 x (118.3 - 110.4) = 10.8 + 7.9: the report gave no
    # removal time for 2 (its status store had not recorded it yet): it left at the look
    assert last["held_core_s"] == pytest.approx(10.8 + 7.9)
    # busy: each change halfway through its tick (1: 110.975..119.975, 2: 110.975..114.975),
    # 13.0 against Spark's task time 9.1 + 4.0 = 13.1
    assert last["busy_core_s"] == pytest.approx((119.975 - 110.975) + (114.975 - 110.975))


def test_an_untimed_report_counts_as_the_scheduler_takes_it():
    last = run(UsageMeter({"a": SPEC}.get), [
        (110.0, [], [started(110.0)]),
        (111.1, [ExecutorsChanged("a", (ex("1", 110.2, True),))], []),
        (118.9, [ExecutorsChanged("a", ())], []),
        (123.0, [], [ended(123.0)]),
    ])
    assert (last["held_core_s"], last["busy_core_s"]) == pytest.approx((7.8, 7.8))


def test_a_killed_executors_lost_work_ends_when_its_driver_removed_it():
    last = run(UsageMeter({"a": SPEC}.get), [
        (110.0, [], [started(110.0)]),
        (111.0, [timed(110.5, ex("1", 110.2, True), ex("2", 110.2, True))], []),
        (120.0, [], [Reclaim("a", ("1",), ReclaimMode.KILL)]),  # the order at 120.0
        (122.0, [timed(121.7, ex("2", 110.2, True), removed=[("1", 120.8)])], []),
        (125.0, [], [ended(125.0)]),
    ])
    # lost: from the look that first found it busy (110.5: the report does not say when the
    # agent looked before) until its driver removed it at 120.8
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == pytest.approx((10.3, 1))


def test_an_executor_its_agent_killed_counts_until_its_driver_removes_it():
    # The agent kills 1 and leaves it out of its next report at once (121.0), before its
    # driver removes it (123.5, the process dead): a later report says so.
    m = UsageMeter({"a": SPEC}.get)
    last = run(m, [
        (110.0, [], [started(110.0)]),
        (111.0, [timed(110.5, ex("1", 110.2, True), ex("2", 110.2, True))], []),
        (120.0, [], [Reclaim("a", ("1",), ReclaimMode.KILL)]),
        (121.3, [timed(121.0, ex("2", 110.2, True))], []),
        (124.0, [timed(123.7, ex("2", 110.2, True), removed=[("1", 123.5)])], []),
        (125.0, [], [ended(125.0)]),
    ])
    # 1: held 110.2 .. 123.5, busy and lost from its first look 110.5; 2: held 110.2 .. 125.0,
    # busy from 110.5
    assert last["held_core_s"] == pytest.approx(13.3 + 14.8)
    assert last["busy_core_s"] == pytest.approx(13.0 + 14.5)
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == pytest.approx((13.0, 1))
    hours = m.take_hours()
    (row,) = hours.values()
    assert dict(zip(HOURLY, row, strict=True))["held_core_s"] == pytest.approx(28.1)
    # a removal time in the scheduler's future counts to its now, and once
    last = run(UsageMeter({"a": SPEC}.get), [
        (110.0, [], [started(110.0)]),
        (111.0, [timed(110.5, ex("1", 110.2), ex("2", 110.2))], []),
        (121.3, [timed(121.0, ex("2", 110.2))], []),  # 1 left out (killed)
        (124.0, [timed(123.7, ex("2", 110.2), removed=[("1", 190.0)])], []),
        (124.5, [timed(124.2, ex("2", 110.2), removed=[("1", 190.0)])], []),
        (125.0, [], [ended(125.0)]),
    ])
    assert last["held_core_s"] == pytest.approx((124.0 - 110.2) + 14.8)


def test_the_first_list_after_a_restart_is_untimed():
    stored = run(UsageMeter({"a": SPEC}.get), [
        (110.0, [], [started(110.0)]),
        (111.0, [timed(110.5, ex("1", 110.2), ex("2", 110.2))], []),
    ])
    m = UsageMeter({"a": SPEC}.get)
    m.restore("a", stored)  # the levels (2 executors), not which ones
    last = run(m, [(130.0, [timed(129.0, ex("2", 110.2), removed=[("1", 120.0)])], []),
                   (140.0, [], [ended(140.0)])])
    # 2 executors from 110.2 until the first report after the restart (130.0), then 1
    assert last["held_core_s"] == pytest.approx(2 * (130.0 - 110.2) + 10.0)
