"""Custom resources (GPUs) in the pods on Kubernetes: Spark itself gives the driver pod (built
by spark-submit) and the executor pods (built by the driver) a limit ``{vendor}/{name}:
amount`` for each ``spark.{driver,executor}.resource.{name}.amount``; the backend keeps those
properties as they are and refuses, in one line, an amount without its vendor (the pods could
not ask for it). Real spark-submit 4.0.1 against the fake API server: cluster mode for the
driver pod (~35 s), a client-mode driver for the executor pods (marked ``kubelet``: slow; no
kubelet runs them, the pods are read as the driver made them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessionsched.agent.launch import wrap_argv
from sessionsched.backends.base import Launch
from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.backends.kubernetes.submit import submit_argv
from sessionsched.backends.spark_home import spark_submit
from sessionsched.config import KubernetesSection
from tests.backends.kubernetes.fake_apiserver import free_port
from tests.backends.kubernetes.test_spark_submit import SUBMIT_S, properties
from tests.sparkcluster import wait_until

NS = "spark"
REPO = Path(__file__).resolve().parents[3]
GPU = {"spark.executor.resource.gpu.amount": "1", "spark.executor.resource.gpu.vendor":
       "nvidia.com", "spark.task.resource.gpu.amount": "1"}
SETTINGS = KubernetesSection(namespace=NS, image="spark:4.0.1", upload_path="s3a://b/u")


def conf_args(props: dict[str, str]) -> list[str]:
    return [a for k, v in props.items() for a in ("--conf", f"{k}={v}")]


def launch_of(props: dict[str, str]) -> Launch:
    return Launch(app_id="g1", name="g", argv=(*conf_args(props), "s3a://b/train.py"))


@pytest.mark.parametrize("component", ["driver", "executor"])
def test_an_amount_without_its_vendor_is_refused_in_one_line(component):
    props = {f"spark.{component}.resource.gpu.amount": "1"}
    with pytest.raises(ValueError) as e:
        submit_argv("spark-submit", "k8s://http://api", launch_of(props), SETTINGS, "/a.zip")
    assert str(e.value) == (
        f"spark.{component}.resource.gpu.amount=1 needs spark.{component}.resource.gpu.vendor "
        f"on Kubernetes: the domain of the device plugin's resource (nvidia.com makes the "
        f"{component} pod ask for nvidia.com/gpu)")


def test_the_vendor_from_the_config_or_the_command_line_is_enough_and_kept():
    cmd = submit_argv("spark-submit", "k8s://http://api", launch_of(GPU), SETTINGS, "/a.zip")
    assert "spark.executor.resource.gpu.vendor=nvidia.com" in cmd
    assert "spark.executor.resource.gpu.amount=1" in cmd
    operator = KubernetesSection(namespace=NS, image="spark:4.0.1", upload_path="s3a://b/u",
                                 conf={"spark.driver.resource.gpu.vendor": "nvidia.com"})
    submit_argv("spark-submit", "k8s://http://api",
                launch_of({"spark.driver.resource.gpu.amount": "1"}), operator, "/a.zip")


def limits(pod: dict) -> dict[str, str]:
    return (pod["spec"]["containers"][0].get("resources") or {}).get("limits") or {}


def test_spark_submit_gives_the_driver_pod_its_gpu_limit_and_the_executors_their_properties(
        fake, tmp_path):
    fake.add_node("n1", cpu="8", memory="16Gi")
    upload = tmp_path / "upload"
    upload.mkdir()
    settings = KubernetesSection(api_server=fake.url, namespace=NS, image="apache/spark:4.0.1",
                                 upload_path=f"file://{upload}")
    backend = KubernetesBackend(settings, tmp_path / "drivers")
    app = tmp_path / "train.py"
    app.write_text("print('never runs: no kubelet')\n")
    props = {**GPU, "spark.driver.resource.gpu.amount": "1",
             "spark.driver.resource.gpu.vendor": "nvidia.com",
             "spark.driver.resource.gpu.discoveryScript": "/opt/gpus.sh"}
    try:
        backend.launch(Launch(app_id="driver-g", name="train",
                              argv=wrap_argv([*conf_args(props), str(app)])))
        pod = wait_until(lambda: fake.pods(NS), SUBMIT_S, "spark-submit's driver pod")[0]
        conf_maps = wait_until(lambda: fake.state.select(
            "configmaps", NS, lambda _: True, lambda _: True), 30, "the conf map")
    finally:
        backend.close()
    assert limits(pod)["nvidia.com/gpu"] == "1"
    spark_props = properties(conf_maps[0]["data"]["spark.properties"])
    for key, value in GPU.items():  # what the driver builds its executor pods from
        assert spark_props[key] == value


@pytest.mark.kubelet
def test_the_driver_gives_its_executor_pods_their_gpu_limit(fake, tmp_path):
    fake.add_node("n1", cpu="8", memory="16Gi")
    port = free_port(21500, 21599)
    app = tmp_path / "wait.py"
    app.write_text("import time\nfrom pyspark import SparkContext\nSparkContext()\n"
                   "time.sleep(600)\n")
    cmd = [spark_submit(), "--master", f"k8s://{fake.url}", "--deploy-mode", "client",
           *conf_args({
               "spark.kubernetes.namespace": NS, "spark.kubernetes.container.image": "spark:4",
               "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
               "spark.driver.port": str(port), "spark.blockManager.port": str(port + 1),
               "spark.ui.enabled": "false", "spark.executor.instances": "1",
               "spark.dynamicAllocation.enabled": "false", **GPU}), str(app)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    with open(tmp_path / "driver.log", "wb") as out:
        driver = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        try:
            pods = wait_until(lambda: fake.pods(NS, "spark-role=executor") or (
                driver.poll() is not None and ["ended"]), 180, "an executor pod")
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, 9)
            driver.wait(30)
    assert pods != ["ended"], (tmp_path / "driver.log").read_text()[-3000:]
    assert limits(pods[0])["nvidia.com/gpu"] == "1"
