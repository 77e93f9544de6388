"""``sessionsched serve`` on the memory backend (``spark-conf/sessionsched-memory.yaml``): a
burst submitted through the real CLI and through Spark's REST protocol runs to its end in
seconds, with no Spark at all."""

from __future__ import annotations

import time

import yaml

from sessionsched.backends.memory import EXIT_CODE, WORK
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import REPO, SLEEP_TASKS, run_cli
from tests.support.http_client import HTTP

EXAMPLE = REPO / "spark-conf" / "sessionsched-memory.yaml"


def rest_create(url: str, name: str, priority: int) -> dict:
    """What ``spark-submit --deploy-mode cluster`` sends to the scheduler's Spark REST port."""
    body = {
        "action": "CreateSubmissionRequest",
        "appResource": "file:/opt/jobs/etl.jar",
        "mainClass": "com.example.Etl",
        "appArgs": ["2026-11-23"],
        "clientSparkVersion": "4.0.1",
        "environmentVariables": {},
        "sparkProperties": {
            "spark.app.name": name,
            "spark.master": url.replace("http://", "spark://"),
            "spark.submit.deployMode": "cluster",
            "spark.driver.cores": "1",
            "spark.executor.cores": "2",
            "spark.dynamicAllocation.enabled": "true",
            "spark.ego.priority": str(priority),
            "spark.sessionsched.queue": "etl",
            WORK: "4x1",  # 4 one-second tasks
        },
    }
    answer = HTTP.post(f"{url}/v1/submissions/create", json=body, timeout=30).json()
    assert answer["success"] is True, answer
    return answer


def test_a_burst_runs_to_its_end_without_spark(tmp_path):
    config = yaml.safe_load(EXAMPLE.read_text())
    config["server"]["state_dir"] = str(tmp_path / "state")
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        started = time.monotonic()
        ids = {}
        for i in range(3):
            done = run_cli("submit", "--server", server.url, "--queue", "adhoc",
                           "--priority", str(5000 + i), str(SLEEP_TASKS), "--stages", "2x1",
                           cwd=REPO)
            assert done.returncode == 0, done.stderr
            ids[done.stdout.strip()] = "FINISHED"
        failing = run_cli("submit", "--server", server.url, "--conf", f"{EXIT_CODE}=2",
                          str(SLEEP_TASKS), cwd=REPO)
        assert failing.returncode == 0, failing.stderr
        ids[failing.stdout.strip()] = "FAILED"
        for i in range(3):
            ids[rest_create(server.url, f"etl-{i}", 6000 + i)["submissionId"]] = "FINISHED"

        submitted = time.monotonic()

        def all_ended() -> dict | None:
            apps = {a["id"]: a for a in HTTP.get(f"{server.url}/api/v1/apps", timeout=10).json()}
            ended = all(apps[i]["state"] in ("FINISHED", "FAILED", "KILLED") for i in ids)
            return apps if ended else None

        apps = wait_until(all_ended, 60, "every submitted app to end", interval_s=0.2)
        ended = time.monotonic()
        assert {i: apps[i]["state"] for i in ids} == ids
        assert apps[failing.stdout.strip()]["exit_code"] == 2
        for app_id in ids:
            assert apps[app_id]["spark_app_id"], apps[app_id]  # the memory driver's made-up id
            assert apps[app_id]["first_executor_at"] is not None, apps[app_id]
        rest_id = next(i for i in ids if apps[i]["name"] == "etl-0")
        status = HTTP.get(f"{server.url}/v1/submissions/status/{rest_id}", timeout=10).json()
        assert status["driverState"] == "FINISHED"
        print(f"\n{len(ids)} apps on the memory backend: submitted in {submitted - started:.1f}s "
              f"(CLI processes), all ended {ended - submitted:.1f}s later")
        # One app STARTING per queue (stateaware): about a second each, driver and executor up.
        assert ended - submitted < 20
    finally:
        server.stop()
