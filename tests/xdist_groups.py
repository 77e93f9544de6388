"""The suite in parallel (pytest-xdist, as ``make test`` runs it: ``-n 2 --dist loadgroup``):
tests that share a real Spark cluster started for the session, or a module-scoped fixture,
run on one worker, so each such fixture starts once, not once per worker.

Groups: the session's ``spark_cluster`` (tests/sparkcluster.py) and one per module with a
module-scoped fixture (a browser, the container stack, a shared server). Every other test goes
to whichever worker is free — the agent tests too (``UNGROUPED``): they are the longest, and
spread over the workers they are no longer the run's critical path; each worker that runs one
starts the agent tests' own ``agent_cluster`` once. The groups go out first, biggest first.

Why not xdist's own ``xdist_group`` marks: ``--dist loadgroup`` reads them by renaming each
test's node id, which pytest 9.2 no longer lets a plugin do (``Item.nodeid`` comes from
``Item._id``), so the marks are silently ignored. Here each worker writes the group of every
test it collected to a file (``$SESSIONSCHED_XDIST_GROUPS``, chosen by the controller before
the workers start) and the controller's scheduler, a ``LoadScopeScheduling`` whose scope is the
group, reads it once the workers' collections are in.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

ENV = "SESSIONSCHED_XDIST_GROUPS"
# Session fixtures that start a real Spark cluster, by the group of the tests that use them.
CLUSTER_GROUPS = {"spark_cluster": "spark-cluster"}
# The agent tests' cluster is not a group: its tests are the suite's longest (2-4 min each),
# so they go to whichever worker is free, and a worker that gets one starts its own
# ``agent_cluster`` (a session fixture: once per worker). One group would make them the
# run's critical path (~14 min of the ~16).
UNGROUPED = {"agent_cluster"}


def group_of(item: pytest.Item) -> str | None:
    """The group ``item`` runs in (on one worker, with the rest of its group), if any."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in item.fixturenames:
        if name in CLUSTER_GROUPS:
            return CLUSTER_GROUPS[name]
        if name in UNGROUPED:
            return None
    for name in item.fixturenames:
        if any(d.scope in ("module", "package") for d in info.name2fixturedefs.get(name, ())):
            return "module:" + item.nodeid.split("::")[0]
    return None


def _parallel(config: pytest.Config) -> bool:
    return config.getoption("dist", "no") == "loadgroup"


def choose_file(config: pytest.Config) -> None:
    """In the controller, before the workers start: where they write the groups."""
    if _parallel(config) and not hasattr(config, "workerinput"):
        os.environ[ENV] = str(Path(tempfile.mkdtemp(prefix="sessionsched-xdist-")) / "groups")


def write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker, once collected: every test's group (each worker writes the same)."""
    path = os.environ.get(ENV)
    if path is None or not hasattr(config, "workerinput"):
        return
    groups = {item.nodeid: g for item in items if (g := group_of(item)) is not None}
    mine = Path(f"{path}.{config.workerinput['workerid']}")
    mine.write_text(json.dumps(groups))
    mine.replace(path)  # whole, whichever worker is last


def make_scheduler(config: pytest.Config, log):
    """The controller's scheduler for ``--dist loadgroup``: one unit of work per group."""
    if not _parallel(config):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = json.loads(Path(os.environ[ENV]).read_text())
            return self.groups.get(nodeid, nodeid)

    return ByGroup(config, log)
