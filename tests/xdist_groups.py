"""The suite in parallel (pytest-xdist, as ``make test`` runs it: ``-n 3 --dist loadgroup``):
tests that share a module-scoped fixture run on one worker, so each such fixture starts once,
not once per worker; the slow tests go out first, so the run does not end on one worker
still busy with a long test while the others are done.

Groups: one per module with a module-scoped fixture (a browser, the container stack, a shared
server). Every other test goes to whichever worker is free, and so do the tests on the
session's real Spark clusters (``UNGROUPED``: ``spark_cluster``, tests/sparkcluster.py, and
the agent tests' ``agent_cluster``): a worker that runs one starts that cluster once (a
session fixture: once per worker; the backend contract tests already started
``spark_cluster`` on every worker), and its tests run one at a time there, as before. One
group per cluster made that group a run's critical path: the 25 ``spark_cluster`` tests,
~10 of the ~16.5 minutes, ran one after another on one worker.

Order (``slow_first``): a worker asks for the next test when it has two or fewer left, so the
units are handed out slow first - those with tests marked ``SLOW`` (real Spark, Docker, the
crash loop, the store faults, the fake kubelet: 40 s to 3 min each), most such tests first -
then the rest, biggest group first, in collection order otherwise. The seconds-long tests then
fill the workers' ends, and the last test to finish is a short one.

Why not xdist's own ``xdist_group`` marks: ``--dist loadgroup`` reads them by renaming each
test's node id, which pytest 9.2 no longer lets a plugin do (``Item.nodeid`` comes from
``Item._id``), so the marks are silently ignored. Here each worker writes the group and the
slowness of every test it collected to a file (``$SESSIONSCHED_XDIST_GROUPS``, chosen by the
controller before the workers start) and the controller's scheduler, a
``LoadScopeScheduling`` whose scope is the group, reads it once the workers' collections are
in.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest

ENV = "SESSIONSCHED_XDIST_GROUPS"
# Session fixtures that start a real Spark cluster: not groups. Their tests are the suite's
# longest, so they go to whichever worker is free, and a worker that gets one starts its own
# cluster (once per worker).
UNGROUPED = {"spark_cluster", "agent_cluster"}
# Marks of the tests that take 40 s to 3 min (pyproject.toml's markers): handed out first.
SLOW = ("cluster", "containers", "crashloop", "storefault", "kubelet")


def group_of(item: pytest.Item) -> str | None:
    """The group ``item`` runs in (on one worker, with the rest of its group), if any."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in item.fixturenames:
        if name in UNGROUPED:
            return None
    for name in item.fixturenames:
        if any(d.scope in ("module", "package") for d in info.name2fixturedefs.get(name, ())):
            return "module:" + item.nodeid.split("::")[0]
    return None


def is_slow(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(mark) is not None for mark in SLOW)


def slow_first(units: Mapping[str, dict[str, bool]], slow: set[str]) -> list[str]:
    """The units' scopes in the order to hand them out: most slow tests first, then the
    biggest; ties in the given (collection) order."""
    def key(scope: str) -> tuple[int, int]:
        tests = units[scope]
        return -sum(t in slow for t in tests), -len(tests)
    return sorted(units, key=key)


def _parallel(config: pytest.Config) -> bool:
    return config.getoption("dist", "no") == "loadgroup"


def choose_file(config: pytest.Config) -> None:
    """In the controller, before the workers start: where they write the groups."""
    if _parallel(config) and not hasattr(config, "workerinput"):
        os.environ[ENV] = str(Path(tempfile.mkdtemp(prefix="sessionsched-xdist-")) / "groups")


def forget_file(config: pytest.Config) -> None:
    """In the controller, at the end of the run: the groups' directory goes."""
    path = os.environ.get(ENV)
    if path is not None and _parallel(config) and not hasattr(config, "workerinput"):
        shutil.rmtree(Path(path).parent, ignore_errors=True)


def write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker, once collected: every test's group, and the slow tests (each worker
    writes the same)."""
    path = os.environ.get(ENV)
    if path is None or not hasattr(config, "workerinput"):
        return
    groups = {item.nodeid: g for item in items if (g := group_of(item)) is not None}
    slow = [item.nodeid for item in items if is_slow(item)]
    mine = Path(f"{path}.{config.workerinput['workerid']}")
    mine.write_text(json.dumps({"groups": groups, "slow": slow}))
    mine.replace(path)  # whole, whichever worker is last


def make_scheduler(config: pytest.Config, log):
    """The controller's scheduler for ``--dist loadgroup``: one unit of work per group, the
    slow units first."""
    if not _parallel(config):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        written: dict | None = None

        def _read(self) -> dict:
            if self.written is None:
                self.written = json.loads(Path(os.environ[ENV]).read_text())
            return self.written

        def _split_scope(self, nodeid: str) -> str:
            return self._read()["groups"].get(nodeid, nodeid)

        def schedule(self) -> None:
            """LoadScopeScheduling's, with the work queue in ``slow_first`` order, and each
            worker given two tests to start with: a worker runs a test only once it knows the
            next (pytest's ``nextitem``), so a first unit of one test would wait forever."""
            if self.collection is not None:
                super().schedule()
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(next(iter(self.registered_collections.values())))
            if not self.collection:
                return
            units: dict[str, dict[str, bool]] = {}
            for nodeid in self.collection:
                units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            for scope in slow_first(units, set(self._read()["slow"])):
                self.workqueue[scope] = units[scope]
            while self.workqueue and any(self._pending_of(w) < 2
                                         for w in self.assigned_work.values()):
                for node in self.nodes:
                    if self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
                        self._assign_work_unit(node)
            if not self.workqueue:  # all handed out: the workers run theirs and stop
                for node in self.nodes:
                    node.shutdown()

    return ByGroup(config, log)
