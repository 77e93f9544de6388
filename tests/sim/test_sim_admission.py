"""The `demand` admission mode (the default) on the simulator, against `stateaware` and
`reserve`: within 10 % of the better of them on every example workload and every
probe (benchmarks/admission-probes) and never a deadlock; a driver that never asks for
executors completes; a driver that fails at start does not block its queue. Deterministic: the
simulator's clock is virtual."""

from pathlib import Path

import pytest
from sim_builders import app, queue, stage, workload

from sessionsched.model import Admission
from sessionsched.sim import load_workload, simulate
from sessionsched.sim.queue_trees import with_admission

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "workloads"
PROBES = ROOT / "benchmarks" / "admission-probes"  # variations made to find demand's weak spots
WORKLOADS = sorted([*EXAMPLES.glob("*.yaml"), *PROBES.glob("*.yaml")])
TARGET = 1.10  # demand's makespan / the better of stateaware's and reserve's


def by_name(result):
    return {a.name: a for a in result.apps}


@pytest.mark.parametrize("path", WORKLOADS, ids=[p.stem for p in WORKLOADS])
def test_demand_is_within_10_percent_of_the_better_older_mode(path):
    w = load_workload(path)
    runs = {m: simulate(with_admission(w, m))
            for m in (Admission.DEMAND, Admission.STATEAWARE, Admission.RESERVE)}
    demand = runs.pop(Admission.DEMAND)
    assert demand.summary["stuck"] == 0 and not demand.end_reason.startswith("deadlock")
    best = min(r.summary["makespan"] for r in runs.values() if r.summary["stuck"] == 0)
    assert demand.summary["makespan"] <= TARGET * best


def test_the_burst_runs_in_half_the_time_of_either_older_mode():
    # burst-20: 20 in-cluster drivers onto 16 cores (measured: stateaware 270 s, reserve 510 s,
    # demand 123 s)
    w = load_workload(EXAMPLES / "burst-20.yaml")
    makespan = {m: simulate(with_admission(w, m)).summary["makespan"] for m in Admission
                if m is not Admission.NONE}
    assert makespan[Admission.DEMAND] < 0.6 * makespan[Admission.STATEAWARE]
    assert makespan[Admission.DEMAND] < 0.3 * makespan[Admission.RESERVE]


def test_a_driver_that_never_asks_for_executors_completes():
    # alone works 30 s in its driver (driver start 2 s); next is admitted beside it at once
    w = workload(
        app("alone", startup_s=30, stages=[]),
        app("next", submit=1, stages=[stage(4, 5)]),
        queues=[queue("q")],  # the default admission: demand
    )
    r = by_name(simulate(w))
    assert r["alone"].state == "FINISHED" and r["alone"].finished == 32
    assert r["alone"].first_executor is None
    assert r["next"].admitted == 1 and r["next"].state == "FINISHED"


@pytest.mark.parametrize("mode", ["demand", "stateaware"])
def test_a_driver_only_app_holds_its_queue_at_most_until_the_starting_timeout(mode):
    # 2 cores: alone's driver + its first executor fill the cluster under demand; stateaware
    # lets one app start at a time, so next starts at alone's starting timeout (50 s), long
    # before alone's 300 s of work are over. demand starts next at once, ahead of the room
    # alone's first executor would take (one driver ahead per queue), and it runs: alone asks
    # for nothing.
    w = workload(
        app("alone", driver={"cores": 1, "in_cluster": True}, startup_s=300, stages=[]),
        app("next", submit=1, stages=[stage(2, 5)]),
        cluster={"cores": 2},
        queues=[queue("q", admission=mode, starting_timeout=50)],
    )
    r = by_name(simulate(w))
    assert r["next"].admitted == {"demand": 1, "stateaware": 50}[mode]
    assert r["next"].finished < r["alone"].finished == 302


def test_a_driver_that_fails_at_start_does_not_block_its_queue():
    # 2 cores: room for one in-cluster driver and its first executor. bad fails 1 s after its
    # driver is up (t=3); good is admitted in the cycle that hears of it.
    w = workload(
        app("bad", driver={"cores": 1, "in_cluster": True}, startup_s=1, stages=[], exit_code=1),
        app("good", driver={"cores": 1, "in_cluster": True}, stages=[stage(2, 5)]),
        cluster={"cores": 2},
        queues=[queue("q")],
    )
    result = simulate(w)
    r = by_name(result)
    assert r["bad"].state == "FAILED" and r["bad"].finished == 3
    assert r["good"].admitted == 3 and r["good"].state == "FINISHED"
    assert result.summary["failed"] == 1 and result.summary["stuck"] == 0
    assert result.summary["completed"] == 1


def test_apps_that_wait_their_queues_max_wait_end_failed_and_the_run_ends():
    # one driver slot: long holds it 100 s; b and c wait, and end at their max_wait (60 s after
    # their submission at 1 and 2 s); the run ends with long, not at a deadlock
    w = workload(
        app("long", stages=[stage(1, 100)]),
        app("b", submit=1, stages=[stage(1, 5)]),
        app("c", submit=2, stages=[stage(1, 5)]),
        cluster={"driver_slots": 1},
        queues=[queue("q", admission="stateaware", max_wait=60)],
    )
    result = simulate(w)
    r = by_name(result)
    assert [(r[n].state, r[n].finished) for n in ("b", "c")] == [("FAILED", 61), ("FAILED", 62)]
    assert r["b"].admitted is None and r["long"].state == "FINISHED"
    assert (result.summary["failed"], result.summary["stuck"]) == (2, 0)
    assert result.end_reason == "every app finished"
