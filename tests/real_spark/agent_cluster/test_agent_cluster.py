"""The agent on a real cluster: executors of running apps arbitrated live, through the real
submit path (``POST /api/v1/apps`` -> ``sessionsched serve`` -> spark-submit with the agent's
bootstrap -> a PySpark driver whose agent heartbeats the server). Fixtures and helpers:
``conftest.py`` (a 6-core cluster of these tests' own, 1-core/512m executors, sleep-based tasks).

Each test names the behaviour it checks; every wait is bounded. Between tests every app is
killed and the cluster is back to idle. Only what real Spark alone can answer is here: busy
executors really killed and their tasks retried, a decommission that loses no task, a dead
agent's executors released by Spark itself (a static app, admission-only, runs beside the
notebook in ``test_agent_notebook.py``). How the service shares executors (fairshare weights,
a priority change, a killed driver's executors, the ``demand`` admission) is checked stepped
by hand on the memory cluster (``tests/service/test_cycles_sharing.py``); the 1:2 and 1:1
splits on this real cluster by ``test_example_notebook.py``.
"""

from __future__ import annotations

import time

import pytest
from agent_stack import (
    CORES,
    START_S,
    decommissioning,
    finished,
    held,
    report,
    sent_reports,
    settle,
    submit,
    usage_of,
)
from spark_eventlog import event_log_conf, spark_usage

from sessionsched.model.stages import DoneStage
from sessionsched.store import Store
from sessionsched.store.work_lengths import stage_runs
from tests.sparkcluster import wait_until

pytestmark = pytest.mark.cluster


# --- priority: the higher one gets what it asks, the other the rest ---------------------------


IDLE_TIMEOUT_S = 5  # A's spark.dynamicAllocation.executorIdleTimeout


