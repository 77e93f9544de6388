"""The programs that run as a driver: their tests meet an offline scheduler
(tests/support/cli_helpers.py: its cluster cannot be reached, so a session queues and stays)."""

from __future__ import annotations

from tests.support.cli_helpers import shared_offline_server  # noqa: F401 - fixture
