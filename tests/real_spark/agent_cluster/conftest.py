"""Fixtures of the agent's real-cluster tests: a 6-core, 1-worker local cluster of their own
(1-core/512m executors; six is the smallest size where 1:2 and 1:1 are whole numbers of
executors, 2:4 and 3:3), started once for the run and stopped by PID at the end, and
``sessionsched serve`` on it, one per test; ``api`` kills every app a test submitted and waits
for the cluster to be idle.

A server per test, not one for the run: idle, a server still steps its cycle five times a
second, each reading the master (~3.5 % of a core, and ~1 % more in the master, measured in a
full run on a 2-core machine), and the run's one lived on each worker that ran an agent test
from then to the end of the run, mostly idle (its worker busy with other tests); a server's
start is ~1.7 s of CPU.
"""

from __future__ import annotations

import pytest
from agent_stack import CORES, QUEUES, described

from sessionsched.backends.local import LocalCluster
from sessionsched.client import SchedulerClient
from sessionsched.client.errors import ApiError
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import master_ports, started_cluster, wait_until


@pytest.fixture(scope="session")
def agent_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("agent-cluster")

    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(directory, workers=1, cores=CORES, memory="4g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=180)

    with started_cluster(make) as cluster:
        yield cluster


@pytest.fixture
def server(agent_cluster, tmp_path):
    work = tmp_path / "agent-server"
    config = {
        "server": {"state_dir": str(work / "state"), "cycle_ms": 200, "heartbeat_s": 1.0},
        "cluster": {"backend": "standalone", "master": agent_cluster.master_url,
                    "master_ui": agent_cluster.master_ui, "driver_slots": 4},
        "defaults": {"queue": "root.fair"},
        "queues": QUEUES,
    }
    s = ServerProcess.start(config, work)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def api(server, agent_cluster):
    """A client; every app it submitted is killed afterwards and the cluster left idle."""
    client = SchedulerClient(server.url)
    client.submitted = []
    try:
        yield client
    finally:
        print_apps(client)  # pytest shows it when the test failed: where each app stood
        for app_id in client.submitted:
            if not client.app(app_id).state.terminal:
                client.kill(app_id)
        wait_until(lambda: all(client.app(a).state.terminal for a in client.submitted), 60,
                   "every app to end")
        for app_id in client.submitted:  # the agent never failed quietly inside a driver
            assert "sessionsched agent: Spark call failed" not in driver_log(client, app_id, 5000)
        wait_until(lambda: not agent_cluster.status().apps, 60, "the cluster to have no app left")
        client.close()


def print_apps(client: SchedulerClient) -> None:
    """Each app the test submitted: its state, executors, target, demand, why it waits, and
    the end of its driver log."""
    for app_id in client.submitted:
        print(f"--- {described(client.app(app_id))}")
        print(driver_log(client, app_id, 30), end="")


def driver_log(client: SchedulerClient, app_id: str, lines: int) -> str:
    """The end of the app's driver log; empty when it has none here (never launched, or a
    session's driver, which the notebook's kernel runs)."""
    try:
        return client.log(app_id, lines)
    except ApiError as e:
        if e.status == 404:
            return ""
        raise
