"""Against a real Kubernetes cluster: Spark's own SparkPi from the image (``local://``, nothing
to upload) as a driver pod through sessionsched's Kubernetes backend, expected to end with exit
code 0, with the capacity read from the real nodes. The test suite cannot run this (no cluster
here: it runs against the fake API server, docs/operator/kubernetes.md); an operator can, once
the manifests in this folder are applied. A recipe with kind::

    kind create cluster
    kubectl create namespace spark
    kubectl apply -f deploy/kubernetes/serviceaccounts.yaml -f deploy/kubernetes/rbac.yaml
    KUBECONFIG=~/.kube/config .venv/bin/python deploy/kubernetes/smoke_sparkpi.py

``SESSIONSCHED_K8S_NAMESPACE`` (default ``spark``), ``SESSIONSCHED_K8S_IMAGE`` (default
``apache/spark:4.0.1``) and ``SESSIONSCHED_K8S_SERVICE_ACCOUNT`` (default ``spark-driver``)
adapt it to the cluster. Prints one line and exits 0 on success, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from sessionsched.backends.base import Launch
from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.config import KubernetesSection
from sessionsched.engine.events import DriverExited

TIMEOUT_S = 600  # the image's pull on a fresh node, the JVM's start, SparkPi's 10 slices


def main() -> int:
    kubeconfig = os.environ.get("KUBECONFIG")
    if not kubeconfig:
        print("smoke_sparkpi: KUBECONFIG is not set: which cluster?", file=sys.stderr)
        return 1
    settings = KubernetesSection(
        kubeconfig=kubeconfig,
        namespace=os.environ.get("SESSIONSCHED_K8S_NAMESPACE", "spark"),
        image=os.environ.get("SESSIONSCHED_K8S_IMAGE", "apache/spark:4.0.1"),
        service_account=os.environ.get("SESSIONSCHED_K8S_SERVICE_ACCOUNT", "spark-driver"))
    with tempfile.TemporaryDirectory() as tmp:
        backend = KubernetesBackend(settings, Path(tmp) / "drivers", sync_timeout_s=30)
        try:
            capacity, _ = backend.capacity()
            if capacity.cores <= 0 or capacity.mem_mib <= 0:
                print(f"smoke_sparkpi: the nodes show no room ({capacity})", file=sys.stderr)
                return 1
            backend.launch(Launch(
                app_id="smoke-pi", name="smoke-pi", in_cluster=True, argv=(
                    "--class", "org.apache.spark.examples.SparkPi",
                    "--conf", "spark.executor.instances=1",
                    "--conf", "spark.dynamicAllocation.enabled=false",
                    "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar", "10")))
            deadline = time.monotonic() + TIMEOUT_S
            while time.monotonic() < deadline:
                ended = [e for e in backend.poll(time.time()) if isinstance(e, DriverExited)]
                if ended:
                    code = ended[0].exit_code
                    print(f"smoke_sparkpi: SparkPi's driver pod ended with exit code {code}")
                    return 0 if code == 0 else 1
                time.sleep(2)
            print(f"smoke_sparkpi: SparkPi's driver did not end within {TIMEOUT_S}s",
                  file=sys.stderr)
            return 1
        finally:
            backend.close()


if __name__ == "__main__":
    sys.exit(main())
