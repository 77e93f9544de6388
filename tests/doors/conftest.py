"""The doors' tests: each door in-process on the app rig of tests/support/app_fixtures.py, and
``os.environ`` put back after each test (pyspark's Connect client changes it in this process:
tests/support/environment.py)."""

from __future__ import annotations

from tests.support.app_fixtures import (  # noqa: F401 - fixtures
    app_dir,
    app_file,
    client,
    closed_port,
    cluster,
    db,
    offline_app,
    offline_cluster,
    offline_config,
    offline_server,
    open_app,
    state_dir,
    stepped,
)
