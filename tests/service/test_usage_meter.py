"""The usage meter on plain events (``service/usage_meter/``): levels from executor reports,
the driver from the launch to the end, a kill's lost work, nothing written for a report that
changes no level; the thread that counts beside the cycle sends a failed write again."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import replace

from sessionsched.engine.events import ExecutorsChanged, MarkState, Reclaim
from sessionsched.model import AppSpec, AppState, Executor, ReclaimMode, Resources
from sessionsched.model.usage import HOUR_S, HOURLY, AppUsage, hourly_figures
from sessionsched.service import usage_meter
from sessionsched.service.usage_meter import MeterThread, UsageMeter

SPEC = AppSpec("a", "root.q", 1, 100.0, user="alice", driver=Resources(1, 2048),
               executor=Resources(2, 4096))


def meter() -> UsageMeter:
    return UsageMeter({"a": SPEC}.get)


def execs(*busy: bool) -> ExecutorsChanged:
    return ExecutorsChanged("a", tuple(Executor(str(i), 0.0, idle=not b)
                                       for i, b in enumerate(busy)))


def started(at: float) -> MarkState:
    return MarkState("a", AppState.STARTING, "launched", at=at)


def ended(at: float) -> MarkState:
    return MarkState("a", AppState.FINISHED, "done", at=at)


def run(m: UsageMeter, steps) -> dict:
    """The app's last ``usage`` column written."""
    out = {}
    for now, events, decisions in steps:
        out = m.step(now, events, decisions).get("a", out)
    return out


def test_levels_driver_and_queue_time_add_up_to_the_end():
    m = meter()
    last = run(m, [
        (110.0, [], [started(110.0)]),          # queued 10 s
        (120.0, [execs(True, False)], []),       # 2 executors x 2 cores, one busy
        (130.0, [execs(True, True)], []),        # both busy
        (140.0, [], [ended(140.0)]),
    ])
    # held: 4 cores x 20 s; busy: 2 x 10 + 4 x 10; driver: 1 core, 2 GiB x 30 s
    assert {k: last[k] for k in ("held_core_s", "busy_core_s", "driver_core_s",
                                  "driver_mib_s", "queued_s")} == {
        "held_core_s": 80.0, "busy_core_s": 60.0, "driver_core_s": 30.0,
        "driver_mib_s": 2048 * 30.0, "queued_s": 10.0}
    (totals,) = m.totals().values()
    assert totals[:3] == [80.0, 60.0, 20.0]  # held, busy, idle


def test_the_reported_figures_add_up_as_printed():
    # Each figure is rounded to the millisecond: idle is held less busy as they are printed,
    # not held - busy rounded on its own (0.0498 -> 0.05, and 2.049 + 0.05 is not 2.098).
    u = AppUsage(held_core_s=2.0984, busy_core_s=2.0486,
                 res_s={"gpu": [2.0984, 2.0486, 0.0, 0.0]})
    f = u.figures()
    assert (f["held_core_s"], f["busy_core_s"], f["idle_core_s"]) == (2.098, 2.049, 0.049)
    assert (f["gpu_held_s"], f["gpu_busy_s"], f["gpu_idle_s"]) == (2.098, 2.049, 0.049)
    hour = hourly_figures([2.0984 if k == "held_core_s" else 2.0486 if k == "busy_core_s"
                           else 0.0 for k in HOURLY])
    assert (hour["held_core_s"], hour["busy_core_s"], hour["idle_core_s"]) == (
        2.098, 2.049, 0.049)


def test_a_report_that_changes_no_level_writes_nothing():
    m = meter()
    run(m, [(110.0, [], [started(110.0)]), (120.0, [execs(True, False)], [])])
    assert m.step(121.0, [execs(False, True)], []) == {}  # other executor busy, same levels


def test_a_kill_counts_the_executors_busy_at_the_last_report_that_listed_them():
    m = meter()
    last = run(m, [
        (110.0, [], [started(110.0)]),
        (120.0, [execs(True, False)], []),
        (125.0, [execs(True, False)], []),
        (130.0, [], [Reclaim("a", ("0", "1"), ReclaimMode.KILL)]),
        (131.0, [ExecutorsChanged("a", ())], []),
    ])
    # executor 0 busy since 120, gone at 131: 2 cores x 11 s; executor 1 was idle
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == (22.0, 1)


