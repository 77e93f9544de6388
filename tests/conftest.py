"""Fixtures for every test: a real local Spark cluster and its helpers (tests/sparkcluster.py)."""

from tests.sparkcluster import jvm_app_jar, pyspark_app, spark_cluster  # noqa: F401
