"""Bounded steps in a whole run: a burst bigger than the admission and event slices
(``engine.budget``) is handed over and admitted over several cycles, every app finishes, none
is admitted out of its queue's order, and a priority update is never handed over before its
app's submission."""

import pytest
from sim_builders import app, queue, stage, workload

from sessionsched.engine import Scheduler
from sessionsched.engine.budget import CycleBudget
from sessionsched.sim.simulator import Simulator


def run(w, admit: int, events: int):
    c = w.cluster
    sim = Simulator(w, Scheduler(w.root, c.capacity, c.driver_slots,
                                 CycleBudget(admit=admit, events=events)))
    return sim.run()


@pytest.mark.parametrize("mode", ["none", "stateaware", "reserve"])
def test_a_burst_bigger_than_both_slices_finishes_in_queue_order(mode):
    apps = [app(f"a{i:02d}", queue="q", priority=1 + (i * 7) % 12,
                driver={"cores": 1, "memory": "1g", "in_cluster": i % 2 == 0},
                max_executors=2, stages=[stage(2, 5)])
            for i in range(12)]
    # the last app's priority is raised in the very cycle it is submitted
    apps[-1]["updates"] = [{"at": 0, "priority": 10000}]  # handed over after it, never before
    w = workload(*apps, cluster={"cores": 16, "driver_slots": 8},
                 queues=[queue("q", admission=mode, starting_limit=4)])
    res = run(w, admit=2, events=5)  # 13 workload events: cycles 0, 1, 2 hand 5, 5, 3 over
    assert res.summary["completed"] == 12 and res.summary["stuck"] == 0  # none lost
    admitted = {a["name"]: a["admitted"] for a in res.to_json()["apps"]}
    per_cycle = [list(admitted.values()).count(t) for t in set(admitted.values())]
    assert max(per_cycle) <= 2  # the admission slice
    assert min(admitted[f"a{i:02d}"] for i in range(5, 12)) >= 1  # handed over at cycle 1
    assert min(admitted["a10"], admitted["a11"]) >= 2  # ... and at cycle 2
