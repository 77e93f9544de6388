"""Serving a team on the real cluster: unmodified spark-submit authenticates with ``--conf
spark.sessionsched.token=...`` (and is refused without it), the token is never kept, and a
Python driver's agent reports with the per-app secret it got in its environment."""

from __future__ import annotations

import re
import subprocess

import httpx
import pytest

from sessionsched.backends.spark_home import spark_submit
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import tokens_file as tokens
from tests.sparkcluster import SLACK, SMALL, conf_args, spark_env, wait_until
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster


def run_spark_submit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([spark_submit(), *args], capture_output=True, text=True,
                          env=spark_env(), timeout=SLACK * 120, stdin=subprocess.DEVNULL)


def test_spark_submit_with_token_property_and_agent_secret(spark_cluster, jvm_app_jar,
                                                           pyspark_app, tmp_path):
    tokens_file = tmp_path / "tokens.json"
    alice = tokens.create(tokens_file, "alice", "user")
    root = tokens.create(tokens_file, "root", "admin")
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {"backend": "standalone", "master": spark_cluster.master_url,
                    "master_ui": spark_cluster.master_ui},
        "auth": {"mode": "tokens", "tokens_file": str(tokens_file), "run_as_root": True},
    }
    server = ServerProcess.start(config, tmp_path / "server")
    admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {root}"},
                         timeout=30)
    ids: list[str] = []
    try:
        master = "spark://" + server.url.removeprefix("http://")
        submit = ["--master", master, "--deploy-mode", "cluster",
                  "--conf", "spark.master.rest.enabled=true", *conf_args(SMALL),
                  "--class", "SleepApp", str(jvm_app_jar), "60000", "1", "0"]
        refused = run_spark_submit(*submit)
        out = refused.stdout + refused.stderr
        assert "a token is required" in out and "--conf spark.sessionsched.token=TOKEN" in out
        assert admin.get("/api/v1/apps").json() == []

        created = run_spark_submit("--conf", f"spark.sessionsched.token={alice}", *submit)
        out = created.stdout + created.stderr
        sid = re.search(r"Submission successfully created as (driver-\d{14}-\d{4})", out)[1]
        ids.append(sid)
        assert admin.get(f"/api/v1/apps/{sid}").json()["user"] == "alice"

        # A Python app through the native API: its agent registers with the app's secret.
        r = HTTP.post(f"{server.url}/api/v1/apps", timeout=30,
                       headers={"Authorization": f"Bearer {alice}"},
                       json={"argv": [*conf_args(SMALL), str(pyspark_app), "--hold-s", "60"],
                             "cwd": str(pyspark_app.parent)})
        assert r.status_code == 201, r.text
        pid = r.json()["id"]
        ids.append(pid)
        wait_until(lambda: any(e["detail"].startswith("agent registered")
                               for e in admin.get(f"/api/v1/apps/{pid}/events").json()),
                   180, "the Python driver's agent to register with its secret")
        wait_until(lambda: admin.get(f"/api/v1/apps/{sid}").json()["state"] == "RUNNING",
                   180, "the JVM driver to run")
        log = server.log_path.read_text()
        assert alice not in log and "spark.sessionsched.token" not in log
    finally:
        for app_id in ids:
            admin.post(f"/api/v1/apps/{app_id}/kill")
        admin.close()
        server.stop()
    state_db = (tmp_path / "state" / "sessionsched.db").read_bytes()
    assert alice.encode() not in state_db
