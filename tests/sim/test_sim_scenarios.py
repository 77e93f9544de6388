"""Small workloads through the real engine: what a Spark operator would see, one row each.

Cluster (sim_builders.QUICK_CLUSTER): 8 cores, 4 driver slots, driver start 2 s, executor
start 1 s, cycle 1 s. Apps are client-mode with 1-core executors unless a row says otherwise.
"""

import re
import time

import pytest
from sim_builders import app, queue, stage, workload

from sessionsched.sim import simulate
from sessionsched.sim.result import alone_s, jain
from sessionsched.sim.simulator import Simulator


def by_name(result):
    return {a.name: a for a in result.apps}


# low (priority 1000) holds all 8 cores with 100 s tasks; high (9000) arrives at 20 and asks
# for 4 executors at 22. When high gets its first executor depends on the reclaim mode.
RECLAIM = {
    "reclaim_timeout 0: kill now": (0, 24, 26),
    "reclaim_timeout 30: decommission, killed at the deadline (22 + 30)": (30, 53, 55),
    "reclaim_timeout -1: only idle executors, when low's tasks end at 103": (-1, 104, 106),
}


@pytest.mark.parametrize("reclaim_timeout,earliest,latest", RECLAIM.values(), ids=RECLAIM.keys())
def test_reclaim_mode_decides_when_the_high_priority_app_gets_executors(
    reclaim_timeout, earliest, latest
):
    w = workload(
        app("low", priority=1000, max_executors=8, stages=[stage(8, 100)]),
        app("high", submit=20, priority=9000, max_executors=4, stages=[stage(4, 10)]),
        queues=[queue("q", policy="priority", reclaim_timeout=reclaim_timeout)],
    )
    apps = by_name(simulate(w))
    assert earliest <= apps["high"].first_executor <= latest
    assert apps["low"].state == apps["high"].state == "FINISHED"


@pytest.mark.parametrize("reclaim_timeout", [0, 30, -1], ids=["kill", "decommission", "idle"])
def test_an_app_alone_keeps_its_executors_through_a_stage_tail(reclaim_timeout):
    # 8 executors up at 3 run 12 tasks of 10 s: from 13 only 4 run, so demand dips to 4 (its
    # target with it); the second stage asks for 8 again at 23. Nobody else wants the cores:
    # nothing is reclaimed, the 4 idle executors wait (idle timeout 30 s) and run stage 2.
    # (Reclaiming at the dip gave 8 -> 4 at 13 -> 8 at 24, done at 34.)
    w = workload(
        app("a", max_executors=8, stages=[stage(12, 10), stage(8, 10)]),
        queues=[queue("q", reclaim_timeout=reclaim_timeout)],
    )
    sim = Simulator(w)
    result = sim.run()
    held = result.timeline.executors["a"]
    assert (held.times, held.values) == ([0.0, 3.0, 33.0], [0, 8, 0])
    assert by_name(result)["a"].finished == 33.0  # 3 + 20 s + 10 s
    assert sim.rec.reclaim_kills == []


def test_reserve_driver_waits_for_the_cores_it_is_reclaiming():
    # a holds all 8 cores with 50 s tasks. b (reserve, in-cluster driver) is admitted at 10:
    # its driver and reserved executor come out of a's executors, decommissioned with a 10 s
    # deadline; the driver waits for them like a standalone master's waiting driver.
    w = workload(
        app("a", max_executors=8, stages=[stage(8, 50)]),
        app("b", submit=10, driver={"cores": 1, "in_cluster": True}, stages=[stage(2, 5)]),
        queues=[queue("q", admission="reserve", reclaim_timeout=10)],
    )
    r = simulate(w)
    b = by_name(r)["b"]
    assert b.admitted == 10
    drivers = r.timeline.driver_cores
    assert drivers.at(15) == 0  # still waiting for a's cores
    assert drivers.at(21) == 1  # a's executors killed at the deadline (20)
    assert b.first_executor == 23  # driver start 2 s, executor 1 s
    assert r.summary["stuck"] == 0
    assert r.executor_waits == 0


def test_a_late_priority_update_does_not_keep_a_finished_run_going():
    w = workload(app("a", updates=[{"at": 500, "priority": 9000}]))
    r = simulate(w)
    assert r.apps[0].state == "FINISHED"
    assert r.end_s == r.apps[0].finished < 500
    assert r.apps[0].priority == 5000  # the run ended before the update


def test_driver_slots_limit_client_mode_drivers():
    w = workload(
        *(app(n, submit=i) for i, n in enumerate("abc")),
        cluster={"driver_slots": 1},
        queues=[queue("q", admission="none")],
    )
    apps = by_name(simulate(w))
    assert apps["b"].admitted >= apps["a"].finished
    assert apps["c"].admitted >= apps["b"].finished


def test_in_cluster_driver_cores_are_not_given_to_executors():
    # 8 cores - a 3-core driver = 5 one-core executors at most, though it could use 20.
    w = workload(
        app("a", driver={"cores": 3, "in_cluster": True}, max_executors=20, stages=[stage(40, 5)])
    )
    r = simulate(w)
    assert r.timeline.executors["a"].max() == 5
    assert r.apps[0].state == "FINISHED"


