"""The memory backend reports only the apps the cluster changed (``MemoryCluster.watch``):
its events are the same, poll by poll, as those of a backend that looks at every app."""

from pathlib import Path

import pytest

from sessionsched.backends.base import Handle
from sessionsched.backends.memory import MemoryBackend
from sessionsched.engine import CapacityChanged
from sessionsched.sim import load_workload
from sessionsched.sim.simulator import Simulator

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "workloads"


class EveryApp(MemoryBackend):
    """A backend over the same cluster that adopts whatever the other one runs and looks at
    every app at every poll (the report before ``watch``)."""

    def __init__(self, beside: MemoryBackend):
        super().__init__(beside.cluster)
        self.beside = beside

    def poll(self, now):
        for app_id, seen in self.beside._apps.items():
            if app_id not in self._apps:
                self.adopt(Handle(app_id, "memory", seen.driver_id, 0.0))
        self._fresh |= set(self._apps)
        return super().poll(now)


def apps_only(events):
    return [e for e in events if not isinstance(e, CapacityChanged)]


@pytest.mark.parametrize("name", ["driver-fails", "preprocessing-mixed", "notebooks-fairshare",
                                  "burst-20"])
def test_the_watched_report_is_the_whole_report(name):
    sim = Simulator(load_workload(EXAMPLES / f"{name}.yaml"))
    watched = sim.backend
    every = EveryApp(watched)
    polls = 0

    def poll(now):
        nonlocal polls
        got = MemoryBackend.poll(watched, now)
        want = every.poll(now)  # the cluster is at ``now`` already: it only reads
        assert apps_only(got) == apps_only(want)
        polls += 1
        return got

    watched.poll = poll
    result = sim.run()
    assert polls > 10 and result.summary["completed"] + result.summary["failed"] > 0
