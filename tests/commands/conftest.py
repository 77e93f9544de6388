"""Fixtures for the CLI's tests: a real scheduler (``sessionsched serve`` as a child process on
a free 127.0.0.1 port, real SQLite in a temporary state directory) and a way to run the real
``sessionsched`` command against it (tests/support/cli_helpers.py)."""

from __future__ import annotations

import pytest

from sessionsched.backends.ports import free_port
from tests.support.cli_helpers import (  # noqa: F401 - fixtures
    app_dir,
    offline_server,
    shared_offline_server,
)


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on."""
    return free_port()
