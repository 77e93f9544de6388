"""A standalone worker's custom resources (GPUs) read from the master's ``/json/``: each
worker's ``resources`` and ``resourcesfree`` are ``name -> {"name", "addresses"}``
(``JsonProtocol.writeWorkerInfo`` in Spark 4.0.1, ``ResourceInformation.toJson``), the amount
the number of addresses. The sample is a worker started with ``spark.worker.resource.gpu.amount
=2`` and a discovery script printing ``{"name": "gpu", "addresses": ["0", "1"]}``, one GPU
given to an executor."""

from __future__ import annotations

import pytest

from sessionsched.backends.clusterview import (
    ClusterView,
    ExecutorInfo,
    capacity_for_managed,
    parse_master,
    workers_of,
)
from sessionsched.model import Resources, Worker

GPU_WORKER = {
    "id": "worker-20261129051500-127.0.0.1-40001", "host": "127.0.0.1", "port": 40001,
    "webuiaddress": "http://127.0.0.1:8081", "cores": 4, "coresused": 1, "coresfree": 3,
    "memory": 8192, "memoryused": 1024, "memoryfree": 7168,
    "resources": {"gpu": {"name": "gpu", "addresses": ["0", "1"]}},
    "resourcesused": {"gpu": {"name": "gpu", "addresses": ["0"]}},
    "resourcesfree": {"gpu": {"name": "gpu", "addresses": ["1"]}},
    "state": "ALIVE", "lastheartbeat": 1795929300000,
}
PLAIN_WORKER = {**GPU_WORKER, "id": "worker-2", "coresused": 0, "memoryused": 0,
                "resources": {}, "resourcesused": {}, "resourcesfree": {}}
OLD_WORKER = {k: v for k, v in PLAIN_WORKER.items() if not k.startswith("resources")}
GPU = (("gpu", 2),)


def view(*workers, apps=(), drivers=(), executors=()) -> ClusterView:
    return ClusterView(parse_master({"url": "spark://m:7077", "status": "ALIVE",
                                     "workers": list(workers), "activeapps": list(apps),
                                     "completedapps": [], "activedrivers": list(drivers),
                                     "completeddrivers": []}), tuple(executors))


def app(app_id: str, gpus: int) -> dict:
    """An application as the master's ``/json/`` lists it (``JsonProtocol.writeApplicationInfo``:
    ``resourcesperexecutor`` is ``[{"name", "amount"}]``)."""
    return {"id": app_id, "starttime": 1795929300000, "name": "x", "cores": 2, "user": "u",
            "memoryperexecutor": 1024, "state": "RUNNING", "duration": 1,
            "resourcesperexecutor": [{"name": "gpu", "amount": gpus}] if gpus else []}


def executors(app_id: str, n: int) -> list[ExecutorInfo]:
    return [ExecutorInfo(app_id, str(i), 1024, GPU_WORKER["id"]) for i in range(n)]


GPU_DRIVER = {"id": "driver-20261129051500-0000", "starttime": "1795929300000", "state": "RUNNING",
              "cores": 1, "memory": 1024, "worker": GPU_WORKER["id"], "mainclass": "x.Main",
              "resources": {"gpu": {"name": "gpu", "addresses": ["1"]}}}


CASES = {
    "gpus and the one free": (
        [GPU_WORKER], (Worker(GPU_WORKER["id"], Resources(4, 8192, GPU),
                              Resources(3, 7168, (("gpu", 1),))),)),
    "none: empty objects": ([PLAIN_WORKER], (Worker("worker-2", Resources(4, 8192),
                                                    Resources(4, 8192)),)),
    "none: no fields at all": ([OLD_WORKER], (Worker("worker-2", Resources(4, 8192),
                                                     Resources(4, 8192)),)),
    "two names": (
        [{**PLAIN_WORKER, "resources": {
            "gpu": {"name": "gpu", "addresses": ["0", "1", "2"]},
            "fpga": {"name": "fpga", "addresses": ["a"]}},
          "resourcesfree": {"gpu": {"name": "gpu", "addresses": ["2"]},
                            "fpga": {"name": "fpga", "addresses": []}}}],
        (Worker("worker-2", Resources(4, 8192, (("fpga", 1), ("gpu", 3))),
                Resources(4, 8192, (("gpu", 1),))),)),
}


@pytest.mark.parametrize("workers, want", CASES.values(), ids=CASES.keys())
def test_workers_custom_resources_total_and_free(workers, want):
    assert workers_of(view(*workers)) == want


def test_capacity_sums_the_alive_workers_gpus():
    dead = {**GPU_WORKER, "id": "worker-3", "state": "DEAD"}
    cap = capacity_for_managed(view(GPU_WORKER, PLAIN_WORKER, dead, GPU_WORKER), (), ())
    assert cap == Resources(12, 24576, (("gpu", 4),))


# name: (the running apps (id, GPUs per executor, executors), a GPU driver not ours runs,
# the apps that are ours, the GPUs left for ours out of the two GPU workers' 4)
FOREIGN = {
    "nobody else's": ((), False, (), 4),
    "another app's executor holds one": ((("app-1", 1, 1),), False, (), 3),
    "our own app's executors are ours": ((("app-1", 1, 2),), False, ("app-1",), 4),
    "an app asking none holds none": ((("app-1", 0, 3),), False, (), 4),
    "another's driver holds one": ((), True, (), 3),
    "more held than there are: none left": ((("app-1", 2, 3),), False, (), 0),
}


@pytest.mark.parametrize("running, driver, ours, left", FOREIGN.values(), ids=FOREIGN.keys())
def test_what_other_apps_hold_of_a_custom_resource_is_not_ours_to_give(
        running, driver, ours, left):
    v = view(GPU_WORKER, GPU_WORKER, apps=[app(a, g) for a, g, _ in running],
             drivers=[GPU_DRIVER] if driver else [],
             executors=[e for a, _, n in running for e in executors(a, n)])
    cap = capacity_for_managed(v, ours, ())
    assert dict(cap.custom).get("gpu", 0) == left


@pytest.mark.parametrize("per_executor", [{"gpu": 1}, [{"name": "gpu"}], [{"name": "gpu",
                                                                           "amount": "1"}]],
                         ids=["an object", "no amount", "an amount that is a string"])
def test_an_apps_resources_not_as_spark_writes_them_are_refused(per_executor):
    with pytest.raises(ValueError, match="'resourcesperexecutor'"):
        view(GPU_WORKER, apps=[{**app("app-1", 1), "resourcesperexecutor": per_executor}])


@pytest.mark.parametrize("resources", [["gpu"], {"gpu": {"name": "gpu"}}, {"gpu": "0,1"}],
                         ids=["a list", "no addresses", "a string"])
def test_resources_not_as_spark_writes_them_are_refused(resources):
    with pytest.raises(ValueError, match="'resources'"):
        view({**GPU_WORKER, "resources": resources})