def test_priority_policy_and_kill_reclaim_the_victims_job_still_completes(api, tmp_path):
    # A: 12 tasks, alone on the cluster: 6 executors, all busy until the test lets them end.
    # After its job A idles: its executors wait out Spark's idle timeout, then it ends.
    release, events, go_b = tmp_path / "release-a", tmp_path / "events", tmp_path / "go-b"
    a = submit(api, "prio-a", "root.prio", 3000, "--tasks", 12, "--seconds", 600,
               "--until", release, "--linger-s", 60, "--linger-while-executors",
               "--log-reports", conf=event_log_conf(events), idle_timeout_s=IDLE_TIMEOUT_S)
    # B's driver starts meanwhile (admitted once A has an executor), its job held: it asks
    # for nothing until the test lets it. B is sent once A is admitted: sent in the same
    # cycle, B (9000) would go first and, asking for nothing while it starts, hold the
    # queue's one starting place until its starting timeout.
    wait_until(lambda: api.app(a).state.value != "ACCEPTED", START_S, "A admitted")
    b = submit(api, "prio-b", "root.prio", 9000, "--tasks", 4, "--seconds", 600,
               "--job-after", go_b)
    wait_until(lambda: held(api, a) == (CORES,), START_S, "A to take the whole cluster")
    # Each of A's executors busy (on a loaded machine its tasks start seconds after the
    # executors register): the cut below then kills busy executors, whose tasks fail.
    wait_until(lambda: (sent_reports(api, a) or [{}])[-1].get("running_tasks") == CORES,
               START_S, "A's tasks to run on every executor")
    # B asks for 4 (4 tasks, busy until B is killed) at a higher priority: it gets 4, A keeps
    # the other 2.
    go_b.touch()
    wait_until(lambda: api.app(b).target == 4, 90, "B's target of 4")
    cut_at = time.monotonic()
    # reclaim_timeout 0: A's surplus goes at once, busy or not (its tasks run 600 s: only a kill
    # frees those executors within the minute; seconds on a quiet machine).
    wait_until(lambda: held(api, a)[0] <= 2, 60, "A's surplus killed")
    assert time.monotonic() - cut_at < 60
    settle(api, (a, b), (2, 4), 180, "B at 4 (all it asks), A at the remaining 2")
    api.kill(b)  # B has had its share: A's remaining tasks get the whole cluster again
    release.touch()
    # A's killed tasks were retried elsewhere: its job completes with every task counted once.
    r = wait_until(lambda: report(api, a), 240, "A's job to end", interval_s=0.5)
    assert r["result"] == sum(range(12))
    assert r["failed_tasks"] >= 1  # busy executors were really killed
    # Idle, A's executors leave at Spark's idle timeout; A ends once none is left.
    idle_executors = held(api, a)[0]
    assert idle_executors >= 1
    done = wait_until(lambda: finished(api, a), 120, "A to finish")
    assert (done.state.value, done.exit_code) == ("FINISHED", 0)
    assert "LINGER no executor left" in api.log(a, tail=400)  # Spark's timeout took them all
    # A's reports said where it was in its stages (the bodies its agent sent, from its driver
    # log): its one stage running, then done, 12 tasks, their times within the job's.
    stages = [b["stages"] for b in sent_reports(api, a) if "stages" in b]
    running = [s for st in stages for s in st["active"] if s["running"]]
    print(f"A's stages: last reported {stages[-1]}; running, as reported: {running}")
    assert running and all(s["tasks"] == 12 for s in running)
    assert all(0 <= s["oldest_running_s"] <= r["seconds"] for s in running)
    (stage,) = stages[-1]["done"]
    assert stage["tasks"] == 12 and 0 < stage["task_s"] <= r["seconds"]
    # ... and the server kept them on A's row, for the estimates of the next runs of its name
    store = Store(f"sqlite:///{tmp_path / 'agent-server' / 'state' / 'sessionsched.db'}")
    try:
        assert stage_runs(store, ["prio-a"]) == {
            "prio-a": [(DoneStage(stage["tasks"], stage["task_s"]),)]}
    finally:
        store.close()
    # Usage (docs/operator/usage.md) agrees with what Spark's own records say of A's whole life (its
    # event log): held, busy, idle and the task time lost to the kill, and the queue's figures
    # are its apps'.
    u, spark = usage_of(api, a), spark_usage(events, done.spark_app_id)
    print(f"usage of A: sessionsched {u}; Spark's event log {spark}")
    assert_agrees(u, spark)
    assert spark["lost_task_s"] > 0
    assert u["reclaimed_executors"] >= 1 or spark["lost_task_s"] <= 1.0  # (assert_agrees)
    # the idle timeout's part of the idle figure: each of those executors idle for it at least
    assert spark["held_core_s"] - spark["task_s"] >= idle_executors * IDLE_TIMEOUT_S
    (queue,) = [q for q in api.usage("queue") if q["queue"] == "root.prio"]
    for kind in ("held_core_s", "busy_core_s", "idle_core_s", "reclaimed_core_s"):
        assert queue[kind] == pytest.approx(sum(usage_of(api, i)[kind] for i in (a, b)),
                                            abs=0.01), kind


def assert_agrees(u: dict, spark: dict) -> None:
    """sessionsched's figures of an app within 10 % of Spark's, with no allowance for the
    reports' lag: the agent times its reports (the executors' registration and removal as its
    driver has them, the look for idle flags; docs/operator/usage.md), so the figures need none.
    Held = busy + idle to the rounding of the three figures. Where an executor left twice
    (a decommission: done, then its process's exit, ``spark_eventlog``), its core is held on the
    worker between the two and Spark's records count none of it: the agent may count part
    (seen: 1.6 s of a 1.8 s window at load 18, on an idle figure of 13 s), so held and idle
    may differ by that window beside the 10 %.

    Idle is the small difference of two large figures, so its 10 % is 1-2 % of the held time,
    tighter than either: the errors busy is allowed add up in it. Each busy/idle change is placed
    halfway through its look's span (a quarter second, up to a heartbeat on a loaded machine),
    and a task a kill threw away that started after the last look counts idle (the lost-work
    allowance below). Over an app's dozens of changes, loaded CI runs saw idle 1.9 s over
    Spark's 17.8 s (1.8 % of the 104 s held) and 1.5 s over 8.0 s. So idle may also differ by
    3 % of the held time."""
    window = spark["exit_after_removal_core_s"]
    assert u["held_core_s"] == pytest.approx(u["busy_core_s"] + u["idle_core_s"], abs=0.01)
    assert u["held_core_s"] == pytest.approx(spark["held_core_s"], rel=0.10, abs=window)
    assert u["busy_core_s"] == pytest.approx(spark["task_s"], rel=0.10)
    assert u["idle_core_s"] == pytest.approx(spark["held_core_s"] - spark["task_s"], rel=0.10,
                                             abs=window + 0.03 * spark["held_core_s"])
    # A task that started between the agent's last look and the kill is lost to Spark but was
    # idle in the last report (service/usage_meter/meter.py): up to a heartbeat (1 s here) of it
    # per killed executor on a loaded machine - one executor's worth when none was counted
    # (seen: 0.5 s lost, none counted; 2.5 s short over 3 counted, three pytest workers beside).
    assert u["reclaimed_core_s"] == pytest.approx(
        spark["lost_task_s"], rel=0.10, abs=1.0 * max(u["reclaimed_executors"], 1))


