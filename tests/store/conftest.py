"""Fixtures for the store tests: every test that takes ``store_url`` (or ``store``/``writer``)
runs twice, on a real SQLite file and on a real PostgreSQL server the test session starts
(tests/pgserver.py), each time in a fresh empty database."""

from __future__ import annotations

import itertools

import psycopg
import pytest

from sessionsched.store import Store, Writer
from tests.pgserver import PgServer

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """One PostgreSQL server for the session, stopped by PID at the end."""
    server = PgServer()
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()


def fresh_pg_database(server: PgServer) -> str:
    name = f"store_test_{next(_databases)}"
    with psycopg.connect(server.url(), autocommit=True, connect_timeout=10) as c:
        c.execute(f"CREATE DATABASE {name}")
    return server.url(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return fresh_pg_database(request.getfixturevalue("pg_server"))


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
