"""Fixtures for every test: a real local Spark cluster and its helpers (tests/sparkcluster.py),
a real PostgreSQL server (tests/pgserver.py); in a parallel run, the tests on one real cluster
kept on one worker (tests/xdist_groups.py); a test hung past its timeout ends its worker, its
stacks printed at the end (tests/hang_watch.py); every JVM a test starts compiles with C1 only and,
when one was built (``make test`` builds it), maps the class-data-sharing archive of Spark's
classes (tests/jvm_archive.py: ``~/.cache/sessionsched/jvm-archive``; a JVM whose class path
does not fit it goes on without it, silently; ``SESSIONSCHED_JVM_ARCHIVE=off`` turns it off).
Both through ``JAVA_TOOL_OPTIONS``, below, as is the JVMs' temporary directory: one of the
run's own, removed when the run ends. Every Python a test starts has
``tests/support/pythonpath`` on its path (its ``sitecustomize.py``: pyspark imported from the
installed package, not from pyspark.zip)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests import hang_watch, jvm_archive, wait_bounds, xdist_groups
from tests.pgserver import pg_server  # noqa: F401
from tests.sparkcluster import jvm_app_jar, pyspark_app, spark_cluster  # noqa: F401
from tests.support.environment import _environment_as_it_was  # noqa: F401 - every test's

# Every JVM the tests start (masters, workers, spark-submit, drivers, executors: they inherit
# the environment) stops at the C1 compiler. They live seconds to minutes and run sleeping
# tasks, where C2's compiler threads cost ~40 % of their CPU on a 2-core machine for code
# that never gets hot: a local cluster's start plus a small app took 33-37 s CPU, 19-21 s with
# C1 only (-XX:+UseSerialGC on top: no change). Spark's behaviour is the same; only how it is
# compiled differs. Each JVM prints "Picked up JAVA_TOOL_OPTIONS: ..." to its stderr.
C1_ONLY = "-XX:TieredStopAtLevel=1"

# And they map Spark's classes from one archive instead of reading and verifying them out of
# 280 jars (benchmarks/jvm_start.py, load ~12, medians of 3: a master to its UI 2.5 -> 1.3 s
# CPU; a spark-submit of the tiny app 8.2 -> 5.3 s CPU, 26 -> 18 s; its executor 3.3 -> 1.9 s
# CPU, 6.0 -> 3.1 s to registered). -XX:+UseSerialGC, -XX:CICompilerCount=1 or
# -XX:-UsePerfData on top changed nothing beyond the noise (load ~16: master 1.25-1.40 s,
# spark-submit 4.4-4.8 s CPU), so none is set. Checked once per run, by the first process
# (xdist's workers inherit the environment it set).
ARCHIVE_OPTION = "-XX:SharedArchiveFile="

# Every Python they start (drivers, executors' Python workers, servers, CLI calls) gets this
# folder on its path: its sitecustomize.py has the drivers and workers Spark starts import
# pyspark from the installed, byte-compiled package instead of compiling it again from
# pyspark.zip in each (a driver's and an executor's Python start about half the CPU).
PYTHONPATH_DIR = str(Path(__file__).parent / "support" / "pythonpath")

# Spark keeps its scratch (``spark-*``, ``blockmgr-*``: spark.local.dir falls back to it) and
# its native codecs' copies (``liblz4-java-*.so``) in the JVM's temporary directory, and a JVM
# a test stops with SIGKILL (a driver killed, a master crashed on purpose) never deletes them:
# /tmp gained a few hundred per run. Every JVM of the run gets a directory of the run's own,
# made by the first process (xdist's workers inherit the environment it set) and removed by it
# at the end, when every process the tests started has been stopped.
TMPDIR_OPTION = "-Djava.io.tmpdir="
_OWN_JVM_TMPDIR: list[str] = []  # the directory this process made, to remove at the end


def pytest_configure(config: pytest.Config) -> None:
    xdist_groups.choose_file(config)
    wait_bounds.choose_file(config)
    hang_watch.start(config)
    java_options = os.environ.get("JAVA_TOOL_OPTIONS", "").split()
    if C1_ONLY not in java_options:
        java_options.append(C1_ONLY)
    if not any(o.startswith(ARCHIVE_OPTION) for o in java_options):
        java_options.extend((jvm_archive.java_options() or "").split())
    if not any(o.startswith(TMPDIR_OPTION) for o in java_options):
        _OWN_JVM_TMPDIR.append(tempfile.mkdtemp(prefix="sessionsched-tests-jvm-"))
        java_options.append(TMPDIR_OPTION + _OWN_JVM_TMPDIR[0])
    os.environ["JAVA_TOOL_OPTIONS"] = " ".join(java_options)
    python_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if PYTHONPATH_DIR not in python_path:
        os.environ["PYTHONPATH"] = os.pathsep.join([*python_path, PYTHONPATH_DIR])


def pytest_unconfigure(config: pytest.Config) -> None:
    for path in _OWN_JVM_TMPDIR:
        shutil.rmtree(path, ignore_errors=True)
    xdist_groups.forget_file(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    xdist_groups.write_groups(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return xdist_groups.make_scheduler(config, log)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    wait_bounds.summary(terminalreporter, config)
    hang_watch.summary(terminalreporter, config)
