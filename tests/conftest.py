"""Fixtures for every test: a real local Spark cluster and its helpers (tests/sparkcluster.py),
a real PostgreSQL server (tests/pgserver.py); in a parallel run, the tests on one real cluster
kept on one worker (tests/xdist_groups.py)."""

from __future__ import annotations

import pytest

from tests import xdist_groups
from tests.pgserver import pg_server  # noqa: F401
from tests.sparkcluster import jvm_app_jar, pyspark_app, spark_cluster  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    xdist_groups.choose_file(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    xdist_groups.write_groups(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return xdist_groups.make_scheduler(config, log)
