"""Executors of running apps shared by the service, stepped by hand on a 6-core memory cluster
(``stepped_service.py``): weights are priorities and follow a priority change, a killed
driver's executors go to the others, the ``demand`` admission starts one driver ahead into room
the running apps still want. The memory cluster does what the agents do on a real cluster (it
reports each app's demand, caps executors, kills the reclaimed ones); what only real Spark can
answer -- a killed executor's tasks retried, a decommission that loses no task, a dead agent's
executors coming back -- is in tests/real_spark/agent_cluster/test_agent_cluster.py."""

from __future__ import annotations

import pytest

from sessionsched.backends.memory import WORK, MemoryCluster
from sessionsched.model import Resources
from sessionsched.service.reads import JOINS_NEXT_CYCLE
from tests.support.stepped_service import Clock, Stepped, stepped_service

CORES = 6  # the smallest size where 1:2 and 1:1 are whole numbers of executors, 2:4 and 3:3
ONE_CORE = {"spark.executor.cores": "1", "spark.executor.memory": "512m"}
QUEUES = [{"name": "root", "queues": [
    {"name": "fair", "policy": "fairshare", "reclaim_timeout": 0, "admission": "stateaware"},
    {"name": "demand", "policy": "fifo", "admission": "demand"},
]}]


@pytest.fixture
def s(state_dir, tmp_path):
    cluster = MemoryCluster(Resources(CORES, 8192), driver_slots=4, driver_start_s=1.0,
                            executor_start_s=1.0, executor_idle_timeout_s=60)
    with stepped_service(state_dir, cluster, tmp_path, Clock(), QUEUES,
                         defaults={"queue": "root.fair"}) as stepped:
        yield stepped


def submit(s: Stepped, name: str, queue: str, priority: int, work: str) -> str:
    return s.submit(name, priority, queue=queue, **ONE_CORE, **{WORK: work})


def settle(s: Stepped, ids: tuple[str, ...], expected: tuple[int, ...], what: str) -> None:
    """Cycles until the apps hold ``expected`` executors, and still do 3 s later (converged,
    not passing through)."""
    def converged() -> bool:
        if s.executors(*ids) != expected:
            return False
        s.cycle(3.0)
        return s.executors(*ids) == expected
    s.until_true(converged, what, step_s=0.5, cycles=200)


def test_fairshare_splits_by_priority_and_follows_a_priority_change_and_a_killed_driver(s):
    # Both want 30 executors (30 tasks of 120 s): far more than the 6 the cluster has.
    a = submit(s, "fair-a", "root.fair", 5000, "30x120")
    s.until_true(lambda: s.executors(a) == (CORES,), "A to take the whole idle cluster")
    b = submit(s, "fair-b", "root.fair", 10000, "30x120")
    # 5000 : 10000 of 6 executors = 2 : 4. A gives back 4 (killed: reclaim_timeout 0).
    settle(s, (a, b), (2, 4), "the 1:2 split")

    s.done(s.service.set_priority(a, 10000))  # equal weights now: 3 : 3
    settle(s, (a, b), (3, 3), "the 1:1 split after A's priority change")

    # A driver that dies (nobody asked) gives its executors back: B (demand 30) grows into all.
    s.cluster.stop(a)
    s.until_true(lambda: s.app(a)["state"] in ("FINISHED", "FAILED", "KILLED"),
                 "A's driver to be seen gone")
    settle(s, (b,), (CORES,), "B to take A's executors")


def test_demand_admission_starts_one_driver_ahead_and_holds_the_next_while_cores_are_wanted(s):
    a = submit(s, "demand-a", "root.demand", 5000, f"{CORES}x40")
    s.until_true(lambda: s.executors(a) == (CORES,), "A to take the whole idle cluster")
    b = submit(s, "demand-b", "root.demand", 5000, "2x2")
    c = submit(s, "demand-c", "root.demand", 5000, "2x2")
    s.cycle()
    seen_b, seen_c = s.app(b), s.app(c)
    assert JOINS_NEXT_CYCLE not in (seen_b["reason"], seen_c["reason"])
    # A's six tasks still run, so the room B's executors need is wanted: B's driver may start
    # ahead of it (it could pre-process meanwhile), one per queue; C waits. stateaware would
    # have started both beside A, one at a time.
    assert seen_b["state"] == "STARTING", seen_b
    assert seen_c["state"] == "ACCEPTED" and seen_c["reason_code"] == "running_demand", seen_c
    assert "above their floors" in seen_c["reason"], seen_c
    assert s.app(a)["state"] == "RUNNING"  # A still wanted its cores when C was held
    assert s.executors(a, b) == (CORES, 0)  # and kept them: B's driver waits for A's leftovers
    for app_id in (b, c):
        done = s.until(app_id, "FINISHED", cycles=400)
        assert done["exit_code"] == 0 and done["first_executor_at"]  # its tasks ran
    assert s.app(a)["state"] == "FINISHED"
