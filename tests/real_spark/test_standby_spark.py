"""Active/standby on the real Spark cluster (``spark_cluster``) and a real PostgreSQL store:
unmodified spark-submit and our CLI submit through the standby's address (its 307 takes them
to the leader); the leader is killed with ``kill -9`` while a JVM cluster-mode driver and a
Python client-mode driver run; the standby takes over and adopts both — neither is launched
again — the Python driver's agent follows it, and it controls them: it kills both.

Both schedulers run on this host with one ``state_dir``: client-mode drivers run on the
leader's host and their exit files are there (docs/operator/two-schedulers.md)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import httpx
import pytest

from sessionsched.backends.spark_home import spark_submit
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import (
    SLACK,
    SMALL,
    conf_args,
    free_ports,
    spark_env,
    stop_server_and_its_apps,
    wait_idle,
    wait_until,
)
from tests.support.cli_helpers import run_cli
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

END_S = 300  # bound on any wait for drivers on a busy 2-core machine


def config(db_url: str, port: int, peer: int, state_dir, spark_cluster) -> dict:
    return {
        "server": {"port": port, "state_dir": str(state_dir), "cycle_ms": 100,
                   "db_url": db_url, "standby": True, "peers": [f"http://127.0.0.1:{peer}"]},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui, "driver_slots": 2},
        # No StateAware wait: both apps start at once.
        "queues": [{"name": "root", "queues": [{"name": "default", "admission": "none"}]}],
    }


def app(url: str, app_id: str) -> dict:
    return HTTP.get(f"{url}/api/v1/apps/{app_id}", timeout=10, follow_redirects=True).json()


def kinds(url: str, app_id: str) -> list[str]:
    return [e["kind"] for e in HTTP.get(f"{url}/api/v1/apps/{app_id}/events", timeout=10,
                                         follow_redirects=True).json()]


def role(url: str) -> str | None:
    try:
        return HTTP.get(f"{url}/api/v1/health", timeout=5).json()["role"]
    except httpx.TransportError:
        return None


def test_the_standby_adopts_the_drivers_of_a_killed_leader(spark_cluster, jvm_app_jar,
                                                          pyspark_app, pg_server, tmp_path):
    wait_idle(spark_cluster)
    db_url = pg_server.fresh_database()
    state = tmp_path / "state"
    port_a, port_b = free_ports(2)
    a = ServerProcess.start(config(db_url, port_a, port_b, state, spark_cluster), tmp_path / "a")
    b = None
    try:
        b = ServerProcess.start(config(db_url, port_b, port_a, state, spark_cluster),
                                tmp_path / "b")
        assert (role(a.url), role(b.url)) == ("leader", "standby")

        # Unmodified spark-submit at the standby's address: Java follows the 307 to the leader.
        created = subprocess.run(
            [spark_submit(), "--master", "spark://" + b.url.removeprefix("http://"),
             "--deploy-mode", "cluster", "--conf", "spark.master.rest.enabled=true",
             *conf_args({**SMALL, "spark.app.name": "jvm-survivor"}), "--class", "SleepApp",
             str(jvm_app_jar), "120000", "1", "0"],
            capture_output=True, text=True, env=spark_env(), timeout=SLACK * 120,
            stdin=subprocess.DEVNULL)
        out = created.stdout + created.stderr
        assert created.returncode == 0, out[-2000:]
        jvm = re.search(r"Submission successfully created as (driver-\d{14}-\d{4})", out)[1]
        # Our CLI at the standby's address, a Python driver in client mode.
        done = run_cli("submit", "--server", b.url, "--name", "py-survivor", *conf_args(SMALL),
                       str(pyspark_app), "--tasks", "1", "--task-s", "1", "--hold-s", "600",
                       cwd=pyspark_app.parent, timeout_s=120)
        assert done.returncode == 0, done.stderr
        py = done.stdout.strip()
        # Both drivers up (their Spark application registered with the master); executors
        # may come later on a loaded machine.
        before = wait_until(lambda: (s := {i: app(a.url, i) for i in (jvm, py)})
                            and all(x["spark_app_id"] for x in s.values()) and s, END_S,
                            "both drivers to be up on the leader")
        assert {x["state"] for x in before.values()} <= {"STARTING", "RUNNING"}, before

        os.kill(a.proc.pid, signal.SIGKILL)  # the leader only: drivers have their own sessions
        killed_at = time.monotonic()
        wait_until(lambda: role(b.url) == "leader", 10, "the standby to take over",
                   interval_s=0.02)
        print(f"takeover {time.monotonic() - killed_at:.2f}s after kill -9")
        for i in (jvm, py):
            adopted = app(b.url, i)
            assert adopted["state"] in ("STARTING", "RUNNING"), adopted
            assert adopted["spark_app_id"] == before[i]["spark_app_id"]
            assert kinds(b.url, i).count("launch") == 1 and "adopted" in kinds(b.url, i)

        # The Python driver's agent got both addresses (server.peers): it reports to the new
        # leader now.
        log = state / "logs" / f"{py}.log"
        wait_until(lambda: f"sessionsched agent: now reporting to {b.url}" in log.read_text(),
                   60, "the agent to report to the new leader")

        # The new leader controls them: it kills both, through the master and by process.
        # spark-submit given both addresses (Spark's HA syntax) passes over the dead one.
        both = "spark://" + ",".join(u.removeprefix("http://") for u in (a.url, b.url))
        killed = subprocess.run([spark_submit(), "--master", both, "--kill", jvm],
                                capture_output=True, text=True, env=spark_env(),
                                timeout=SLACK * 120, stdin=subprocess.DEVNULL)
        assert f"{jvm} is killed successfully" in killed.stdout + killed.stderr, \
            (killed.stdout + killed.stderr)[-2000:]
        killed = HTTP.post(f"{b.url}/api/v1/apps/{py}/kill", timeout=60)
        assert killed.status_code == 200 and killed.json()["state"] == "KILLED", killed.text
        assert app(b.url, jvm)["state"] == "KILLED"
        master = spark_cluster.master_ui
        wait_until(lambda: not HTTP.get(f"{master}/json/", timeout=10).json()["activeapps"],
                   120, "both applications to leave the master")
        done = HTTP.get(f"{master}/json/", timeout=10).json()["completedapps"]
        names = [x["name"] for x in done]
        assert names.count("jvm-survivor") == 1 and names.count("py-survivor") == 1
    finally:
        for server in (a, b):  # live apps killed through whoever still leads, then stopped
            if server is not None and role(server.url) == "leader":
                stop_server_and_its_apps(server)
        for server in (a, b):
            if server is not None:
                server.stop()
