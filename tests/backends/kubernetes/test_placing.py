"""Driver pods under ``node_sort`` (backends/kubernetes/placing): ``binpacking`` pins the pod to
the fullest node that holds it now, ``fair`` leaves it to the kube scheduler. Tables of named
cases on API JSON as the informers keep it; then real spark-submit 4.0.1 against the fake API
server carries the pin into the driver pod's ``nodeSelector``."""

from __future__ import annotations

import pytest

from sessionsched.agent.launch import wrap_argv
from sessionsched.backends.base import Launch
from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.backends.kubernetes.placing import PIN, driver_request, pinned
from sessionsched.config import KubernetesSection
from sessionsched.model import Resources
from tests.sparkcluster import wait_until

NS = "spark"


def node(name: str, cpu: int = 4, gib: int = 8, **lbl: str) -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": f"host-{name}",
                                                   **lbl}},
            "spec": {}, "status": {"allocatable": {"cpu": str(cpu), "memory": f"{gib}Gi"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(on: str, cpu: int, gib: int = 1) -> dict:
    return {"metadata": {"name": f"p-{on}-{cpu}", "labels": {}},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {
                "requests": {"cpu": str(cpu), "memory": f"{gib}Gi"}}}]},
            "status": {"phase": "Running"}}


def launch(sort: str = "binpacking", *conf: str, script: str = "app.py", **kw) -> Launch:
    argv = []
    for c in conf:
        argv += ["--conf", c]
    return Launch(app_id="a", name="a", argv=(*argv, script), in_cluster=True, node_sort=sort,
                  **kw)


def foreign(_pod: dict) -> bool:
    return True


TWO = [node("n1"), node("n2")]

# (launch, nodes, pods, driver node selector, the pinned host or None)
CASES = {
    "binpacking: the fuller node": (launch(), TWO, [pod("n2", 2)], {}, "host-n2"),
    "binpacking: the fuller that holds it": (
        launch("binpacking", "spark.driver.cores=2"), TWO, [pod("n2", 3)], {}, "host-n1"),
    "binpacking: equal nodes, the first": (launch(), TWO, [], {}, "host-n1"),
    "fair: the kube scheduler chooses": (launch("fair"), TWO, [pod("n2", 2)], {}, None),
    "no node holds it now: not pinned": (
        launch("binpacking", "spark.driver.cores=4"), TWO, [pod("n1", 1), pod("n2", 1)], {},
        None),
    "drivers on nodes not read: not pinned": (launch(), TWO, [], {"pool": "drivers"}, None),
    "drivers' own selector among the nodes read": (
        launch(), [node("n1"), node("n2", pool="drivers")], [], {"pool": "drivers"},
        "host-n2"),
    "a pin the user set stays": (launch("binpacking", f"{PIN}=mine"), TWO, [], {}, None),
}


@pytest.mark.parametrize("ln, nodes, pods, selector, host", CASES.values(), ids=CASES.keys())
def test_pinned(ln, nodes, pods, selector, host):
    out = pinned(ln, nodes, pods, foreign, selector)
    assert out.conf.get(PIN) == host
    if host is None:
        assert out is ln


@pytest.mark.parametrize("ln, size", [
    (launch(), Resources(1, 1024 + 409)),  # Python: overhead factor 0.4
    (launch(script="app.jar"), Resources(1, 1024 + 384)),  # JVM: 0.1, at least 384 MiB
    (launch("binpacking", "spark.driver.memory=8g", script="app.jar"), Resources(1, 8192 + 819)),
    (launch("binpacking", "spark.driver.memoryOverhead=1g", "spark.driver.cores=3"),
     Resources(3, 2048)),
    (launch("binpacking", "spark.kubernetes.driver.request.cores=500m"), Resources(1, 1433)),
], ids=["python", "jvm", "8g jvm", "explicit overhead", "request cores"])
def test_driver_request(ln, size):
    assert driver_request(ln) == size


def test_real_spark_submit_puts_the_pin_in_the_driver_pods_node_selector(fake, tmp_path):
    fake.add_node("n1", cpu="4", memory="8Gi")
    fake.add_node("n2", cpu="4", memory="8Gi")
    fake.add_pod("other", "busy", cpu="2", memory="1Gi", node="n2")  # n2 is the fuller
    upload = tmp_path / "upload"
    upload.mkdir()
    settings = KubernetesSection(api_server=fake.url, namespace=NS, image="apache/spark:4.0.1",
                                 upload_path=f"file://{upload}")
    backend = KubernetesBackend(settings, tmp_path / "drivers")
    try:
        app = tmp_path / "job.py"
        app.write_text("print('never runs: no kubelet')\n")
        backend.capacity()  # the informers synced: the nodes and the busy pod are read
        backend.launch(Launch(app_id="packed", name="packed", argv=wrap_argv([str(app)]),
                              conf={"spark.app.name": "packed"}, in_cluster=True,
                              node_sort="binpacking"))
        made = wait_until(lambda: fake.pods(NS), 180, "spark-submit's driver pod")[0]
        assert made["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "n2"}
    finally:
        backend.close()
