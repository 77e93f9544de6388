"""Fixtures for the client tests: a real scheduler (``sessionsched serve`` as a child process on
a free 127.0.0.1 port, real SQLite in a temporary state directory) and a way to run the real
``sessionsched`` command against it (tests/client/cli_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionsched.backends.local import free_port
from tests.client.cli_helpers import offline_scheduler


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on."""
    return free_port()


@pytest.fixture
def offline_server(tmp_path):
    with offline_scheduler(tmp_path) as server:
        yield server


@pytest.fixture(scope="module")
def shared_offline_server(tmp_path_factory):
    """One offline scheduler for a module's tests that only read or are refused."""
    with offline_scheduler(tmp_path_factory.mktemp("shared")) as server:
        yield server


@pytest.fixture
def app_dir(tmp_path) -> Path:
    """A working directory with a tiny application file, ``job.py``."""
    d = tmp_path / "work"
    d.mkdir()
    (d / "job.py").write_text("print('hello')\n")
    return d