def test_a_kill_goes_by_the_agents_look_before_it_not_by_the_schedulers_at_the_order():
    # The agent kills right after a look whose report goes first: 1 took a task after the
    # scheduler's order and before the kill (its task lost), 0 finished its task (none lost).
    last = run(meter(), [
        (110.0, [], [started(110.0)]),
        (120.0, [execs(True, False)], []),
        (130.0, [], [Reclaim("a", ("0", "1"), ReclaimMode.KILL)]),
        (130.5, [execs(False, True)], []),  # the kill's look
        (131.5, [ExecutorsChanged("a", ())], []),
    ])
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == (2 * 1.0, 1)


def test_a_killed_executors_task_is_lost_until_a_report_finds_it_gone():
    # Spark's driver asks the master to kill it a moment after the order reaches the agent;
    # the task runs on until then, and the report after the kill no longer lists it.
    m = meter()
    last = run(m, [
        (110.0, [], [started(110.0)]),
        (120.0, [execs(True, True)], []),
        (130.0, [], [Reclaim("a", ("0",), ReclaimMode.KILL)]),
        (131.0, [execs(True, True)], []),                   # not killed yet: still listed
        (132.5, [ExecutorsChanged("a", (Executor("1", 0.0, idle=False),))], []),
        (140.0, [], [ended(140.0)]),
    ])
    # 2 cores x (132.5 - 120), one executor; all of it inside busy (2 x 4 cores until 132.5)
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == (25.0, 1)
    assert last["busy_core_s"] == 4 * 12.5 + 2 * 7.5
    # killed and never seen gone: lost until the app's end
    last = run(meter(), [
        (110.0, [], [started(110.0)]),
        (120.0, [execs(True)], []),
        (130.0, [], [Reclaim("a", ("0",), ReclaimMode.KILL)]),
        (134.0, [], [ended(134.0)]),
    ])
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == (28.0, 1)


def test_the_meter_thread_writes_in_order_and_sends_a_failed_write_again():
    writes: list[list[dict]] = []
    hours_written: list[dict] = []
    failures = [RuntimeError("store unavailable")]

    def write(rows, hours):
        f: Future = Future()
        if failures:
            f.set_exception(failures.pop())
        else:
            writes.append(rows)
            hours_written.append(hours)
            f.set_result(None)
        return f

    t = MeterThread(meter(), write)
    t.start()
    try:
        t.feed(110.0, [], [started(110.0)])
        assert t.drain()
        assert writes == []  # the first write failed: kept
        t.feed(120.0, [execs(True)], [])
        assert t.drain()
    finally:
        t.stop()
    (rows,) = writes  # both cycles' changes in one write
    (row,) = rows
    assert (row["id"], row["usage"]["held_cores"], row["usage"]["driver_cores"]) == ("a", 2, 1)
    # and both cycles' hours: queued 100..110, the driver's 1 core 110..120
    (hours,) = hours_written
    (figures,) = hours.values()
    assert dict(zip(HOURLY, figures, strict=True)) == {
        **dict.fromkeys(HOURLY, 0.0), "queued_s": 10.0, "driver_core_s": 10.0,
        "driver_gib_s": 20.0}


def figures_by_hour(hours: dict) -> dict:
    return {key: {k: v for k, v in zip(HOURLY, row, strict=True) if v}
            for key, row in sorted(hours.items())}


