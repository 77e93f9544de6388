"""``os.environ`` put back after each test (tests/conftest.py): some tests run pyspark's Spark
Connect client in their own process (tests/doors, tests/real_spark), which changes it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _environment_as_it_was() -> Iterator[None]:
    """pyspark's Connect client marks its own process remote (``SPARK_CONNECT_MODE_ENABLED``,
    ``SPARK_REMOTE``, ... in ``os.environ``): put the environment back after each test.
    Servers a later test starts inherit it, and their PySpark drivers would otherwise ask for a
    Connect URL and die (they did, on the worker that ran the Connect tests first)."""
    before = dict(os.environ)
    yield
    for name in set(os.environ) - before.keys():
        del os.environ[name]
    os.environ.update(before)
