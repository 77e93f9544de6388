"""Against a real Kubernetes cluster, only when ``KUBECONFIG`` is set (skipped otherwise; the
reason shows in the test summary). Recipe (kind): ``kind create cluster``; ``kubectl create
namespace spark``; ``kubectl apply -f deploy/kubernetes/serviceaccounts.yaml -f
deploy/kubernetes/rbac.yaml``; ``KUBECONFIG=~/.kube/config pytest tests/backends/kubernetes -k
real``.

It runs Spark's own SparkPi from the image (``local://``, nothing to upload) as a driver pod
through the backend and expects FINISHED (exit 0), with capacity read from the real nodes.
``SESSIONSCHED_K8S_NAMESPACE`` (default ``spark``), ``SESSIONSCHED_K8S_IMAGE`` (default
``apache/spark:4.0.1``) and ``SESSIONSCHED_K8S_SERVICE_ACCOUNT`` (default ``spark-driver``)
adapt it to the cluster."""

from __future__ import annotations

import os
import time

import pytest

from sessionsched.backends.base import Launch
from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.config import KubernetesSection
from sessionsched.engine.events import DriverExited
from tests.sparkcluster import wait_until

KUBECONFIG = os.environ.get("KUBECONFIG")
pytestmark = pytest.mark.skipif(
    not KUBECONFIG, reason="KUBECONFIG not set: no real Kubernetes cluster here; the fake API "
    "server tests stand in (see this file's doc for a kind recipe)")


def test_spark_pi_runs_as_a_driver_pod_on_a_real_cluster(tmp_path):
    settings = KubernetesSection(
        kubeconfig=KUBECONFIG,
        namespace=os.environ.get("SESSIONSCHED_K8S_NAMESPACE", "spark"),
        image=os.environ.get("SESSIONSCHED_K8S_IMAGE", "apache/spark:4.0.1"),
        service_account=os.environ.get("SESSIONSCHED_K8S_SERVICE_ACCOUNT", "spark-driver"))
    backend = KubernetesBackend(settings, tmp_path / "drivers", sync_timeout_s=30)
    try:
        capacity, _ = backend.capacity()
        assert capacity.cores > 0 and capacity.mem_mib > 0
        backend.launch(Launch(
            app_id="real-pi", name="real-pi", in_cluster=True, argv=(
                "--class", "org.apache.spark.examples.SparkPi",
                "--conf", "spark.executor.instances=1",
                "--conf", "spark.dynamicAllocation.enabled=false",
                "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar", "10")))
        seen: list = []
        wait_until(lambda: seen.extend(backend.poll(time.time()))
                   or [e for e in seen if isinstance(e, DriverExited)], 600, "the driver's end")
        assert [e for e in seen if isinstance(e, DriverExited)] == [DriverExited("real-pi", 0)]
    finally:
        backend.close()
