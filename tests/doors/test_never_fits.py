"""Never fits: an app the cluster can never run is refused at submission on every door, with
the number that does not fit, and nothing is stored (fit is per worker: room split across
workers is not room). The cluster: the memory backend with 2 workers of 4 cores/8g (16g, 8
cores in all: each refused app below fits the sum, no worker). In-process doors (TestClient),
and the real ``sessionsched submit`` against a real ``sessionsched serve``."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.ports import free_port
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.server.app import create_app
from tests.support.cli_helpers import run_cli
from tests.support.server_helpers import make_config, rows, wait_until

CLUSTER = {"backend": "memory", "workers": 2, "cores": 4, "memory": "8g"}
QUEUES = [{"name": "root", "queues": [
    {"name": "default"},
    {"name": "small", "max_cores": 4},
]}]
DYNAMIC = {"spark.dynamicAllocation.enabled": "true"}  # a Spark REST create keeps it off else
WORKERS = "2 workers of 4 cores/8192 MiB"

# (properties, the line's part that names the number)
NEVER = [
    ({"spark.executor.cores": "8"},
     f"an executor of 8 cores/1024 MiB fits no worker ({WORKERS})"),
    ({"spark.executor.memory": "10g"},
     f"an executor of 1 cores/10240 MiB fits no worker ({WORKERS})"),
    ({"spark.driver.memory": "12g", "spark.submit.deployMode": "cluster"},
     f"the driver of 1 cores/12288 MiB fits no worker ({WORKERS})"),
    ({"spark.dynamicAllocation.minExecutors": "3", "spark.executor.cores": "3", **DYNAMIC},
     "3 executor(s) of 3 cores/1024 MiB (minExecutors 3) do not fit the cluster: its workers"
     f" hold 2 ({WORKERS})"),
    ({"spark.dynamicAllocation.minExecutors": "2", "spark.executor.cores": "3",
      "spark.sessionsched.queue": "small", **DYNAMIC},
     "2 executor(s) of 3 cores (minExecutors 2) need 6 cores, above max_cores 4 of queue"
     " root.small"),
    ({"spark.sessionsched.gang.size": "3", "spark.executor.cores": "3", **DYNAMIC},
     "3 executor(s) of 3 cores/1024 MiB (a gang of 3) do not fit the cluster: its workers"
     f" hold 2 ({WORKERS})"),
]
IDS = ["8-core executor", "10g executor", "12g cluster-mode driver",
       "floor above the workers", "floor above max_cores", "gang above the workers"]
# A malformed gang (docs/design/gangs.md): refused by every door with its one line.
BAD_GANG = {"spark.kubernetes.driver.annotation.yunikorn.apache.org/task-groups":
            '[{"name": "spark-driver", "minMember": 1}]'}
BAD_GANG_LINE = ("spark.kubernetes.driver.annotation.yunikorn.apache.org/task-groups: no task"
                 " group named 'spark-executor' for the executors (groups: spark-driver)")


@pytest.fixture
def client(state_dir):
    api = create_app(make_config(state_dir, cluster=CLUSTER, queues=QUEUES))
    with TestClient(api) as c:
        # the first cycle has read the workers
        wait_until(lambda: api.state.service.view.engine.workers is not None
                   and api.state.service.view.engine.workers.sizes, 30, "the workers")
        yield c


@pytest.fixture
def jar(tmp_path):
    """A JVM app: its driver may run in the cluster (a Python app's may not, on standalone)."""
    p = tmp_path / "app.jar"
    p.write_bytes(b"PK")
    return p


def nothing_stored(db) -> None:
    assert rows(db, "select count(*) from apps") == [(0,)]


@pytest.mark.parametrize("props, line", NEVER, ids=IDS)
def test_native_api_refuses_with_the_number(client, jar, db, props, line):
    r = client.post("/api/v1/apps", json={"argv": ["--class", "Main", jar.name],
                                          "cwd": str(jar.parent), "conf": props})
    assert (r.status_code, r.json()) == (400, {"detail": f"never fits: {line}"})
    nothing_stored(db)


@pytest.mark.parametrize("props, line", NEVER, ids=IDS)
def test_spark_rest_refuses_with_an_error_response(client, db, props, line):
    r = client.post("/v1/submissions/create", json={
        "action": "CreateSubmissionRequest", "appResource": "file:/opt/a.jar",
        "mainClass": "Main", "clientSparkVersion": "4.0.1",
        "sparkProperties": {"spark.app.name": "big", **props}, "environmentVariables": {}})
    body = r.json()
    line = line.replace("hold 2 (", "hold 2 beside the driver of 1 cores/1024 MiB (")  # in-cluster
    assert r.status_code == 400
    assert (body["action"], body["success"], body["message"]) == (
        "ErrorResponse", False, f"never fits: {line}")
    nothing_stored(db)


@pytest.mark.parametrize("props, line", NEVER, ids=IDS)
def test_livy_batches_and_sessions_refuse_in_livys_shape(client, jar, db, props, line):
    r = client.post("/batches", json={"file": str(jar), "className": "Main", "conf": props})
    assert (r.status_code, r.json()) == (400, {"msg": f"never fits: {line}"})
    if props.get("spark.submit.deployMode") != "cluster":  # a session's driver is the notebook
        r = client.post("/sessions", json={"kind": "pyspark", "conf": props})
        assert (r.status_code, r.json()) == (400, {"msg": f"never fits: {line}"})
    nothing_stored(db)


def test_what_fits_one_worker_is_accepted(client, app_file, db):
    for props in ({"spark.executor.cores": "4", "spark.executor.memory": "8g"},
                  {"spark.dynamicAllocation.minExecutors": "2", "spark.executor.cores": "4"}):
        r = client.post("/api/v1/apps", json={"argv": [app_file.name],
                                              "cwd": str(app_file.parent), "conf": props})
        assert r.status_code == 201, r.text
    assert rows(db, "select count(*) from apps") == [(2,)]


def test_sessionsched_submit_exits_non_zero_with_the_line(tmp_path, app_file):
    config = {"server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50,
                         "port": free_port()},
              "cluster": CLUSTER, "queues": QUEUES}
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        r = run_cli("submit", "--server", server.url, "--conf", "spark.executor.cores=8",
                    app_file.name, cwd=app_file.parent)
        assert r.returncode != 0
        assert f"never fits: {NEVER[0][1]}" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        listed = run_cli("apps", "--server", server.url, "--json")
        assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed
    finally:
        server.stop()


