"""The app rig's in-process ``client`` (tests/support/app_fixtures.py), for the tests here that
hold the scheduler's answers against a real master's (test_spark_rest_layout.py)."""

from __future__ import annotations

from tests.support.app_fixtures import (  # noqa: F401 - fixtures
    client,
    closed_port,
    offline_app,
    offline_cluster,
    state_dir,
)
