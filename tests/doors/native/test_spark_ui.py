"""Where the dashboard links to the Spark UI (doors/native/spark_ui.py): the standalone
master's as configured, the local backend's own master, none for the other backends."""

from types import SimpleNamespace

import pytest

from sessionsched.doors.native.spark_ui import with_spark_ui


def ops_of(backend: str, client=None):
    service = SimpleNamespace(config=SimpleNamespace(cluster=SimpleNamespace(backend=backend)),
                              backend=SimpleNamespace(client=client) if client else object())
    return SimpleNamespace(service=service)


def test_the_local_backend_links_to_the_master_it_started():
    ops = ops_of("local", SimpleNamespace(master_ui="http://127.0.0.1:18080"))
    assert with_spark_ui(ops, {"spark_ui": None}) == {"spark_ui": "http://127.0.0.1:18080"}


@pytest.mark.parametrize("backend", ["standalone", "kubernetes", "memory"])
def test_other_backends_keep_what_the_cluster_row_says(backend):
    ops = ops_of(backend, SimpleNamespace(master_ui="http://elsewhere"))
    assert with_spark_ui(ops, {"spark_ui": "http://m:8080"}) == {"spark_ui": "http://m:8080"}
    assert with_spark_ui(ops, {"spark_ui": None}) == {"spark_ui": None}
