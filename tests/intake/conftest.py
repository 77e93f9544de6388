"""The intake's tests: the app rig of tests/support/app_fixtures.py (remote submission's uploads
are sent through the app in-process)."""

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