def test_a_worker_lost_under_a_queued_app_does_not_block_its_queue(state_dir, tmp_path):
    """The memory cluster (2 workers of 4 cores/8g) loses a worker while ``big`` (2 executors
    of 4 cores: one a worker) waits behind ``first`` (one app at a time): ``big`` is held
    with does_not_fit_now, ``small`` behind it starts and finishes; the worker's room comes
    back, and ``big`` starts in its turn and finishes."""
    from sessionsched.backends.memory import MemoryCluster
    from sessionsched.model import Resources
    from tests.support.stepped_service import START_S, Clock, stepped_service

    cluster = MemoryCluster(Resources(8, 16384), driver_slots=4, driver_start_s=START_S,
                            executor_start_s=START_S, work_s=4, workers=2)
    (tmp_path / "job.py").write_text("print('hello')\n")
    queues = [{"name": "root", "queues": [{"name": "default", "policy": "fifo",
                                           "max_running_apps": 1}]}]
    with stepped_service(state_dir, cluster, tmp_path, Clock(), queues) as s:
        first = s.submit("first")
        s.until(first, "RUNNING")
        big = s.submit("big", **{"spark.executor.cores": "4", **DYNAMIC,
                                 "spark.dynamicAllocation.minExecutors": "2"})
        small = s.submit("small")
        s.cycle()
        assert s.app(big)["state"] == s.app(small)["state"] == "ACCEPTED"
        cluster.lose_worker("worker-2")
        held = s.until_true(lambda: "as it is now" in (a := s.app(big))["reason"] and a,
                            "big held")
        assert held["reason_code"] == "does_not_fit_now"
        behind = s.app(small)  # the head now: it waits for first (one app at a time), not big
        assert behind["state"] != "ACCEPTED" or behind["reason_code"] == "queue_limit", behind
        assert held["reason"] == (
            "does not fit the cluster as it is now: 2 executor(s) of 4 cores/1024 MiB"
            " (minExecutors 2) do not fit the cluster: its workers hold 1"
            " (1 worker of 4 cores/8192 MiB)")
        assert s.until(small, "FINISHED", cycles=200)["exit_code"] == 0
        assert s.app(big)["state"] == "ACCEPTED" and s.app(first)["state"] == "FINISHED"
        cluster.worker_back("worker-2")
        assert s.until(big, "FINISHED", cycles=200)["exit_code"] == 0


def test_a_malformed_gang_is_refused_by_every_door(client, jar, db):
    r = client.post("/api/v1/apps", json={"argv": ["--class", "Main", jar.name],
                                          "cwd": str(jar.parent), "conf": BAD_GANG})
    assert r.status_code == 400 and BAD_GANG_LINE in r.json()["detail"], r.text
    r = client.post("/v1/submissions/create", json={
        "action": "CreateSubmissionRequest", "appResource": "file:/opt/a.jar",
        "mainClass": "Main", "clientSparkVersion": "4.0.1",
        "sparkProperties": {"spark.app.name": "bad", **BAD_GANG}, "environmentVariables": {}})
    assert r.status_code == 400 and BAD_GANG_LINE in r.json()["message"], r.text
    r = client.post("/batches", json={"file": str(jar), "className": "Main", "conf": BAD_GANG})
    assert r.status_code == 400 and BAD_GANG_LINE in r.json()["msg"], r.text
    r = client.post("/sessions", json={"kind": "pyspark", "conf": BAD_GANG})
    assert r.status_code == 400 and BAD_GANG_LINE in r.json()["msg"], r.text
    nothing_stored(db)
