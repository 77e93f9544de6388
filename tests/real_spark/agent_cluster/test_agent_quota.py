"""A time-of-day plan that lowers a queue's ``max_cores`` on a real cluster (YuniKorn's
YUNIKORN-3133): the app above the new cap gives executors back whether or not anyone waits,
within the queue's reclaim timeout (0: killed at once) plus one Spark executor stop; the plan
that raises the cap again gives the queue's waiting app its executors.

The test runs a server of its own config on the agent tests' cluster (``conftest.py``; no other
server runs apps there meanwhile). Plans are configuration, read when the server starts
(``service/plans.py``), so the test adds each one as a user would: it writes the config with
the plan and restarts the server (its drivers run on and are adopted), each plan a one-shot
(``at``, to the second) a few seconds after the restart - once the condition it waits for holds
(A holds its executors; B waits under the cap), never at a time guessed ahead for a slow
machine. The second restart also shows the plan that fired last staying in force across a
restart. Every wait is bounded, every app and the server stopped after.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from agent_stack import CORES, SA, finished, held, submit, usage_of

from sessionsched.client import SchedulerClient
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import free_ports, wait_until

pytestmark = pytest.mark.cluster

CAP = 2
A_TASKS = 4  # A's executors before the cut: above the cap, below the cluster's 6 cores
# A plan's second, after the config's writing: the restart (the old server's stop, the new
# one's start) comes first, so that the plan fires by its trigger in a running server. At
# least this far ahead, and twice the slowest start or restart seen so far in the test (~6 s
# at load 10 on this 2-core machine); had a start taken longer still, the lowering plan would
# apply at the start (the same change) and the raising one fails the test, saying so.
PLAN_LEAD_S = 10.0
# The agents' watch is held open at most this long (default 10 s): a server's stop waits for
# the open watches to close, so this bounds the stop.
KEEPALIVE_S = 3.0
# One Spark executor stop on a loaded 2-core machine: the master kills the process, the
# driver and the agent see it gone (reclaim_timeout 0 adds nothing); the agent, back from its
# backoff over the restart (at most 8 s), hears of the cap first.
EXECUTOR_STOP_S = 30.0


def plan_at(t: float, max_cores: int) -> dict:
    at = datetime.fromtimestamp(t, timezone.utc)
    return {"at": at.isoformat(), "queues": {"root.capped": {"max_cores": max_cores}}}


def cores_on_cluster(cluster) -> int:
    """The executor cores the master gives apps now (client-mode drivers hold none)."""
    return sum(a.cores for a in cluster.status().apps)


class Served:
    """The test's server, restarted on its port with new plans as a user would (edit the
    YAML, restart); ``api`` is a client of the running one; ``slowest_s`` the longest start or
    restart so far."""

    def __init__(self, config: dict, workdir: Path):
        self.config, self.workdir = config, workdir
        began = time.monotonic()
        self.server = ServerProcess.start(config, workdir)
        self.slowest_s = time.monotonic() - began
        self.api = SchedulerClient(self.server.url)
        self.api.submitted = []

    def restart_with(self, plan: Callable[[float], list[dict]]) -> float:
        """Restart with the plans ``plan(at)`` gives for a second ``at`` far enough ahead
        for the restart to be done by then; ``at``."""
        at = math.ceil(time.time() + max(PLAN_LEAD_S, 2 * self.slowest_s))
        submitted = self.api.submitted
        self.api.close()
        began = time.monotonic()
        self.server.stop()
        self.config = {**self.config, "plans": plan(at)}
        self.server = ServerProcess.start(self.config, self.workdir)
        took = time.monotonic() - began
        print(f"restarted in {took:.1f}s, {at - time.time():.1f}s before the new plan's second")
        self.slowest_s = max(self.slowest_s, took)
        self.api = SchedulerClient(self.server.url)
        self.api.submitted = submitted
        return at


def test_a_plan_lowering_max_cores_takes_executors_back_and_raising_it_starts_the_waiting(
        agent_cluster, tmp_path):
    (port,) = free_ports(1)
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 200, "heartbeat_s": 1.0,
                   "agent_keepalive_s": KEEPALIVE_S, "port": port},
        "cluster": {"backend": "standalone", "master": agent_cluster.master_url,
                    "master_ui": agent_cluster.master_ui, "driver_slots": 4},
        "defaults": {"queue": "root.capped"},
        "queues": [{"name": "root", "queues": [
            {"name": "capped", "policy": "fifo", "reclaim_timeout": 0, "max_cores": CORES,
             **SA}]}],
    }
    served = Served(config, tmp_path / "server")
    release = tmp_path / "release"
    t0 = time.time()
    try:
        # A wants 4 executors (its 4 tasks run until the test releases them); alone, it gets
        # them.
        api = served.api
        a = submit(api, "quota-a", "root.capped", 5000, "--tasks", A_TASKS, "--seconds", 600,
                   "--until", release)
        wait_until(lambda: held(api, a) == (A_TASKS,), 240,
                   "A to hold its 4 executors before the cap falls")
        print(f"A held its {A_TASKS} executors {time.time() - t0:.1f}s after the server's start")
        # The lowering plan, added now: it fires at its second; nobody else wants a core, yet
        # A's surplus goes.
        lower_at = served.restart_with(lambda at: [plan_at(at, CAP)])
        api = served.api
        wait_until(lambda: held(api, a)[0] <= CAP and cores_on_cluster(agent_cluster) <= CAP,
                   lower_at + EXECUTOR_STOP_S - time.time(),
                   f"A at the new cap of {CAP} on the cluster (reclaim_timeout 0 + one stop)",
                   interval_s=0.5)
        cut_s = time.time() - lower_at
        (capped,) = [q for q in api.queues() if q.name == "root.capped"]
        assert capped.max_cores == CAP
        # B, in the same queue, is admitted (stateaware) but gets no executor: A holds
        # the queue's cap, and B's tasks wait with the cluster's other 4 cores free.
        b = submit(api, "quota-b", "root.capped", 5000, "--tasks", 2, "--seconds", 1)
        seen = wait_until(lambda: (x := api.app(b)).state.value in ("STARTING", "RUNNING")
                          and x.target == 0 and api.app(a).target <= CAP and x,
                          60, "B admitted with a target of 0 under the cap")
        print(f"B under the cap: {seen.state.value}, target {seen.target}, {seen.reason!r}")
        assert held(api, a)[0] <= CAP and held(api, b) == (0,)
        # B's driver up (its agent asks, held at 0 by the cap) before the restart that adds
        # the raising plan: the lowering one, fired last, stays in force across the restart.
        wait_until(lambda: api.app(b).demand > 0, 120, "B's agent to ask for executors")
        raise_at = served.restart_with(lambda at: [plan_at(lower_at, CAP), plan_at(at, CORES)])
        api = served.api
        (capped,) = [q for q in api.queues() if q.name == "root.capped"]
        assert time.time() < raise_at, "the restart took longer than the raising plan's lead"
        assert capped.max_cores == CAP
        assert held(api, a)[0] <= CAP and held(api, b) == (0,)
        # The raising plan fires: B's executors start on the room the cap kept idle.
        wait_until(lambda: held(api, b)[0] >= 1 or api.app(b).state.value == "FINISHED",
                   raise_at + 90 - time.time(), "B's executors to start once the cap is raised",
                   interval_s=0.5)
        assert time.time() >= raise_at
        print(f"quota cut: A at {CAP} executors {cut_s:.1f}s after the plan's second; B's "
              f"executors {time.time() - raise_at:.1f}s after the raise")
        release.touch()
        for app_id in (a, b):
            done = wait_until(lambda i=app_id: finished(api, i), 180, f"{app_id} to finish")
            assert (done.state.value, done.exit_code) == ("FINISHED", 0)
        # The cut killed busy executors: counted as reclaimed (docs/operator/usage.md).
        u = usage_of(api, a)
        assert u["reclaimed_executors"] >= A_TASKS - CAP and u["reclaimed_core_s"] > 0
        assert usage_of(api, b)["busy_core_s"] > 0  # B ran its tasks after the raise
    finally:
        release.touch()
        api = served.api
        for app_id in api.submitted:
            if not api.app(app_id).state.terminal:
                api.kill(app_id)
        wait_until(lambda: all(api.app(i).state.terminal for i in api.submitted), 60,
                   "every app to end")
        api.close()
        served.server.stop()
        wait_until(lambda: not agent_cluster.status().apps, 60, "the cluster to have no app left")
