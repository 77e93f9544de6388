"""GPUs at submission, on every door: the memory backend with workers not all alike
(``worker_groups``: 2 workers of 4 cores/8g with 2 GPUs each, one plain of 8 cores/16g). An app
asking for more GPUs than one worker has, or for a resource no worker has, is refused with the
line that names it; a malformed resource property is refused with Spark's rule; what fits is
accepted. Nothing refused is stored."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from sessionsched.server.app import create_app
from tests.support.server_helpers import make_config, rows, wait_until

CLUSTER = {"backend": "memory", "worker_groups": [
    {"count": 2, "cores": 4, "memory": "8g", "resources": {"gpu": 2}},
    {"count": 1, "cores": 8, "memory": "16g"}]}
WORKERS = "1 worker of 8 cores/16384 MiB, 2 workers of 4 cores/8192 MiB/2 gpu"
E, T = "spark.executor.resource.", "spark.task.resource."

REFUSED = {
    "3 gpus an executor": (
        {E + "gpu.amount": "3"},
        "never fits: an executor of 1 cores/1024 MiB/3 gpu fits no worker: at most 2 gpu on one"
        f" ({WORKERS})"),
    "a resource no worker has": (
        {E + "fpga.amount": "1"},
        "never fits: an executor of 1 cores/1024 MiB/1 fpga fits no worker: no worker has fpga"
        f" ({WORKERS})"),
    "a task amount without an executor amount": (
        {T + "gpu.amount": "1"},
        "spark.task.resource.gpu.amount=1 needs spark.executor.resource.gpu.amount: no executor"
        " has gpu for its tasks"),
    "an amount that is not a number": (
        {E + "gpu.amount": "two"},
        "spark.executor.resource.gpu.amount='two': expected a whole number >= 0"),
    "an executor amount below the task amount": (
        {E + "gpu.amount": "1", T + "gpu.amount": "2"},
        "spark.executor.resource.gpu.amount=1 is below spark.task.resource.gpu.amount=2: no"
        " task could run"),
}


@pytest.fixture
def client(state_dir):
    api = create_app(make_config(state_dir, cluster=CLUSTER))
    with TestClient(api) as c:
        wait_until(lambda: api.state.service.view.engine.workers is not None
                   and api.state.service.view.engine.workers.sizes, 30, "the workers")
        yield c


@pytest.mark.parametrize("props, line", REFUSED.values(), ids=REFUSED.keys())
def test_every_door_refuses_with_the_line(client, app_file, db, props, line):
    r = client.post("/api/v1/apps", json={"argv": [app_file.name],
                                          "cwd": str(app_file.parent), "conf": props})
    assert r.status_code == 400 and r.json()["detail"].endswith(line), r.text
    r = client.post("/v1/submissions/create", json={
        "action": "CreateSubmissionRequest", "appResource": "file:/opt/a.jar",
        "mainClass": "Main", "clientSparkVersion": "4.0.1",
        "sparkProperties": {"spark.app.name": "gpu", **props}, "environmentVariables": {}})
    assert r.status_code == 400 and r.json()["message"].endswith(line), r.text
    r = client.post("/sessions", json={"kind": "pyspark", "conf": props})
    assert r.status_code == 400 and r.json()["msg"].endswith(line), r.text
    assert rows(db, "select count(*) from apps") == [(0,)]


def test_what_the_gpu_workers_hold_is_accepted_and_kept(client, app_file, db):
    props = {E + "gpu.amount": "2", T + "gpu.amount": "0.5",
             "spark.dynamicAllocation.minExecutors": "2"}
    r = client.post("/api/v1/apps", json={"argv": [app_file.name],
                                          "cwd": str(app_file.parent), "conf": props})
    assert r.status_code == 201, r.text
    assert rows(db, "select count(*) from apps") == [(1,)]
    spec = rows(db, "select spec from apps")[0][0]
    assert '"custom": {"gpu": 2}' in spec
