"""A driver-heavy burst through the server: Spark REST submissions of tiny apps (an
in-cluster 1-core driver and at most one 1-core executor) on a memory cluster with room for
them all are launched together in the cycle that takes them, up to the admission slice - not
one per driver start."""

from __future__ import annotations

from sessionsched.backends.memory import MemoryCluster
from sessionsched.engine.budget import DEFAULT
from sessionsched.model import Resources
from tests.doors.spark_rest.test_spark_rest import create_body
from tests.support.stepped_service import START_S, Clock, stepped_service

QUEUES = [{"name": "root", "queues": [{"name": "default"}]}]  # the default admission: demand
TINY = {"spark.driver.cores": "1", "spark.executor.cores": "1", "spark.driver.memory": "512m",
        "spark.executor.memory": "512m", "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.maxExecutors": "1"}


def test_a_burst_of_driver_heavy_rest_submissions_starts_in_one_cycle(state_dir, tmp_path):
    n = DEFAULT.admit  # a whole admission slice (100)
    roomy = MemoryCluster(Resources(3 * n, 3 * n * 1024), driver_slots=4,
                          driver_start_s=START_S, executor_start_s=START_S, work_s=2)
    with stepped_service(state_dir, roomy, tmp_path, Clock(), QUEUES) as s:
        ids = []
        for i in range(n):
            r = s.client.post("/v1/submissions/create",
                              json=create_body(props={**TINY, "spark.app.name": f"tiny-{i}"}))
            assert r.status_code == 200 and r.json()["success"], r.text
            ids.append(r.json()["submissionId"])
        s.cycle()
        spec = s.service.engine.apps[ids[0]].spec  # the premise: driver-heavy apps
        assert (spec.driver_in_cluster, spec.driver.cores, spec.executor_cap) == (True, 1, 1)
        states = [s.app(i)["state"] for i in ids]
        assert states == ["STARTING"] * n, {st: states.count(st) for st in set(states)}
