"""Node sorting through the service (docs/design/placement.md): a queue's ``node_sort`` reaches the
backend on each launch (``Launch.node_sort``), and the memory cluster places the app's
executors by it. The real service on a memory cluster of 2 workers of 4 cores/8g, stepped by
hand."""

from __future__ import annotations

import pytest

from sessionsched.backends.memory import MemoryCluster
from sessionsched.model import Resources
from tests.support.stepped_service import START_S, Clock, stepped_service


@pytest.mark.parametrize("sort, whole", [("fair", 0), ("binpacking", 1)])
def test_a_queues_node_sort_places_its_executors(state_dir, tmp_path, sort, whole):
    cluster = MemoryCluster(Resources(8, 16384), driver_slots=4, driver_start_s=START_S,
                            executor_start_s=START_S, executor_idle_timeout_s=5, workers=2)
    queues = [{"name": "root", "node_sort": sort, "queues": [{"name": "default"}]}]
    with stepped_service(state_dir, cluster, tmp_path, Clock(), queues) as s:
        conf = {"spark.executor.cores": "1", "spark.dynamicAllocation.maxExecutors": "1",
                "spark.sessionsched.memory.work": "600"}
        ids = [s.submit(f"app-{i}", **conf) for i in range(2)]
        s.until_true(lambda: s.executors(*ids) == (1, 1), "both executors up")
        # client-mode drivers run on the scheduler's host: the two executors are all there is
        assert cluster.pool.whole() == whole
        assert sorted(u.cores for u in cluster.pool.used_on) == ([1, 1] if whole == 0
                                                                  else [0, 2])
        rows = {q["name"]: q["node_sort"] for q in s.client.get("/api/v1/queues").json()}
        assert rows == {"root": sort, "root.default": sort}  # inherited from root
