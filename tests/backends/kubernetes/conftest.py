"""Fixtures for the Kubernetes tests: the fake API server (``fake_apiserver.py``) and the
official ``kubernetes`` client pointed at it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from sessionsched.backends.kubernetes import KubernetesBackend
from sessionsched.config import KubernetesSection
from tests.backends.kubernetes.fake_apiserver import FakeApiServer, free_port


@pytest.fixture
def fake():
    """A fresh fake API server on a free port of 21000-21999, stopped after the test."""
    server = FakeApiServer(free_port()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def core(fake) -> client.CoreV1Api:
    """The official client's CoreV1Api talking to ``fake``."""
    cfg = client.Configuration(host=fake.url)
    api = client.ApiClient(cfg)
    try:
        yield client.CoreV1Api(api)
    finally:
        api.close()


STANDIN = str(Path(__file__).with_name("spark_submit_standin.py"))


@dataclass
class KubernetesRig:
    """A ready KubernetesBackend on a fake API server with two nodes (4 cpu / 8Gi each)."""

    backend: KubernetesBackend
    fake: FakeApiServer
    settings: KubernetesSection
    run_dir: Path
    namespace: str = "spark"

    def new_backend(self) -> KubernetesBackend:
        """Another backend on the same run_dir and cluster: the scheduler after a restart."""
        return KubernetesBackend(self.settings, self.run_dir, driver_slots=4)


def standin_submit(tmp_path: Path) -> str:
    """An executable that runs the stand-in spark-submit with this interpreter."""
    path = tmp_path / "spark-submit"
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def kubernetes_rig(fake, tmp_path):
    """A KubernetesBackend whose spark-submit is the stand-in (fast launches), on ``fake``."""
    fake.add_node("n1", cpu="4", memory="8Gi", labels={"pool": "spark"})
    fake.add_node("n2", cpu="4", memory="8Gi", labels={"pool": "spark"})
    settings = KubernetesSection(api_server=fake.url, namespace="spark", image="spark:4.0.1",
                                 spark_submit=standin_submit(tmp_path),
                                 upload_path=f"file://{tmp_path}/upload", watch_timeout_s=30)
    backend = KubernetesBackend(settings, tmp_path / "drivers", driver_slots=4)
    rig = KubernetesRig(backend, fake, settings, tmp_path / "drivers")
    try:
        yield rig
    finally:
        rig.backend.close()  # a test may have put a restarted backend in its place
        if rig.backend is not backend:
            backend.close()


@pytest.fixture
def kubernetes_backend(kubernetes_rig) -> KubernetesBackend:
    """The backend alone (for a contract suite parametrized over backends)."""
    return kubernetes_rig.backend
