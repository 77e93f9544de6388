"""Fixtures for the door tests: the scheduler (``sessionsched serve``) on the real test
cluster, and real clients run from the Airflow virtualenv (``airflow_venv``)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionsched.backends.spark_home import spark_submit
from sessionsched.commands._serverproc import ServerProcess
from tests.real_spark.clients import airflow_venv
from tests.sparkcluster import free_port, spark_env, stop_server_and_its_apps

CLIENT_TIMEOUT_S = 420  # one client run: a JVM start or two on a loaded 2-core machine


@pytest.fixture(scope="session")
def airflow_python() -> Path:
    return airflow_venv.ensure()


@pytest.fixture
def sched(spark_cluster, tmp_path) -> Iterator[ServerProcess]:
    """The scheduler on the test cluster (one queue, stateaware), on a port of the test range;
    its live apps are killed and it is stopped at the end."""
    config = {
        # The default cycle: at 100 ms the idle server and the master it reads took ~10 % of a
        # core, ~6 % at 200 (a submission wakes a cycle at once either way).
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 200, "port": free_port()},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui},
        "queues": [{"name": "root", "queues": [{"name": "default", "admission": "stateaware"},
                                               {"name": "etl", "admission": "stateaware"}]}],
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server
    finally:
        stop_server_and_its_apps(server)


@pytest.fixture
def airflow(airflow_python, sched, tmp_path):
    """Run ``airflow_jobs.py COMMAND ARGS`` in the Airflow virtualenv with connections
    ``spark_sched`` (cluster deploy mode, ``rest-port`` = the scheduler's port) and
    ``livy_sched`` to the scheduler; returns (its RESULT as data, its whole output)."""
    port = int(sched.url.rsplit(":", 1)[1])
    spark_bin = str(Path(spark_submit()).parent)
    env = {
        **spark_env(),
        "PATH": f"{spark_bin}{os.pathsep}{os.environ['PATH']}",
        "AIRFLOW_HOME": str(tmp_path / "airflow-home"),
        "AIRFLOW_CONN_SPARK_SCHED": json.dumps({
            "conn_type": "spark", "host": "spark://127.0.0.1", "port": port,
            "extra": {"deploy-mode": "cluster", "rest-port": port}}),
        "LIVY_URL": sched.url,
        "AIRFLOW_CONN_LIVY_SCHED": json.dumps({
            "conn_type": "livy", "host": "127.0.0.1", "port": port}),
    }
    # The virtualenv is the tests' own and uv installs it without bytecode: where
    # PYTHONDONTWRITEBYTECODE is set, each run compiled the Airflow modules it imports again
    # (4.0 s of CPU for the operators' imports, 1.7 s from bytecode). The first run writes it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run(*args: str) -> tuple[dict, str]:
        done = subprocess.run(
            [str(airflow_python), str(Path(__file__).with_name("airflow_jobs.py")), *args],
            capture_output=True, text=True, env=env, timeout=CLIENT_TIMEOUT_S,
            stdin=subprocess.DEVNULL)
        out = done.stdout + done.stderr
        results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        assert results, f"no result (exit {done.returncode}): {out[-3000:]}"
        return json.loads(results[-1].removeprefix("RESULT ")), out

    return run
