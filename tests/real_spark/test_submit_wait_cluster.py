"""``sessionsched submit --wait`` on a real local Spark standalone cluster: it follows the app
and exits with the app's own exit code. Two tiny apps (one passing, one exiting 3) run side by
side in two queues, so the whole test costs about one app run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import SMALL, conf_args, stop_server_and_its_apps
from tests.support.cli_helpers import QUEUES, SLEEP_TASKS, cli_env, run_cli

pytestmark = pytest.mark.cluster

END_S = 300  # bound on an app's whole life on a busy 2-core machine


@pytest.fixture
def cluster_server(tmp_path, spark_cluster):
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {
            "backend": "standalone",
            "master": spark_cluster.master_url,
            "master_ui": spark_cluster.master_ui,
            "driver_slots": 2,
        },
        "queues": QUEUES,
        "defaults": {"queue": "root.etl"},
    }
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        yield server
    finally:
        stop_server_and_its_apps(server)


def start_submit(server, queue: str, exit_code: int) -> subprocess.Popen:
    args = [
        "submit", "--server", server.url, "--queue", queue, "--wait",
        "--name", f"wait-{exit_code}", *conf_args(SMALL),
        SLEEP_TASKS.name, "--stages", "1x1", "--exit-code", str(exit_code),
    ]  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "sessionsched.cli", *args],
        cwd=SLEEP_TASKS.parent,  # a relative app path: the server resolves it in our cwd
        env=cli_env(PYSPARK_PYTHON=sys.executable),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=END_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=10)
        pytest.fail(f"submit --wait did not return within {END_S}s; stderr: {err[-2000:]}")
    return proc.returncode, out, err


def test_submit_wait_exits_with_the_apps_exit_code(cluster_server):
    passing = start_submit(cluster_server, "etl", 0)
    failing = start_submit(cluster_server, "adhoc", 3)
    (ok_code, ok_out, ok_err), (bad_code, bad_out, bad_err) = finish(passing), finish(failing)

    assert (ok_code, bad_code) == (0, 3), (ok_err[-2000:], bad_err[-2000:])
    ok_id, bad_id = ok_out.strip(), bad_out.strip()  # stdout: the id alone
    # stderr follows the app (plain lines: not a terminal) through its states to the end.
    assert "ACCEPTED" in ok_err and ", FINISHED, root.etl" in ok_err.replace(
        ": FINISHED", ", FINISHED"
    )
    assert f"{bad_id}: FAILED" in bad_err and "exit code 3" in bad_err
    assert f"--- last lines of {bad_id}'s driver log ---" in bad_err

    ok = json.loads(run_cli("status", ok_id, "--json", "--server", cluster_server.url).stdout)
    bad = json.loads(run_cli("status", bad_id, "--json", "--server", cluster_server.url).stdout)
    assert (ok["state"], ok["exit_code"], ok["queue"]) == ("FINISHED", 0, "root.etl")
    assert (bad["state"], bad["exit_code"], bad["queue"]) == ("FAILED", 3, "root.adhoc")
    assert ok["first_executor_at"] is not None  # it really ran on the cluster's executors