def test_priority_update_on_a_queued_app_jumps_the_queue():
    # One driver slot, three drivers; c's priority is raised while it waits: c starts before b.
    w = workload(
        app("a", submit=0),
        app("b", submit=1),
        app("c", submit=2, updates=[{"at": 3, "priority": 9000}]),
        cluster={"driver_slots": 1},
    )
    apps = by_name(simulate(w))
    assert apps["a"].admitted < apps["c"].admitted < apps["b"].admitted
    assert apps["c"].priority == 9000


def test_starting_timeout_is_waited_for_before_declaring_a_deadlock():
    # 2 cores. a's in-cluster driver takes 1; its 2-core executor can never fit: a is stuck.
    # b waits behind STARTING a until the 50 s StateAware timeout, then runs: the quiet 48 s
    # before that must not be taken for a deadlock.
    w = workload(
        app("a", driver={"cores": 1, "in_cluster": True}, executor={"cores": 2}),
        app("b", submit=1),
        cluster={"cores": 2},
        queues=[queue("q", admission="stateaware", starting_timeout=50)],
    )
    r = simulate(w)
    apps = by_name(r)
    assert apps["a"].state == "RUNNING"  # by the timeout, without an executor
    assert apps["a"].first_executor is None
    assert apps["b"].admitted == 50 and apps["b"].state == "FINISHED"
    assert r.summary["stuck"] == 1


def test_deadlock_ends_the_run_quickly():
    # Every core held by drivers that wait for executors, and a long starting timeout.
    burst = [
        app(f"d{i}", driver={"cores": 1, "in_cluster": True}, max_executors=2) for i in range(10)
    ]
    w = workload(*burst, queues=[queue("q", admission="none", starting_timeout=3000)])
    started = time.perf_counter()
    r = simulate(w)
    took = time.perf_counter() - started
    assert r.summary["stuck"] == 10
    assert "deadlock" in r.end_reason
    assert r.end_s < 3100  # right after the starting timeout, long before max_time_s
    assert took < 5.0, f"a deadlock took {took:.1f}s of wall clock to detect"


def test_max_time_bounds_a_run_that_would_take_longer():
    w = workload(app("a", stages=[stage(1, 10**6)]), cluster={"max_time_s": 100})
    r = simulate(w)
    assert r.apps[0].state == "RUNNING"
    assert r.summary["stuck"] == 1
    assert r.end_s == r.summary["makespan"] == 100
    assert "max_time_s" in r.end_reason
    # one core busy from t=3 (driver 2 s, executor 1 s) of 8 cores for 100 s
    assert r.summary["utilization"] == pytest.approx(97 / 800, abs=1e-4)


JAIN = {
    "all equal: 1": ([0.5, 0.5, 0.5], 1.0),
    "one app got nothing: 1/n": ([1.0, 0.0], 0.5),
    "1 and 1/2: 2.25 / 2.5 = 0.9": ([1.0, 0.5], 0.9),
    "nothing at all: undefined": ([0.0, 0.0], None),
    "no apps: undefined": ([], None),
}


@pytest.mark.parametrize("xs,expected", JAIN.values(), ids=JAIN.keys())
def test_jain(xs, expected):
    assert jain(xs) == (pytest.approx(expected) if expected is not None else None)


ALONE = {
    # driver 2 + startup 0 + executor 1, then ceil(tasks / slots) waves of task_s
    "8 tasks on 8 cores: one wave": (app("a", max_executors=8, stages=[stage(8, 5)]), 3 + 5),
    "capped at 2 executors: 4 waves": (app("a", max_executors=2, stages=[stage(8, 5)]), 3 + 20),
    "two stages plus pre-processing": (
        app("a", startup_s=10, stages=[stage(16, 5), stage(1, 7)]),
        3 + 10 + 10 + 7,
    ),
}


@pytest.mark.parametrize("spec,expected", ALONE.values(), ids=ALONE.keys())
def test_alone_time(spec, expected):
    w = workload(spec)
    assert alone_s(w.apps[0], w) == expected


def test_an_executor_that_can_never_fit_beside_its_driver_is_refused_at_load():
    # (was an alone time of infinity: such an app is now refused, as at submission)
    with pytest.raises(ValueError, match=re.escape(
            "apps[0]: never fits: 1 executor(s) of 6 cores/1024 MiB (at least 1) do not fit the"
            " cluster: its workers hold 0 beside the driver of 4 cores/1024 MiB")):
        workload(app("a", driver={"cores": 4, "in_cluster": True}, executor={"cores": 6}))


def test_an_app_alone_finishes_in_its_alone_time_and_is_perfectly_fair():
    w = workload(app("a", max_executors=8, stages=[stage(16, 5)]))
    r = simulate(w)
    assert r.apps[0].finished == alone_s(w.apps[0], w) == 3 + 10
    assert r.summary["fairness_jain"] == 1.0
    # 16 tasks x 5 s = 80 core-seconds of 8 cores x 13 s
    assert r.summary["utilization"] == pytest.approx(80 / (8 * 13), abs=1e-4)
