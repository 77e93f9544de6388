"""Fixtures for every test: a real local Spark cluster and its helpers (tests/sparkcluster.py),
a real PostgreSQL server (tests/pgserver.py)."""

from tests.pgserver import pg_server  # noqa: F401
from tests.sparkcluster import jvm_app_jar, pyspark_app, spark_cluster  # noqa: F401
