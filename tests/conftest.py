"""Fixtures for every test: a real local Spark cluster and its helpers (tests/sparkcluster.py),
a real PostgreSQL server (tests/pgserver.py).

Run in parallel (``pytest -n 2``, as ``make test`` does; pytest-xdist with ``--dist
loadgroup``), each worker starts the session's fixtures it needs for itself. So that a real
Spark cluster is started once, not once per worker, every test on one shares an
``xdist_group``: the session's ``spark_cluster``, or the agent tests' own cluster
(tests/agent/conftest.py); the tests of a module with a module-scoped fixture (a browser, the
container stack) share one too. Every other test goes to whichever worker is free."""

from __future__ import annotations

import pytest

from tests.pgserver import pg_server  # noqa: F401
from tests.sparkcluster import jvm_app_jar, pyspark_app, spark_cluster  # noqa: F401

# Session fixtures that start a real Spark cluster, by the group of the tests that use them.
CLUSTER_GROUPS = {"spark_cluster": "spark-cluster", "agent_cluster": "agent-cluster"}


def xdist_group(item: pytest.Item) -> str | None:
    """The group ``item`` runs in (on one worker, with the rest of its group), if any."""
    defs = getattr(item, "_fixtureinfo", None)
    if defs is None:
        return None
    for name in item.fixturenames:
        if name in CLUSTER_GROUPS:
            return CLUSTER_GROUPS[name]
    for name in item.fixturenames:
        if any(d.scope in ("module", "package") for d in defs.name2fixturedefs.get(name, ())):
            return "module:" + item.nodeid.split("::")[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
