"""The simulator's accounting (``sessionsched.model.usage``, counted by the memory cluster): per app
held, busy, idle and reclaimed core-seconds, GiB-seconds, the driver's and time queued.

Cluster (sim_builders.QUICK_CLUSTER): 8 cores, driver start 2 s, executor start 1 s, idle
timeout 30 s, cycle 1 s.
"""

from pathlib import Path

import pytest
from sim_builders import app, queue, stage, workload

from sessionsched.sim import simulate
from sessionsched.sim.workload import load_workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"


def by_name(result):
    return {a.name: a for a in result.apps}


def work_s(sim_app) -> float:
    return sum(s.tasks * s.task_s for s in sim_app.stages)


MIXED = ["mixed-queues.yaml", "preprocessing-mixed.yaml", "notebooks-fairshare.yaml"]


@pytest.mark.parametrize("name", MIXED)
def test_busy_is_the_tasks_work_and_held_is_busy_plus_idle_for_every_app(name):
    w = load_workload(EXAMPLES / name)
    result = simulate(w)
    for a in w.apps:
        u = by_name(result)[a.name].usage
        # work thrown away by reclaim was run again: busy = the tasks' work + what was lost
        assert u["busy_core_s"] - u["reclaimed_core_s"] == pytest.approx(work_s(a), abs=1e-6)
        assert u["held_core_s"] == pytest.approx(u["busy_core_s"] + u["idle_core_s"], abs=2e-3)
        assert u["idle_core_s"] >= 0


# low (priority 1000) holds all 8 one-core executors with 100 s tasks from t=3 (driver up at 2,
# executors 1 s later); high (9000) arrives at 20 and wants 4 executors at 22.
RECLAIM = {
    # killed at once when high asks (t=22): 4 tasks lose 22 - 3 = 19 s each
    "kill": (0, 4, 4 * 19.0),
    # decommissioned at 22, killed at the deadline 22 + 30 = 52: 4 tasks lose 49 s each
    "decommission": (30, 4, 4 * 49.0),
    # only idle executors: low's tasks run to their end, nothing is lost
    "idle": (-1, 0, 0.0),
}


@pytest.mark.parametrize("timeout,executors,lost_core_s", RECLAIM.values(), ids=RECLAIM.keys())
def test_reclaimed_work_is_the_killed_tasks_run_time(timeout, executors, lost_core_s):
    w = workload(
        app("low", priority=1000, max_executors=8, stages=[stage(8, 100)]),
        app("high", submit=20, priority=9000, max_executors=4, stages=[stage(4, 10)]),
        queues=[queue("q", policy="priority", reclaim_timeout=timeout)],
    )
    low = by_name(simulate(w))["low"].usage
    assert low["reclaimed_executors"] == executors
    assert low["reclaimed_core_s"] == pytest.approx(lost_core_s)
    assert low["busy_core_s"] == pytest.approx(8 * 100 + lost_core_s)


def test_an_app_alone_idles_through_a_stage_tail_and_its_driver_is_counted():
    # 8 executors up at 3 to 33 (test_sim_scenarios: held through the tail of stage 1);
    # 2 GiB executors; the client-mode driver (1 core, 1 GiB) from its launch at 0 to 33.
    w = workload(app("a", max_executors=8, executor={"cores": 1, "memory": "2g"},
                     stages=[stage(12, 10), stage(8, 10)]))
    u = by_name(simulate(w))["a"].usage
    assert u == {
        "held_core_s": 8 * 30.0,
        "busy_core_s": 12 * 10 + 8 * 10.0,
        "idle_core_s": 40.0,  # 4 executors idle for the last 10 s of stage 1
        "reclaimed_core_s": 0.0,
        "reclaimed_executors": 0,
        "held_gib_s": 2 * 8 * 30.0,
        "driver_core_s": 33.0,
        "driver_gib_s": 33.0,
        "queued_s": 0.0,
    }


def test_queued_time_is_submission_to_launch():
    # one core: b waits for a's end (a: driver 2 s + executor 1 s + 4 tasks of 5 s = 23)
    w = workload(app("a", stages=[stage(4, 5)]), app("b", submit=1, stages=[stage(1, 1)]),
                 cluster={"cores": 1, "driver_slots": 1})
    apps = by_name(simulate(w))
    assert apps["a"].usage["queued_s"] == 0.0
    assert apps["b"].usage["queued_s"] == pytest.approx(apps["b"].admitted - 1)
    assert apps["b"].usage["queued_s"] >= 20
