"""Spark's real Kubernetes scheduler backend with executors run by the fake kubelet (slow:
marked ``kubelet``): a client-mode driver on this host with dynamic allocation asks the fake
API server for executor pods, the fake kubelet runs them as KubernetesExecutorBackend JVMs,
and the agent's SparkControl caps the app and kills the surplus -- the pods go, and the
KubernetesBackend (told about the app by ``manage``) reports 3 executors, then 1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.backends.spark_home import spark_submit
from sessionsched.config import KubernetesSection
from sessionsched.engine.events import ExecutorsChanged
from tests.backends.kubernetes.fake_apiserver import free_port
from tests.backends.kubernetes.fake_kubelet import FakeKubelet
from tests.sparkcluster import wait_until

NS = "spark"
APP = Path(__file__).with_name("kubelet_app.py")
REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.kubelet


def test_agent_caps_and_kills_on_the_real_kubernetes_scheduler_backend(fake, tmp_path):
    fake.add_node("n1", cpu="8", memory="16Gi")
    port = free_port(21500, 21599)
    cmd = [spark_submit(), "--master", f"k8s://{fake.url}", "--deploy-mode", "client",
           "--conf", f"spark.kubernetes.namespace={NS}",
           "--conf", "spark.kubernetes.container.image=spark:4.0.1",
           "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
           "--conf", f"spark.driver.port={port}", "--conf", f"spark.blockManager.port={port + 1}",
           "--conf", "spark.ui.enabled=false",
           "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
           "--conf", "spark.dynamicAllocation.enabled=true",
           "--conf", "spark.dynamicAllocation.shuffleTracking.enabled=true",
           "--conf", "spark.dynamicAllocation.initialExecutors=3",
           "--conf", "spark.dynamicAllocation.minExecutors=0",
           "--conf", "spark.dynamicAllocation.maxExecutors=3",
           "--conf", "spark.kubernetes.allocation.batch.delay=1s", str(APP)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    settings = KubernetesSection(api_server=fake.url, namespace=NS, image="spark:4.0.1")
    backend = KubernetesBackend(settings, tmp_path / "drivers")
    out_path = tmp_path / "driver.log"
    with FakeKubelet(fake, NS, tmp_path / "kubelet"), open(out_path, "wb") as out:
        driver = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        try:
            pods = wait_until(lambda: fake.pods(NS, "spark-role=executor"), 120,
                              "executor pods")
            backend.manage("nb-1", pods[0]["metadata"]["labels"]["spark-app-selector"])
            counts: list[int] = []

            def executors_reported(n):
                def check():
                    counts.extend(len(e.executors) for e in backend.poll(time.time())
                                  if isinstance(e, ExecutorsChanged))
                    return counts and counts[-1] == n
                return check

            wait_until(executors_reported(3), 240, "3 executors in the backend's view")
            wait_until(lambda: executors_reported(-1)() or driver.poll() is not None, 240,
                       "the driver to end")  # polling all along: the backend sees 3 -> 1
            assert driver.returncode == 0, out_path.read_text()[-3000:]
            wait_until(executors_reported(0), 60, "no executors once the app ended")
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, 9)
                driver.wait(10)
            backend.close()
    text = out_path.read_text()
    assert "PROBE full" in text and "EXECUTORS 3" in text
    assert "TARGET 1" in text and "AFTER 1" in text and "SUM ok" in text
    assert 1 in counts[counts.index(3):], counts  # the backend saw the surplus go
    deleted = [r for r in fake.requests if r.method == "DELETE" and "/pods" in r.path]
    assert deleted, "Spark did not delete the killed executors' pods"
