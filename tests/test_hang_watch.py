"""tests/hang_watch.py on a test that swallows pytest-timeout's failure, in a pytest of its own
with two workers: the worker is ended past the grace, the run goes on and ends, and its end
names the test and prints its stack."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STUBBORN = '''
import time
import pytest

@pytest.mark.timeout(1)
def test_stubborn():
    end = time.monotonic() + 120
    while time.monotonic() < end:
        try:
            time.sleep(0.1)
        except BaseException:  # pytest-timeout's failure, swallowed
            pass

def test_next():
    pass

def test_last():
    pass
'''

CONFTEST = '''
from tests import hang_watch

def pytest_configure(config):
    hang_watch.start(config)

def pytest_terminal_summary(terminalreporter, exitstatus, config):
    hang_watch.summary(terminalreporter, config)
'''


def test_a_test_past_its_timeout_ends_its_worker_named_with_its_stack(tmp_path):
    (tmp_path / "test_stubborn.py").write_text(STUBBORN)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    env = {**os.environ, "SESSIONSCHED_HANG_GRACE_S": "2", "TMPDIR": str(tmp_path),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--rootdir", str(tmp_path), "-o", "timeout=600", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "crashed while running 'test_stubborn.py::test_stubborn'" in out, out
    assert "hung: test_stubborn.py::test_stubborn" in out, out
    assert "line 10 in test_stubborn" in out, out  # the sleep it was in
    assert "1 failed, 2 passed" in out, out
    assert not list(tmp_path.glob("sessionsched-hangs-*")), "the stacks' folder was left"
