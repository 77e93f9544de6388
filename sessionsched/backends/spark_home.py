"""Where Spark's launch scripts are: ``$SPARK_HOME`` if set, else the Spark bundled with the
installed ``pyspark`` package (its package directory has ``bin/spark-submit``,
``bin/spark-class`` and ``jars/``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


class SparkNotFound(LookupError):
    """No usable Spark installation; ``str()`` says where we looked."""


def spark_home(environ: dict[str, str] | None = None) -> Path:
    """The Spark home to launch from. Raises SparkNotFound with a one-line reason."""
    env = os.environ if environ is None else environ
    configured = env.get("SPARK_HOME")
    if configured:
        home = Path(configured)
        if not (home / "bin" / "spark-submit").is_file():
            raise SparkNotFound(f"SPARK_HOME={configured} has no bin/spark-submit")
        return home
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise SparkNotFound("no Spark found: set SPARK_HOME or install pyspark")
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "spark-submit").is_file():
        raise SparkNotFound(f"the pyspark package at {home} has no bin/spark-submit")
    return home


def spark_submit(home: Path | None = None) -> str:
    return str((home or spark_home()) / "bin" / "spark-submit")


def spark_class(home: Path | None = None) -> str:
    return str((home or spark_home()) / "bin" / "spark-class")


def spark_jars(home: Path | None = None) -> Path:
    return (home or spark_home()) / "jars"
