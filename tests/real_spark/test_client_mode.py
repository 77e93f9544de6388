"""The standalone backend with client-mode PySpark drivers on the session's real cluster:
what it reports, stopping a driver, and a new backend instance adopting drivers after a
"restart" -- one story, so the cluster runs three Spark apps in all."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from sessionsched.backends import procs
from sessionsched.backends.base import Handle, Launch
from sessionsched.engine.events import DriverExited, DriverStarted, ExecutorsChanged
from sessionsched.model import Resources
from tests.real_spark.backend_helpers import (
    Seen,
    exited,
    make_backend,
    poll_until,
    spark_app_id_in_log,
)
from tests.sparkcluster import DYNAMIC, SMALL, wait_idle, wait_until

pytestmark = pytest.mark.cluster

CONF = {**SMALL, **DYNAMIC}


def app_launch(app_id: str, app, *args: str) -> Launch:
    return Launch(app_id, app_id, argv=(str(app), *args), conf=CONF)


def test_drivers_report_start_executors_and_exit_code_and_a_new_backend_adopts_them(
        spark_cluster, pyspark_app, tmp_path):
    """One story, so the cluster starts three Spark apps, not five: two drivers run to their end
    (0, 3) while a long one runs on; a short one (no Spark) is launched last and ends while
    nobody watches. The scheduler "restarts" between launch and poll: a fresh backend on the
    same run directory takes back the running driver and learns the exit code of the one that
    ended unwatched; stopping the adopted driver empties its process group."""
    wait_idle(spark_cluster)
    run_dir = tmp_path / "run"
    first = make_backend(spark_cluster, run_dir)
    cases = {"driver-ok": 0, "driver-fails": 3}
    launched_at = time.time()
    long = first.launch(app_launch("driver-long", pyspark_app, "--tasks", "1", "--task-s", "1",
                                   "--hold-s", "600"))
    group = procs.ProcessId.parse(long.ref)
    first_open, second = True, None
    try:
        for app_id, code in cases.items():
            first.launch(app_launch(app_id, pyspark_app, "--tasks", "2", "--task-s", "2",
                                    "--exit-code", str(code)))
        seen = poll_until(first, Seen(), exited(*cases), 240, "both drivers to exit")
        short = first.launch(app_launch("driver-short", pyspark_app, "--no-spark",
                                        "--exit-code", "4"))
        first.close()  # gone without a poll and without stopping anything
        first_open = False

        for app_id, code in cases.items():
            assert seen.exit_code(app_id) == code
            # the id the backend learnt is the one the app itself saw
            assert seen.spark_app_id(app_id) == spark_app_id_in_log(run_dir / f"{app_id}.log")
            started = seen.first(app_id, DriverStarted)
            executor = seen.first(app_id, ExecutorsChanged, lambda e: len(e.executors) >= 1)
            ended = seen.first(app_id, DriverExited)
            assert started[0] < executor[0] < ended[0], seen.of(app_id)
            assert len(seen.of(app_id, DriverStarted)) == 1
            assert len(seen.of(app_id, DriverExited)) == 1
        # Our own apps' executors are never taken off the capacity: 4 cores, 4g the whole time.
        assert seen.capacities() and {c.capacity for c in seen.capacities()} == {
            Resources(4, 4096)}
        ok = "driver-ok"
        print(f"\nclient-mode PySpark app on this machine: DriverStarted after "
              f"{seen.first(ok, DriverStarted)[1] - launched_at:.1f}s, first executor after "
              f"{seen.first(ok, ExecutorsChanged)[1] - launched_at:.1f}s, exit after "
              f"{seen.first(ok, DriverExited)[1] - launched_at:.1f}s")

        wait_until(lambda: (run_dir / "driver-short.exit").exists(), 120,
                   "the short driver to end unwatched")
        second = make_backend(spark_cluster, run_dir)
        assert second.adopt(long) is True
        assert second.adopt(short) is True
        assert second.adopt(Handle("driver-ghost", "process", f"{_ended_pid()}:1")) is False

        again = poll_until(
            second, Seen(),
            lambda s: s.exit_code("driver-short") is not None and s.max_executors("driver-long"),
            180, "the short driver's exit and the long driver's executors")
        assert again.exit_code("driver-short") == 4
        spark_id = again.spark_app_id("driver-long")
        assert spark_id == spark_app_id_in_log(run_dir / "driver-long.log")
        assert len(_group_members(group.pid)) >= 3  # runner, spark-submit JVM, Python driver

        second.stop("driver-long")
        poll_until(second, again, exited("driver-long"), 60, "the stopped driver to exit")
        assert again.exit_code("driver-long") == 143  # SIGTERM, recorded by the runner
        # (wait_group_gone also collects the runner's status: in this test it is our child)
        assert procs.wait_group_gone(group.pid, 30), _group_members(group.pid)
        wait_until(lambda: not second.client.read().executors_of(spark_id), 60,
                   "the stopped app's executors to leave the cluster")
    finally:
        if first_open:
            for app_id in cases:
                first.stop(app_id)
            first.close()
        if second is not None:
            second.stop("driver-long")
            second.close()
        procs.stop_group(group, grace_s=5)  # whatever happened above, nothing stays behind


def _ended_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=30)
    return p.pid


def _group_members(pgid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "pid=,stat=,comm=", "-g", str(pgid)], capture_output=True,
                         text=True)
    return out.stdout.strip().splitlines()
