"""Waits near their bounds: every ``wait_until`` of a run (tests/sparkcluster.py) that took more
than half its timeout is printed at the end of the run, closest to its bound first. A bound
sized on a quiet machine fails first on a loaded or slower one (the project's CI: once an app's
start to its full size took over 120 s there, 25-35 s here); a green run already says which
bounds came close, so they can be looked at before they fail.

The waits go to one file per run (``$SESSIONSCHED_WAITS``, chosen by the first process before
xdist's workers start; they inherit it), one line each, appended whole; the first process
prints them and removes the file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ENV = "SESSIONSCHED_WAITS"
SHARE = 0.5  # a wait that took more than this share of its bound is shown
SHOWN = 12


def choose_file(config: pytest.Config) -> None:
    """In the first process, before any worker starts: where the waits are written."""
    if not hasattr(config, "workerinput"):
        os.environ[ENV] = str(Path(tempfile.mkdtemp(prefix="sessionsched-waits-")) / "waits")


def record(took_s: float, bound_s: float, what: str) -> None:
    """A wait that ended (or timed out) after ``took_s`` of its ``bound_s``."""
    path = os.environ.get(ENV)
    if path is None or took_s <= SHARE * bound_s:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    with open(path, "a") as f:  # one short line a write: the workers' lines never interleave
        f.write(json.dumps([round(took_s, 1), bound_s, what, test]) + "\n")


def summary(reporter, config: pytest.Config) -> None:
    """In the first process, at the end of the run: the waits near their bounds."""
    path = os.environ.get(ENV)
    if hasattr(config, "workerinput") or path is None:
        return
    try:
        waits = [json.loads(line) for line in Path(path).read_text().splitlines()]
    except FileNotFoundError:
        waits = []
    finally:
        shutil.rmtree(Path(path).parent, ignore_errors=True)
    reporter.write_sep("=", f"{len(waits)} wait(s) took more than {SHARE:.0%} of their bound")
    for took, bound, what, test in sorted(waits, key=lambda w: -w[0] / w[1])[:SHOWN]:
        reporter.write_line(f"{took / bound:4.0%} {took:g} of {bound:g} s  {what}  ({test})")
