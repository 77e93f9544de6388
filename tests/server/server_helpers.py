"""Helpers shared by the server tests: a config builder, polling, reading the SQLite file."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from sessionsched.config import ServerConfig

QUEUES = [{"name": "root", "queues": [
    {"name": "default", "policy": "fairshare"},
    {"name": "etl", "policy": "priority"},
]}]


def make_config(state_dir: Path, **sections) -> ServerConfig:
    data = {"server": {"state_dir": str(state_dir), "cycle_ms": 50}, "queues": QUEUES}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return ServerConfig.model_validate(data)


def wait_until(predicate: Callable[[], object], timeout_s: float = 10.0, what: str = "condition"):
    """Poll ``predicate`` until it returns something truthy; that value, or AssertionError."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(0.02)


def rows(db: Path, sql: str) -> list[tuple]:
    """Read the store's SQLite file with a plain connection: what is on disk."""
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()
