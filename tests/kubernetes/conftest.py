"""Fixtures for the Kubernetes tests: the fake API server (``fake_apiserver.py``) and the
official ``kubernetes`` client pointed at it."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubernetes.fake_apiserver import FakeApiServer, free_port


@pytest.fixture
def fake():
    """A fresh fake API server on a free port of 41000-41999, stopped after the test."""
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
