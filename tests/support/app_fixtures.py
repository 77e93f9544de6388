"""The app rig: the app in-process (FastAPI TestClient, a real SQLite file, the real
APScheduler cycle) in a temporary state directory; the service stepped by hand on a memory
cluster (``stepped``, ``cluster``: ``stepped_service.py``). Fixtures of the service's, the
doors', the intake's and the server's tests: their folders' conftest.py import them."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.memory import MemoryCluster
from sessionsched.backends.ports import free_port
from sessionsched.model import Resources
from sessionsched.server.app import asgi, create_app
from tests.support.cli_helpers import app_dir, offline_server  # noqa: F401 - fixtures
from tests.support.server_helpers import QUEUES, make_config
from tests.support.stepped_service import START_S, Clock, stepped_service


@pytest.fixture
def state_dir(tmp_path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def db(state_dir) -> Path:
    return state_dir / "sessionsched.db"


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on: a cluster that cannot be reached."""
    return free_port()


@pytest.fixture
def offline_cluster(closed_port) -> dict:
    """The ``cluster`` config section of a standalone cluster that cannot be reached:
    submissions are accepted and queue, nothing starts, queue positions hold still."""
    return {"backend": "standalone", "master": f"spark://127.0.0.1:{closed_port}",
            "master_ui": f"http://127.0.0.1:{closed_port}"}


@pytest.fixture
def offline_config(offline_cluster):
    """A server config (as YAML data, for ``sessionsched serve``) whose cluster cannot be
    reached."""

    def make(state_dir: Path) -> dict:
        return {"server": {"state_dir": str(state_dir), "cycle_ms": 50},
                "cluster": offline_cluster, "queues": QUEUES}

    return make


@pytest.fixture
def offline_app(state_dir, offline_cluster):
    """A function building the app (in-process) on the offline cluster, with the real
    standalone backend; ``sections`` change the config."""

    def make(**sections):
        return create_app(make_config(state_dir, cluster=offline_cluster, **sections))

    return make


@pytest.fixture
def client(offline_app):
    with TestClient(offline_app()) as c:
        yield c


@pytest.fixture
def app_file(tmp_path) -> Path:
    p = tmp_path / "job.py"
    p.write_text("print('hello')\n")
    return p


@pytest.fixture
def open_app():
    """Opens a FastAPI app in-process, whole (``asgi``: the auth and standby layers, the
    lifespan started) as a TestClient; ``client.api`` is the app. Every one is closed at the
    end of the test."""
    opened: list[TestClient] = []

    def open_(api) -> TestClient:
        client = TestClient(asgi(api))
        client.api = api
        client.__enter__()
        opened.append(client)
        return client

    yield open_
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture
def cluster() -> MemoryCluster:
    """A 4-core memory cluster (drivers and executors up ``START_S`` after their launch)."""
    return MemoryCluster(Resources(4, 8192), driver_slots=4, driver_start_s=START_S,
                         executor_start_s=START_S, executor_idle_timeout_s=5, work_s=2)


@pytest.fixture
def stepped(state_dir, cluster, tmp_path):
    """``stepped(**queue)`` opens the service on ``cluster`` with one queue ``root.default``
    (``queue``: its settings), stepped by hand; opened again, it is the same scheduler
    restarted."""
    clock = Clock()

    def start(**queue):
        queues = [{"name": "root", "queues": [{"name": "default", **queue}]}]
        return stepped_service(state_dir, cluster, tmp_path, clock, queues)

    return start