def test_the_hours_split_what_the_levels_held_at_the_hours_edges():
    h = HOUR_S
    spec = replace(SPEC, submitted_at=h - 30)  # queued across the first hour's end
    m = UsageMeter({"a": spec}.get)
    run(m, [
        (h + 30, [], [started(h + 30)]),           # queued 30 s in hour 0, 30 s in hour 1
        (h + 60, [execs(True, False)], []),         # 2 executors x 2 cores, one busy
        (2 * h + 60, [], [Reclaim("a", ("0",), ReclaimMode.KILL)]),  # busy since h + 60
        (2 * h + 60, [ExecutorsChanged("a", (Executor("1", 0.0, idle=True),))], []),
        (2 * h + 120, [], [ended(2 * h + 120)]),
    ])
    assert figures_by_hour(m.take_hours()) == {
        (0.0, "root.q", "alice"): {"apps": 1, "queued_s": 30.0},
        (h, "root.q", "alice"): {
            "queued_s": 30.0, "driver_core_s": h - 30, "driver_gib_s": 2 * (h - 30),
            "held_core_s": 4 * (h - 60), "held_gib_s": 8 * (h - 60),
            "busy_core_s": 2 * (h - 60)},
        (2 * h, "root.q", "alice"): {
            "driver_core_s": 120.0, "driver_gib_s": 240.0,
            "held_core_s": 4 * 60 + 2 * 60, "held_gib_s": 8 * 60 + 4 * 60,
            "busy_core_s": 2 * 60, "reclaimed_core_s": 2 * h, "reclaimed_executors": 1}}
    assert m.take_hours() == {}  # taken once


def test_an_app_that_ended_while_no_scheduler_ran_is_counted_to_that_end():
    stored = run(meter(), [(110.0, [], [started(110.0)]), (120.0, [execs(True)], [])])
    m = meter()
    column = m.ended_unseen("a", stored, AppState.FAILED, 150.0)
    # held 2 cores 120..150 (the stored levels), the driver 110..150; nothing left running
    assert (column["held_core_s"], column["driver_core_s"], column["held_cores"]) == (
        60.0, 40.0, 0)
    (figures,) = figures_by_hour(m.take_hours()).values()
    assert (figures["held_core_s"], figures["driver_core_s"], figures["apps"]) == (
        60.0, 30.0, 1)  # the hours get what was not counted before: the driver's 120..150


def decommission(at: float, *ids: str) -> Reclaim:
    return Reclaim("a", ids, ReclaimMode.DECOMMISSION, at)


def test_a_decommissioned_executor_gone_busy_at_its_deadline_counts_as_reclaimed():
    m = meter()
    last = run(m, [
        (110.0, [], [started(110.0)]),
        (120.0, [execs(True, True)], []),                  # both busy from 120
        (121.0, [], [decommission(181.0, "0", "1")]),      # deadline 60 s on
        (150.0, [ExecutorsChanged("a", (Executor("1", 0.0, idle=False),))], []),
        (182.0, [ExecutorsChanged("a", ())], []),          # 1 gone past the deadline
    ])
    # 0 left at 150, before its deadline: its task finished (no loss); 1 was killed at its
    # deadline: 2 cores x (182 - 120) lost
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == (124.0, 1)


def test_the_schedulers_kill_at_the_deadline_is_counted_once():
    m = meter()
    last = run(m, [
        (110.0, [], [started(110.0)]),
        (120.0, [execs(True)], []),
        (121.0, [], [decommission(181.0, "0")]),
        (181.0, [], [Reclaim("a", ("0",), ReclaimMode.KILL, 181.0)]),  # the engine's kill
        (182.0, [ExecutorsChanged("a", ())], []),                        # then the report
    ])
    # lost until the report finds it gone, as when the agent killed it at the deadline
    assert (last["reclaimed_core_s"], last["reclaimed_executors"]) == (2 * 62.0, 1)


def test_a_write_in_doubt_is_waited_for_and_its_hours_never_sent_twice(monkeypatch):
    monkeypatch.setattr(usage_meter.thread, "COMMIT_TIMEOUT_S", 0.05)
    calls: list[tuple[list[dict], dict]] = []
    futures: list[Future] = []

    def write(rows, hours):
        calls.append((rows, hours))
        futures.append(Future())  # answered by the test: in doubt until then
        return futures[-1]

    t = MeterThread(meter(), write)
    t.start()
    try:
        t.feed(110.0, [], [started(110.0)])
        assert t.drain()
        t.feed(120.0, [execs(True)], [])
        assert t.drain()
        assert len(calls) == 1  # the first write has no outcome yet: nothing more is sent
        futures[0].set_result(None)  # it went through
        t.feed(130.0, [], [ended(130.0)])
        assert t.drain()
    finally:
        t.stop()
    assert len(calls) == 2
    first, second = (dict(zip(HOURLY, *hours.values(), strict=True)) for _, hours in calls)
    assert (first["queued_s"], first["driver_core_s"]) == (10.0, 0.0)  # 100..110 queued
    # the second write has only what came after the first: the driver 110..130, the executor
    # (2 cores) 120..130, the app counted at its end; the first's queue time not again
    assert (second["queued_s"], second["driver_core_s"], second["held_core_s"],
            second["apps"]) == (0.0, 20.0, 20.0, 1.0)
    assert [r["id"] for r in calls[1][0]] == ["a"]


