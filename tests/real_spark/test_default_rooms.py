"""On the default config, a driver counts where it runs (engine/host_room.py): two notebook
sessions (their drivers run in the notebooks' kernels), a Spark Connect session and a batch app
(their drivers on the scheduler's host, whose memory is measured at start) are all admitted at
once on the session's shared test cluster - none waits for a driver slot."""

from __future__ import annotations

import threading

import pytest

from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import conf_args, free_ports, stop_server_and_its_apps, wait_until
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

SMALL = {"spark.executor.cores": "1", "spark.executor.memory": "512m",
         "spark.driver.memory": "512m", "spark.ui.port": "0"}
ADMITTED_S = 180  # a cycle is 100 ms; the Connect client's first call is slow on a loaded host


def test_notebooks_a_connect_session_and_a_batch_app_are_admitted_at_once(
        spark_cluster, pyspark_app, tmp_path):
    api_port, door_port = free_ports(2)
    config = {  # the default config but for where things are: no driver_slots, no queues
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100, "port": api_port},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui},
        "connect": {"port": door_port},
    }
    server = ServerProcess.start(config, tmp_path / "server")
    url = server.url
    try:
        batch = HTTP.post(f"{url}/api/v1/apps", timeout=30, json={
            "argv": [*conf_args(SMALL), str(pyspark_app), "--hold-s", "600"],
            "cwd": str(pyspark_app.parent), "name": "batch"}).json()["id"]
        notebooks = [HTTP.post(f"{url}/api/v1/sessions", timeout=30,
                                json={"name": f"nb-{i}", "conf": SMALL}).json()["id"]
                     for i in range(2)]

        def connect() -> None:  # its first call opens the session; the answer is not awaited
            from pyspark.sql import SparkSession

            extra = "".join(f";{k}={v}" for k, v in SMALL.items())
            try:
                SparkSession.builder.remote(
                    f"sc://127.0.0.1:{door_port}/{extra}").create().range(1).count()
            except Exception:  # noqa: BLE001 - killed at the end of the test
                pass

        threading.Thread(target=connect, daemon=True).start()

        def all_admitted() -> list[dict] | None:
            apps = HTTP.get(f"{url}/api/v1/apps", timeout=10).json()
            ours = [a for a in apps if a["id"] in (batch, *notebooks) or a["kind"] == "connect"]
            return ours if len(ours) == 4 and all(a["state"] != "ACCEPTED" for a in ours) \
                else None

        try:
            apps = wait_until(all_admitted, ADMITTED_S, "all four admitted")
        except BaseException:
            listing = HTTP.get(f"{url}/api/v1/apps", timeout=10).json()
            pytest.fail("not all four admitted: " + "; ".join(
                f"{a['kind']} {a['state']} {a.get('reason_code')} {a['reason']}"
                for a in listing))
        assert sorted(a["kind"] for a in apps) == ["connect", "session", "session", "submit"]
        health = HTTP.get(f"{url}/api/v1/health", timeout=10).json()["driver_host"]
        assert health["driver_slots"] is None and health["memory_mib"] > 0
    finally:
        stop_server_and_its_apps(server)
