"""Capacity on the real cluster: what an application the backend did not launch holds is
taken off, until the service says it manages that application (a notebook's driver)."""

from __future__ import annotations

import pytest

from sessionsched.engine.events import ExecutorsChanged
from sessionsched.model import Resources
from tests.cluster.backend_helpers import Seen, make_backend, poll_until, spark_app_id_in_log
from tests.sparkcluster import SMALL, conf_args, spark_submit_process, wait_idle, wait_until

pytestmark = pytest.mark.cluster

WHOLE = Resources(4, 4096)  # the session cluster: 1 worker, 4 cores, 4g


def test_capacity_minus_an_app_the_backend_did_not_launch(spark_cluster, pyspark_app, tmp_path):
    wait_idle(spark_cluster)
    backend = make_backend(spark_cluster, tmp_path / "run")
    log = tmp_path / "foreign.log"
    # Dynamic allocation off and spark.cores.max=1: it holds one 1-core/512m executor.
    args = ["--master", spark_cluster.master_url,
            *conf_args({**SMALL, "spark.cores.max": "1", "spark.driver.host": "127.0.0.1"}),
            str(pyspark_app), "--tasks", "1", "--task-s", "1", "--hold-s", "300"]
    try:
        assert backend.capacity() == (WHOLE, 4)
        with spark_submit_process(args, log):
            wait_until(lambda: backend.capacity()[0] == Resources(3, 3584), 120,
                       "the foreign app's executor to be taken off (4-1 cores, 4096-512 MiB)")
            foreign = wait_until(lambda: spark_app_id_in_log(log), 30, "the app to print its id")

            backend.manage("driver-notebook", foreign)
            assert backend.capacity()[0] == WHOLE
            seen = poll_until(backend, Seen(), lambda s: s.max_executors("driver-notebook") == 1,
                              30, "the managed app's executor to be reported")
        # The app was stopped with the block: its executors are reported gone.
        poll_until(backend, seen, lambda s: s.of("driver-notebook", ExecutorsChanged)[-1][1]
                   .executors == (), 60, "the managed app's executors to go")
        assert backend.capacity()[0] == WHOLE
    finally:
        backend.close()
