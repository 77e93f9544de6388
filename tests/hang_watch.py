"""A test that hangs past its timeout ends its process with every thread's stack written down.

pytest-timeout (``timeout`` in pyproject.toml, or a test's ``timeout`` mark) fails a test that
overruns by raising in its main thread. That cannot end a wait in C code that never comes back
to Python (a lock taken inside an extension, the GIL never let go), nor a wait in the teardown
that runs after the failure, outside its timer: a CI run sat so for an hour, printing nothing
of where. ``faulthandler``'s watchdog is a thread of C. ``GRACE_S`` after a test's timeout it
writes every thread's stack and ends the process; pytest-xdist then reports that test as its
worker's crash and goes on with a new worker, so the run still ends, naming the test. A
worker's end is watched too: a thread left running can keep a process from exiting.

A worker writes the stacks to a file of its own (its standard error is pytest's capture while
a test runs), which the first process prints at the end of the run.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ENV = "SESSIONSCHED_HANG_DIR"
# What the timeout's own failure and the teardown after it may still take (shorter for this
# module's own test: tests/test_hang_watch.py).
GRACE_S = float(os.environ.get("SESSIONSCHED_HANG_GRACE_S", "120"))
EXIT_S = 300.0  # a process's end, from its session's finish
NO_TIMEOUT_S = 3600.0  # a test whose timeout is turned off (0) is still watched
_file: list = []  # where this process writes
_worker: list = []  # a worker's own file, emptied whenever no test overran


def timeout_of(item: pytest.Item) -> float:
    """The timeout pytest-timeout applies to ``item``: its mark's, else ``--timeout``'s, else
    the configured one."""
    mark = item.get_closest_marker("timeout")
    value = None
    if mark is not None:
        value = mark.kwargs.get("timeout", mark.args[0] if mark.args else None)
    if value is None:
        value = item.config.getoption("timeout", None)
    if value is None:
        value = item.config.getini("timeout") or 0
    return float(value) or NO_TIMEOUT_S


def start(config: pytest.Config) -> None:
    """In every process, configured: this module's hooks on, the file it writes open. The
    first process chooses the workers' folder before they start, and writes to its own
    standard error (pytest's capture is off between tests: nothing else would print it)."""
    if hasattr(config, "workerinput"):
        path = Path(os.environ[ENV]) / f"{os.getpid()}.txt"
        _worker.append(open(path, "w+"))  # noqa: SIM115 - open as long as the process
        _file.append(_worker[0])
    else:
        os.environ.pop(ENV, None)  # an outer run's, inherited: not this run's to print
        if config.getoption("dist", "no") != "no":  # workers will start
            os.environ[ENV] = tempfile.mkdtemp(prefix="sessionsched-hangs-")
        _file.append(os.fdopen(os.dup(2), "w"))
    config.pluginmanager.register(sys.modules[__name__], "hang_watch")


def _watch(what: str, seconds: float) -> None:
    for f in _worker:
        f.seek(0)
        f.truncate()
        f.write(f"{what}: still running {seconds:g} s on; its process's threads:\n")
        f.flush()
    faulthandler.dump_traceback_later(seconds, exit=True, file=_file[0])


def _unwatch() -> None:
    faulthandler.cancel_dump_traceback_later()
    for f in _worker:
        f.seek(0)
        f.truncate()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _watch(item.nodeid, timeout_of(item) + GRACE_S)
    try:
        yield
    finally:
        _unwatch()


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker = getattr(session.config, "workerinput", {}).get("workerid", "the run")
    _watch(f"{worker}'s end", EXIT_S)


def summary(reporter, config: pytest.Config) -> None:
    """In the first process, at the end of the run: the stacks of every process that hung."""
    folder = os.environ.get(ENV)
    if hasattr(config, "workerinput") or folder is None:
        return
    try:
        hung = [text for path in sorted(Path(folder).glob("*.txt"))
                if (text := path.read_text(errors="replace")).count("\n") > 1]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for text in hung:
        reporter.write_sep("=", "hung: " + text.split(": still running", 1)[0])
        reporter.write(text)
