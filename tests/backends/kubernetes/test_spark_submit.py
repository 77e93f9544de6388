"""Real spark-submit 4.0.1 in cluster mode against the fake API server (each launch ~35 s on
2 cores): what the backend asks of Spark reaches the driver pod, and the backend's kill is the
request ``spark-submit --kill`` makes. No kubelet runs the pod: the test moves its phase."""

from __future__ import annotations

import re
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from sessionsched.agent.launch import wrap_argv
from sessionsched.backends.base import Launch
from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.backends.spark_home import spark_submit
from sessionsched.config import KubernetesSection
from sessionsched.engine.events import DriverExited, DriverStarted
from tests.sparkcluster import wait_until

NS = "spark"
SUBMIT_S = 180  # a JVM start and three requests, on a loaded 2-core machine


def properties(text: str) -> dict[str, str]:
    """A java.util.Properties file (as Spark stores it) as a dict."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"((?:[^=:\\]|\\.)*)[=:](.*)", line)
        if m:
            out[re.sub(r"\\(.)", r"\1", m.group(1))] = re.sub(r"\\(.)", r"\1", m.group(2))
    return out


@pytest.fixture
def real_backend(fake, tmp_path):
    fake.add_node("n1", cpu="8", memory="16Gi")
    upload = tmp_path / "upload"
    upload.mkdir()
    settings = KubernetesSection(
        api_server=fake.url, namespace=NS, image="apache/spark:4.0.1",
        service_account="spark-driver", upload_path=f"file://{upload}",
        server_url="http://sessionsched.spark.svc:6066", node_selector={"pool": "spark"},
        driver_node_selector={"pool": "drivers", "zone": "a"})
    backend = KubernetesBackend(settings, tmp_path / "drivers")
    try:
        yield backend, upload
    finally:
        backend.close()


def run_until(backend, kind, timeout_s):
    seen: list = []

    def step():
        seen.extend(backend.poll(time.time()))
        return [e for e in seen if isinstance(e, kind)]

    return wait_until(step, timeout_s, f"a {kind.__name__} event", interval_s=0.5)


def test_pod_spec_carries_our_labels_properties_and_agent_then_failed_is_failed(
        fake, real_backend, tmp_path):
    backend, upload = real_backend
    app = tmp_path / "etl_job.py"
    app.write_text("print('never runs: no kubelet')\n")
    launch = Launch(
        app_id="driver-20261123-0001", name="etl",
        argv=wrap_argv(["--name", "etl", "--conf", "spark.executor.memory=1g", str(app), "x"]),
        conf={"spark.app.name": "etl", "spark.dynamicAllocation.enabled": "true"},
        env={"SESSIONSCHED_APP_ID": "driver-20261123-0001",
             "SESSIONSCHED_SERVER": "http://127.0.0.1:6066"},
        in_cluster=False, queue="root.etl", priority=8000)
    backend.launch(launch)
    pod = wait_until(lambda: fake.pods(NS), SUBMIT_S, "spark-submit's driver pod")[0]
    labels = pod["metadata"]["labels"]
    assert labels["sessionsched.io/app-id"] == "driver-20261123-0001"
    assert labels["sessionsched.io/queue"] == "root.etl"
    assert labels["sessionsched.io/priority"] == "8000"
    assert labels["spark-role"] == "driver" and labels["spark-app-selector"].startswith("spark-")
    assert pod["metadata"]["annotations"]["sessionsched.io/priority"] == "8000"
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "spark-driver"
    assert spec["nodeSelector"] == {"pool": "drivers", "zone": "a"}  # the drivers' own pool
    container = spec["containers"][0]
    assert container["image"] == "apache/spark:4.0.1"
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert env["SESSIONSCHED_APP_ID"] == "driver-20261123-0001"
    assert env["SESSIONSCHED_SERVER"] == "http://sessionsched.spark.svc:6066"
    # the primary resource is the agent's bootstrap; the app's script is its argument
    assert any(a.endswith("bootstrap.py") for a in container["args"])
    assert "etl_job.py" in container["args"] and "x" in container["args"]

    conf_maps = wait_until(lambda: fake.state.select("configmaps", NS, lambda _: True,
                                                     lambda _: True), 30, "the conf map")
    props = properties(conf_maps[0]["data"]["spark.properties"])
    assert props["spark.kubernetes.namespace"] == NS
    assert props["spark.dynamicAllocation.enabled"] == "true"
    assert props["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert props["spark.kubernetes.submission.waitAppCompletion"] == "false"
    assert props["spark.executor.memory"] == "1g"
    assert props["spark.kubernetes.executor.label.sessionsched.io/app-id"] == \
        "driver-20261123-0001"
    py_files = props["spark.submit.pyFiles"].split(",")
    assert any(p.endswith("sessionsched-agent.zip") for p in py_files)
    assert any(p.endswith("etl_job.py") for p in py_files)
    # Spark uploaded the agent where the driver pod will fetch it, and it is the agent
    shipped = [p for p in upload.rglob("sessionsched-agent.zip")]
    assert shipped, f"agent zip not uploaded under {upload}"
    with zipfile.ZipFile(shipped[0]) as z:
        assert "sessionsched/agent/attach.py" in z.namelist()

    # spark-submit exits 0 whatever the driver does: the pod's status decides
    fake.set_pod_phase(NS, pod["metadata"]["name"], "Running", node="n1")
    assert run_until(backend, DriverStarted, 30)[0].spark_app_id == labels["spark-app-selector"]
    fake.set_pod_phase(NS, pod["metadata"]["name"], "Failed", exit_code=1)
    assert run_until(backend, DriverExited, 30) == [DriverExited("driver-20261123-0001", 1)]
    log = Path(launch.log_path or tmp_path / "drivers" / f"{launch.app_id}.log").read_text()
    assert f"submission ID {NS}:{pod['metadata']['name']}" in log


def test_stop_makes_the_request_spark_submit_kill_makes(fake, real_backend, tmp_path):
    backend, _ = real_backend
    ref = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "theirs-driver"},
           "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "i"}]}}
    fake.state.create("pods", NS, ref)
    done = subprocess.run(
        [spark_submit(), "--master", f"k8s://{fake.url}", "--kill", f"{NS}:theirs-driver"],
        capture_output=True, text=True, timeout=SUBMIT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert fake.pods(NS) == []
    theirs = [r for r in fake.requests if r.method == "DELETE"]
    assert [r.path for r in theirs] == [f"/api/v1/namespaces/{NS}/pods/theirs-driver"]

    # ours, on a pod the backend launched (adopted here, to skip a second 35 s submit)
    fake.state.create("pods", NS, {**ref, "metadata": {"name": "ours-driver", "labels": {
        "spark-role": "driver", "sessionsched.io/app-id": "driver-k"}}})
    from sessionsched.backends.base import Handle

    assert backend.adopt(Handle("driver-k", "cluster-driver", NS, time.time()))
    backend.stop("driver-k")
    ours = [r for r in fake.requests if r.method == "DELETE"][1:]
    assert [r.path for r in ours] == [f"/api/v1/namespaces/{NS}/pods/ours-driver"]
    assert theirs[0].body.get("propagationPolicy") == ours[0].body.get("propagationPolicy") \
        == "Background"
    assert run_until(backend, DriverExited, 30) == [DriverExited("driver-k", 143)]
