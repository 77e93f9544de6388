"""In a parallel run, a worker stops the session's real clusters (``xdist_groups.UNGROUPED``:
``spark_cluster``, the agent tests' ``agent_cluster``, and what depends on them, the agent
tests' server) once it has run its last test that could need one, not at the end of the run.

Idle, they still cost CPU all the while the worker runs the rest of the suite: the agent tests'
server steps its cycle five times a second, each reading the cluster's master (the two ~5 % and
~1.5 % of a core, measured idle in a full run on a 2-core machine), on each worker that ran an
agent test.

When: once none of the tests the worker still has queued is slow (``xdist_groups.SLOW``; every
test on a real cluster is one). The controller hands out whole units, those with slow tests
first (``xdist_groups.slow_first``), so a worker given a unit without one gets no slow test
after it. Had a later test asked for a cluster anyway, pytest would start it again (a finished
fixture is set up afresh). A run without xdist keeps them to the end: its order mixes slow and
quick tests.
"""

from __future__ import annotations

import os

import pytest

from tests import xdist_groups

# The session's clusters set up so far in this worker (with the test that last used one, for
# pytest's error message should a teardown fail).
_live: dict[int, tuple[pytest.FixtureDef, pytest.Item]] = {}


def _parallel_worker(config: pytest.Config) -> bool:
    """A worker of a ``--dist loadgroup`` run (the controller names the groups' file only then,
    before the workers start: they inherit it)."""
    return hasattr(config, "workerinput") and xdist_groups.ENV in os.environ


def _queued(config: pytest.Config, session: pytest.Session) -> list[pytest.Item] | None:
    """The tests xdist has handed this worker and it has not started yet; None when that is
    not known (a newer xdist's internals)."""
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if torun is not None and hasattr(torun, "lock"):
            with torun.lock() as indices:
                return [session.items[i] for i in list(indices) if isinstance(i, int)]
    return None


def torn_down(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a test's teardown: stop the clusters when no slow test is left for this
    worker."""
    if not _parallel_worker(item.config):
        return
    manager = item.session._fixturemanager
    for name in xdist_groups.UNGROUPED:  # those set up (the test's, or any before it)
        for fixturedef in manager.getfixturedefs(name, item) or ():
            if fixturedef.cached_result is not None:
                _live[id(fixturedef)] = (fixturedef, item)
    if not _live or nextitem is None:  # the end of the run stops them anyway
        return
    queued = _queued(item.config, item.session)
    if queued is None or any(xdist_groups.is_slow(t) for t in [nextitem, *queued]):
        return
    while _live:
        _, (fixturedef, user) = _live.popitem()
        fixturedef.finish(user._request)  # its dependents (the agent tests' server) first
