"""The service's tests run it whole, in-process: the app rig of tests/support/app_fixtures.py
(a TestClient on a real SQLite file, the service stepped by hand on a memory cluster)."""

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
