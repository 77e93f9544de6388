"""Kubernetes nodes' extended resources (GPUs: ``nvidia.com/gpu`` in a node's allocatable) as
custom resources named as Spark names them (``gpu``), less what pods request of them
(``backends/kubernetes/extended``, ``pods.node_workers``, ``pods.free_capacity``); a GPU
driver pod is pinned under ``binpacking`` only to a node with the GPUs (``placing``). Tables
of named cases on API JSON as the informers keep it."""

from __future__ import annotations

import pytest

from sessionsched.backends.base import Launch
from sessionsched.backends.kubernetes.extended import pod_amounts, spark_name
from sessionsched.backends.kubernetes.placing import PIN, pinned
from sessionsched.backends.kubernetes.pods import free_capacity, node_workers
from sessionsched.model import Resources, Worker

GIB = 1024


def node(name: str, cpu: int = 8, gib: int = 32, **extended: str) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": f"host-{name}"}},
            "spec": {}, "status": {
                "allocatable": {"cpu": str(cpu), "memory": f"{gib}Gi", "pods": "110",
                                "ephemeral-storage": "100Gi", "hugepages-2Mi": "0",
                                **extended},
                "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, on: str, cpu: int = 1, gib: int = 1, ours: bool = False,
        limits: dict | None = None, requests: dict | None = None) -> dict:
    res = {"requests": {"cpu": str(cpu), "memory": f"{gib}Gi", **(requests or {})}}
    if limits:
        res["limits"] = limits
    return {"metadata": {"name": name, "labels": {"mine": "yes"} if ours else {}},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": res}]},
            "status": {"phase": "Running"}}


def theirs(p: dict) -> bool:
    return p["metadata"]["labels"].get("mine") != "yes"


NAMES = {
    "nvidia.com/gpu": "gpu", "amd.com/gpu": "gpu", "example.com/fpga": "fpga",
    "cpu": None, "memory": None, "hugepages-2Mi": None, "ephemeral-storage": None,
    "kubernetes.io/batch-cpu": None, "node.kubernetes.io/thing": None,
}


@pytest.mark.parametrize("key, name", NAMES.items(), ids=NAMES.keys())
def test_which_quantities_are_extended_resources(key, name):
    assert spark_name(key) == name


def r(cores: int, gib: int, gpus: int = 0) -> Resources:
    return Resources(cores, gib * GIB, (("gpu", gpus),) if gpus else ())


GPU_NODE = node("g1", **{"nvidia.com/gpu": "4"})
PLAIN = node("p1")
WORKERS = {
    "a gpu node and a plain one": (
        [GPU_NODE, PLAIN], [],
        (Worker("g1", r(8, 32, 4), r(8, 32, 4)), Worker("p1", r(8, 32), r(8, 32)))),
    "another's pod takes gpus off the size and the free": (
        [GPU_NODE], [pod("x", "g1", requests={"nvidia.com/gpu": "1"})],
        (Worker("g1", r(7, 31, 3), r(7, 31, 3)),)),
    "our pod takes them off the free only": (
        [GPU_NODE], [pod("x", "g1", ours=True, requests={"nvidia.com/gpu": "2"})],
        (Worker("g1", r(8, 32, 4), r(7, 31, 2)),)),
    "limits alone count as requests": (
        [GPU_NODE], [pod("x", "g1", limits={"nvidia.com/gpu": "4"})],
        (Worker("g1", r(7, 31), r(7, 31)),)),
}


@pytest.mark.parametrize("nodes, pods, want", WORKERS.values(), ids=WORKERS.keys())
def test_node_workers_carry_the_gpus(nodes, pods, want):
    assert node_workers(nodes, pods, theirs) == want


def test_capacity_sums_the_gpus_less_what_others_request():
    nodes = [GPU_NODE, node("g2", **{"nvidia.com/gpu": "2"}), PLAIN]
    pods = [pod("x", "g1", requests={"nvidia.com/gpu": "1"}),
            pod("y", "g2", ours=True, requests={"nvidia.com/gpu": "2"})]
    assert free_capacity(nodes, pods, theirs) == r(23, 95, 5)


def test_init_containers_count_their_largest():
    p = pod("x", "g1", requests={"nvidia.com/gpu": "1"})
    p["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
    assert pod_amounts(p) == {"gpu": 2}


def test_a_gpu_driver_is_pinned_only_where_the_gpus_are():
    ln = Launch(app_id="a", name="a", argv=("--conf", "spark.driver.resource.gpu.amount=1",
                                            "app.py"), in_cluster=True, node_sort="binpacking")
    # binpacking alone would choose the fuller plain node; the driver needs a gpu
    out = pinned(ln, [GPU_NODE, PLAIN], [pod("x", "p1", cpu=4)], theirs, {})
    assert out.conf.get(PIN) == "host-g1"
