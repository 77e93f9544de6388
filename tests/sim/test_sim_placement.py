"""Placement in the simulator (docs/design/placement.md): a driver's room now is asked per
worker, with the memory cluster's own report of what is free on each."""

from __future__ import annotations

from sim_builders import app, stage, workload

from sessionsched.sim import simulate

# 2 workers of 4 cores/16g. A (client-mode driver) holds two 3-core executors: one a worker,
# 1 core left on each - 2 cores free in all. B's in-cluster driver needs 2 cores on one worker.
SPLIT = dict(
    cluster={"cores": 8, "memory": "32g", "workers": 2},
    queues=[{"name": "q", "admission": "none", "policy": "fifo"}],
)


def test_a_driver_waits_for_room_on_one_worker_not_for_the_sum():
    w = workload(
        app("A", executor={"cores": 3, "memory": "2g"}, min_executors=2, max_executors=2,
            stages=[stage(6, 30)]),
        app("B", submit=5, driver={"cores": 2, "memory": "2g", "in_cluster": True},
            executor={"cores": 1, "memory": "1g"}, max_executors=1, stages=[stage(1, 1)]),
        **SPLIT)
    r = simulate(w)
    apps = {a.name: a for a in r.apps}
    a, b = apps["A"], apps["B"]
    assert r.stuck == 0 and {a.state, b.state} == {"FINISHED"}
    assert a.first_executor < 5  # both executors up before B is submitted
    # B is launched only once A's executors are gone from a worker, not into the 1 + 1 cores
    # the sum saw at t=5 (where its driver would have waited in the master's queue)
    assert b.admitted >= a.finished - 1
    assert r.executor_waits == 0


def test_an_executor_is_not_granted_into_room_split_across_workers():
    # A's two 3-core executors leave 1 + 1 cores: 2 free in all, but no worker holds B's
    # 2-core executor, so none is granted (before, one was, and waited in the master's queue:
    # executor_waits 1) until A ends
    w = workload(
        app("A", executor={"cores": 3, "memory": "2g"}, min_executors=2, max_executors=2,
            stages=[stage(6, 30)]),
        app("B", submit=1, executor={"cores": 2, "memory": "2g"}, max_executors=2,
            stages=[stage(4, 10)]),
        **SPLIT)
    r = simulate(w)
    apps = {a.name: a for a in r.apps}
    assert r.stuck == 0 and {a.state for a in r.apps} == {"FINISHED"}
    assert r.executor_waits == 0
    assert apps["B"].first_executor >= apps["A"].finished
