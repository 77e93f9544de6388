"""Helpers of the tests on the app rig (app_fixtures.py): a config builder, polling, reading the
SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sessionsched.config import ServerConfig
from tests.sparkcluster import wait_until  # noqa: F401 (the one polling helper, re-exported)

# StateAware (one app starting at a time per queue): the server's tests were written against
# its pacing; the default `demand` admission is tested in tests/engine and tests/sim.
QUEUES = [{"name": "root", "queues": [
    {"name": "default", "policy": "fairshare", "admission": "stateaware"},
    {"name": "etl", "policy": "priority", "admission": "stateaware"},
]}]


def make_config(state_dir: Path, **sections) -> ServerConfig:
    data = {"server": {"state_dir": str(state_dir), "cycle_ms": 50}, "queues": QUEUES}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return ServerConfig.model_validate(data)


def rows(db: Path, sql: str) -> list[tuple]:
    """Read the store's SQLite file with a plain connection: what is on disk."""
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()
