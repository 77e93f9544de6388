"""The Spark version this scheduler speaks as (its REST answers' ``serverSparkVersion``): the
installed pyspark's, else the release the protocol follows."""

from __future__ import annotations

from importlib import metadata


def _spark_version() -> str:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "4.0.1"


SPARK_VERSION = _spark_version()
