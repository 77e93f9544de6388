"""Fixtures for the store tests: every test that takes ``store_url`` (or ``store``/``writer``)
runs twice, on a real SQLite file and on a real PostgreSQL server the test session starts
(``pg_server``, tests/pgserver.py), each time in a fresh empty database."""

from __future__ import annotations

import pytest

from sessionsched.store import Store, Writer


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return request.getfixturevalue("pg_server").fresh_database()


@pytest.fixture
def store(store_url):
    s = Store(store_url)
    yield s
    s.close()


@pytest.fixture
def writer(store):
    w = Writer(store)
    w.start()
    yield w
    w.stop()