GPU_SPEC = replace(SPEC, driver=Resources(1, 2048, (("gpu", 1),)),
                   executor=Resources(2, 4096, (("gpu", 2),)))


def test_custom_resources_count_beside_the_cores_held_busy_lost_and_the_drivers():
    m = UsageMeter({"a": GPU_SPEC}.get)
    last = run(m, [
        (110.0, [], [started(110.0)]),
        (120.0, [execs(True, False)], []),       # 2 executors x 2 gpu, one busy
        (130.0, [execs(True, False)], []),
        (130.0, [], [Reclaim("a", ("0",), ReclaimMode.KILL)]),
        (132.0, [ExecutorsChanged("a", (Executor("1", 0.0, idle=True),))], []),
        (140.0, [], [ended(140.0)]),
    ])
    # held: 4 gpu x 12 s + 2 x 8 s; busy 2 x 12 s; lost: executor 0's 2 gpu x 12 s;
    # driver: 1 gpu x 30 s
    assert last["res_s"] == {"gpu": [64.0, 24.0, 24.0, 30.0]}
    f = AppUsage.from_json(last).figures()
    assert {k: v for k, v in f.items() if k.startswith("gpu_")} == {
        "gpu_held_s": 64.0, "gpu_busy_s": 24.0, "gpu_idle_s": 40.0, "gpu_reclaimed_s": 24.0,
        "gpu_driver_s": 30.0}
    assert f["held_core_s"] == 64.0  # the cores as before: 2 cores an executor, too
    assert m.resource_totals() == {("root.q", "alice", "gpu"): [64.0, 24.0, 40.0, 24.0, 30.0]}
    hours = m.take_hours()
    assert hours[(0.0, "root.q", "alice", "gpu")] == [64.0, 24.0, 24.0, 30.0]


def test_without_custom_resources_the_column_is_as_it_was():
    m = meter()
    last = run(m, [(110.0, [], [started(110.0)]), (120.0, [execs(True)], []),
                   (140.0, [], [ended(140.0)])])
    assert not any(k.endswith("_res") or k == "res_s" for k in last)
    assert m.resource_totals() == {}
    assert all(len(k) == 3 for k in m.take_hours())


def test_a_task_counts_busy_by_its_amount():
    """The simulator's way: a task of 0.5 gpu running 10 s is 5 gpu-busy-seconds."""
    u = AppUsage()
    u.executor(0.0, 1, 1024, (("gpu", 1),))
    u.tasks(0.0, 2, (("cores", 1.0), ("memory", 512.0), ("gpu", 0.5)))  # the sim's amounts
    u.tasks(10.0, -1, {"gpu": 0.5})
    u.tasks(20.0, -1, {"gpu": 0.5})
    u.executor(20.0, -1, -1024, (("gpu", -1),))
    f = u.figures()
    assert (f["gpu_held_s"], f["gpu_busy_s"], f["gpu_idle_s"]) == (20.0, 15.0, 5.0)
    assert not u.busy_res and not u.held_res  # back to none: free again


def test_a_reclaim_loses_the_tasks_run_time_by_their_amounts():
    u = AppUsage()
    u.tasks_lost(12.0, (("cores", 1.0), ("memory", 512.0), ("gpu", 0.5)))
    f = u.figures()
    assert (f["reclaimed_core_s"], f["reclaimed_executors"], f["gpu_reclaimed_s"]) == (12, 1, 6)
