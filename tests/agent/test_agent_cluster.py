"""The agent on a real cluster: executors of running apps arbitrated live, through the real
submit path (``POST /api/v1/apps`` -> ``sessionsched serve`` -> spark-submit with the agent's
bootstrap -> a PySpark driver whose agent heartbeats the server). Fixtures and helpers:
``conftest.py`` (a 6-core cluster of these tests' own, 1-core/512m executors, sleep-based tasks).

Each test names the behaviour it checks; every wait is bounded. Between tests every app is
killed and the cluster is back to idle.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from agent_stack import CORES, driver_pid, finished, held, report, settle, submit

from sessionsched.service.reads import JOINS_NEXT_CYCLE
from tests.sparkcluster import wait_until

pytestmark = pytest.mark.cluster


# --- fairshare: weights are priorities ----------------------------------------------------


def test_fairshare_splits_by_priority_and_follows_a_priority_change_and_a_killed_driver(api):
    # Both want 30 executors (30 tasks of 120 s): far more than the 6 the cluster has.
    a = submit(api, "fair-a", "root.fair", 5000, "--tasks", 30, "--seconds", 120)
    wait_until(lambda: held(api, a) == (CORES,), 120, "A to take the whole idle cluster")
    b = submit(api, "fair-b", "root.fair", 10000, "--tasks", 30, "--seconds", 120)
    # 5000 : 10000 of 6 executors = 2 : 4. A gives back 4 (killed: reclaim_timeout 0).
    settle(api, (a, b), (2, 4), 120, "the 1:2 split")

    api.set_priority(a, 10000)  # equal weights now: 3 : 3
    settle(api, (a, b), (3, 3), 90, "the 1:1 split after A's priority change")

    # A killed driver gives its executors back: B (demand 30) grows into all six.
    pid = wait_until(lambda: driver_pid(api, a), 10, "A's driver pid")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: finished(api, a), 60, "A's driver to be seen gone")
    settle(api, (b,), (CORES,), 120, "B to take A's executors")


# --- priority: the higher one gets what it asks, the other the rest ---------------------------


def test_priority_policy_and_kill_reclaim_the_victims_job_still_completes(api):
    # A: 12 tasks of 25 s, alone on the cluster: 6 executors, all busy.
    a = submit(api, "prio-a", "root.prio", 3000, "--tasks", 12, "--seconds", 25)
    wait_until(lambda: held(api, a) == (CORES,), 120, "A to take the whole idle cluster")
    # B asks for 4 (4 tasks of 40 s) at a higher priority: it gets 4, A keeps the other 2.
    b = submit(api, "prio-b", "root.prio", 9000, "--tasks", 4, "--seconds", 40)
    wait_until(lambda: api.app(b).target == 4, 90, "B's target of 4")
    cut_at = time.monotonic()
    # reclaim_timeout 0: A's surplus goes at once, busy or not.
    wait_until(lambda: held(api, a)[0] <= 2, 30, "A's surplus killed")
    assert time.monotonic() - cut_at < 30
    settle(api, (a, b), (2, 4), 90, "B at 4 (all it asks), A at the remaining 2")
    # A's killed tasks were retried elsewhere: its job completes with every task counted once.
    done = wait_until(lambda: finished(api, a), 240, "A to finish")
    assert (done.state.value, done.exit_code) == ("FINISHED", 0)
    r = report(api, a)
    assert r["result"] == sum(range(12))
    assert r["failed_tasks"] >= 1  # busy executors were really killed


# --- graceful reclaim: decommission, no task lost -------------------------------------------


def test_graceful_reclaim_decommissions_and_loses_no_task(api):
    # A: 12 tasks of 20 s; when B arrives A's 6 executors are mid-task.
    a = submit(api, "grace-a", "root.graceful", 3000, "--tasks", 12, "--seconds", 20)
    wait_until(lambda: held(api, a) == (CORES,), 120, "A to take the whole idle cluster")
    b = submit(api, "grace-b", "root.graceful", 9000, "--tasks", 4, "--seconds", 20)
    wait_until(lambda: api.app(b).target == 4, 90, "B's target of 4")
    cut_at = time.monotonic()
    # Decommissioned executors finish their running task (<= 20 s), hand over their blocks and
    # leave well before the 60 s deadline; B takes their cores.
    wait_until(lambda: held(api, a)[0] <= 2, 55, "A's surplus decommissioned")
    assert time.monotonic() - cut_at < 55
    wait_until(lambda: held(api, b) == (4,), 60, "B at 4")
    done = wait_until(lambda: finished(api, a), 240, "A to finish")
    assert (done.state.value, done.exit_code) == ("FINISHED", 0)
    r = report(api, a)
    assert r == {**r, "result": sum(range(12)), "failed_tasks": 0}


# --- demand admission: a driver starts into room the running apps do not want -------------


def test_demand_admission_starts_one_driver_ahead_and_holds_the_next_while_cores_are_wanted(
        api):
    a = submit(api, "demand-a", "root.demand", 5000, "--tasks", CORES, "--seconds", 40)
    wait_until(lambda: held(api, a) == (CORES,), 120, "A to take the whole idle cluster")
    b = submit(api, "demand-b", "root.demand", 5000, "--tasks", 2, "--seconds", 2)
    c = submit(api, "demand-c", "root.demand", 5000, "--tasks", 2, "--seconds", 2)

    def decided(app_id):  # in its queue and held back with a reason, or admitted
        def check():
            app = api.app(app_id)
            placed = app.reason and app.reason != JOINS_NEXT_CYCLE
            return app if placed or app.state.value != "ACCEPTED" else None
        return check

    seen_b = wait_until(decided(b), 60, "B's first scheduling cycle")
    seen_c = wait_until(decided(c), 60, "C's first scheduling cycle")
    # A's six tasks still run, so the room B's executors need is wanted: B's driver may start
    # ahead of it (it could pre-process meanwhile), one per queue; C waits. stateaware would
    # have started both beside A, one at a time.
    assert seen_b.state.value == "STARTING", (seen_b.state, seen_b.reason)
    assert seen_c.state.value == "ACCEPTED" and "want the room" in seen_c.reason, (
        seen_c.state, seen_c.reason, api.app(a).raw)
    assert report(api, a) is None  # A still wanted its cores when C was held
    assert held(api, a, b) == (CORES, 0)  # and kept them: B's driver waits for A's leftovers
    for app_id in (b, c):
        done = wait_until(lambda i=app_id: finished(api, i), 240,
                          f"{app_id} to run once A no longer wants the cores")
        assert (done.state.value, done.exit_code) == ("FINISHED", 0)
        assert report(api, app_id)["result"] == 1
    assert report(api, a) is not None


# --- a dead agent: the cluster's view gives the executors back ------------------------------


def test_a_dead_agent_gives_its_executors_back_once_spark_releases_them(api):
    # A's agent dies once A holds the cluster (the app detaches it); A's job of 6 tasks x 60 s
    # ends, its executors go idle and Spark's own idle timeout (5 s) releases them; the driver
    # lingers.
    a = submit(api, "deadagent-a", "root.fair", 5000, "--tasks", 6, "--seconds", 60,
               "--detach-agent-at", CORES, "--linger-s", 300, idle_timeout_s=5)
    wait_until(lambda: held(api, a) == (CORES,), 120, "A to take the whole idle cluster")
    b = submit(api, "deadagent-b", "root.fair", 5000, "--tasks", 30, "--seconds", 120)
    # While A's agent is silent nobody takes A's busy executors: B waits.
    wait_until(lambda: api.app(b).demand > 0, 90, "B's demand")
    assert held(api, a, b) == (CORES, 0)
    wait_until(lambda: report(api, a), 150, "A's job to end")
    # Nobody heartbeats for A; the master's view shows its executors leaving; B gets them all.
    settle(api, (a, b), (0, CORES), 120, "B to take the executors A's Spark released")
    assert not api.app(a).state.terminal  # A's driver is alive: only its executors went


# --- probe failure: admission-only ----------------------------------------------------------


def test_an_app_without_dynamic_allocation_is_admission_only_and_completes(api):
    # A static app: no allocation manager to cap. The agent says so and the app runs as is.
    a = submit(api, "static-a", "root.fair", 5000, "--tasks", 2, "--seconds", 2,
               conf={"spark.dynamicAllocation.enabled": "false", "spark.cores.max": "2"})
    done = wait_until(lambda: finished(api, a), 180, "the static app to finish")
    assert (done.state.value, done.exit_code) == ("FINISHED", 0)
    assert report(api, a)["result"] == 1
    agent = [e["detail"] for e in api.events(a) if e["kind"] == "agent"]
    assert len(agent) == 1
    assert "control admission-only" in agent[0]
    assert "executorAllocationManager() is empty: dynamic allocation is off" in agent[0]