# --- graceful reclaim: decommission, no task lost -------------------------------------------


def test_graceful_reclaim_decommissions_and_loses_no_task(api, tmp_path):
    # A: 12 tasks; its 6 executors stay mid-task until the test lets the tasks end.
    release, events = tmp_path / "release-a", tmp_path / "events"
    a = submit(api, "grace-a", "root.graceful", 3000, "--tasks", 12, "--seconds", 600,
               "--until", release, conf=event_log_conf(events))
    wait_until(lambda: held(api, a) == (CORES,), START_S, "A to take the whole idle cluster")
    b = submit(api, "grace-b", "root.graceful", 9000, "--tasks", 4, "--seconds", 600)
    wait_until(lambda: api.app(b).target == 4, 90, "B's target of 4")
    cut_at = time.monotonic()
    # Spark itself is told to decommission 4 of A's executors while every one is mid-task...
    wait_until(lambda: len(decommissioning(api, a)) >= 4, 30, "Spark to decommission 4 of A's",
               interval_s=0.5)
    release.touch()
    # ...they finish their running task, hand over their blocks and leave before the queue's
    # 150 s deadline (seconds here, 55 s seen on a loaded machine); B takes their cores.
    wait_until(lambda: held(api, a)[0] <= 2, 140, "A's surplus decommissioned")
    assert time.monotonic() - cut_at < 140
    wait_until(lambda: held(api, b) == (4,), 60, "B at 4")
    api.kill(b)  # B has had its share: A's remaining tasks get the whole cluster again
    done = wait_until(lambda: finished(api, a), 240, "A to finish")
    assert (done.state.value, done.exit_code) == ("FINISHED", 0)
    r = report(api, a)
    assert r == {**r, "result": sum(range(12)), "failed_tasks": 0}
    # Usage agrees with Spark's event log (a short job: a report's lag, uncorrected, would
    # show). A decommission kills no busy executor.
    u, spark = usage_of(api, a), spark_usage(events, done.spark_app_id)
    print(f"usage of A: sessionsched {u}; Spark's event log {spark}")
    assert_agrees(u, spark)
    assert (u["reclaimed_executors"], u["reclaimed_core_s"], spark["lost_task_s"]) == (0, 0, 0)


# --- a dead agent: the cluster's view gives the executors back ------------------------------


def test_a_dead_agent_gives_its_executors_back_once_spark_releases_them(api, tmp_path):
    # A's agent dies once A holds the cluster (the app detaches it); A's job of 6 tasks ends
    # when the test lets it, its executors go idle and Spark's own idle timeout (1 s: A's 6
    # tasks keep every executor busy until then) releases them; the driver lingers.
    release = tmp_path / "release-a"
    a = submit(api, "deadagent-a", "root.fair", 5000, "--tasks", 6, "--seconds", 600,
               "--until", release, "--detach-agent-at", CORES, "--linger-s", 300,
               idle_timeout_s=1)
    wait_until(lambda: held(api, a) == (CORES,), START_S, "A to take the whole idle cluster")
    b = submit(api, "deadagent-b", "root.fair", 5000, "--tasks", 30, "--seconds", 600)
    # While A's agent is silent nobody takes A's busy executors: B waits.
    wait_until(lambda: api.app(b).demand > 0, 90, "B's demand")
    assert held(api, a, b) == (CORES, 0)
    release.touch()
    wait_until(lambda: report(api, a), 60, "A's job to end")
    # Nobody heartbeats for A; the master's view shows its executors leaving; B gets them all.
    settle(api, (a, b), (0, CORES), 120, "B to take the executors A's Spark released")
    assert not api.app(a).state.terminal  # A's driver is alive: only its executors went
