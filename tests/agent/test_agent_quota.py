"""A time-of-day plan that lowers a queue's ``max_cores`` on a real cluster (issue 25, YuniKorn's
YUNIKORN-3133): the app above the new cap gives executors back whether or not anyone waits,
within the queue's reclaim timeout (0: killed at once) plus one Spark executor stop; the plan
that raises the cap again gives the queue's waiting app its executors.

The test runs a server of its own on the agent tests' cluster (``conftest.py``; the session's
server has no app meanwhile) with two one-shot plans (``at``, to the second:
``service/plans.py``): lower once A has had time to hold its executors, raise once the cut and
B's wait have had theirs. Every wait is bounded, every app and the server stopped after.
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

import pytest
from agent_stack import CORES, SA, finished, held, submit, usage_of

from sessionsched.client import SchedulerClient
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until

pytestmark = pytest.mark.cluster

CAP = 2
A_TASKS = 4  # A's executors before the cut: above the cap, below the cluster's 6 cores
# From the config's writing, the server's start and A's driver and four executors (four of
# the cluster's six cores, for minutes) take this long at most before the cap falls: 37 s at
# load ~25 on this 2-core machine, over 58 s at load ~30 (a plan at 60 s came before A had
# its 4), so the bound the minute plans had at least.
RAMP_UP_S = 100.0
# One Spark executor stop on a loaded 2-core machine: the master kills the process, the
# driver and the agent see it gone (reclaim_timeout 0 adds nothing).
EXECUTOR_STOP_S = 30.0
# After the cut, B's submission and admission (target 0, ~1 s) before the raise; meanwhile
# B's driver starts and asks, held at 0 by the cap.
B_WAITS_S = 10.0


def plan_at(t: float, max_cores: int) -> dict:
    at = datetime.fromtimestamp(t, timezone.utc)
    return {"at": at.isoformat(), "queues": {"root.capped": {"max_cores": max_cores}}}


def cores_on_cluster(cluster) -> int:
    """The executor cores the master gives apps now (client-mode drivers hold none)."""
    return sum(a.cores for a in cluster.status().apps)


def test_a_plan_lowering_max_cores_takes_executors_back_and_raising_it_starts_the_waiting(
        agent_cluster, tmp_path):
    t0 = time.time()
    lower_at = math.ceil(t0 + RAMP_UP_S)
    raise_at = lower_at + EXECUTOR_STOP_S + B_WAITS_S
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 200, "heartbeat_s": 1.0},
        "cluster": {"backend": "standalone", "master": agent_cluster.master_url,
                    "master_ui": agent_cluster.master_ui, "driver_slots": 4},
        "defaults": {"queue": "root.capped"},
        "queues": [{"name": "root", "queues": [
            {"name": "capped", "policy": "fifo", "reclaim_timeout": 0, "max_cores": CORES,
             **SA}]}],
        "plans": [plan_at(lower_at, CAP), plan_at(raise_at, CORES)],
    }
    server = ServerProcess.start(config, tmp_path / "server")
    api = SchedulerClient(server.url)
    api.submitted = []
    release = tmp_path / "release"
    try:
        # A wants 4 executors (its 4 tasks run until the test releases them); alone, it gets
        # them.
        a = submit(api, "quota-a", "root.capped", 5000, "--tasks", A_TASKS, "--seconds", 600,
                   "--until", release)
        wait_until(lambda: held(api, a) == (A_TASKS,), max(lower_at - time.time() - 2, 1),
                   "A to hold its 4 executors before the cap falls")
        print(f"A held its {A_TASKS} executors {time.time() - t0:.1f}s after the config's "
              f"writing ({RAMP_UP_S:g}s allowed)")
        # The plan fires at its second: nobody else wants a core, yet A's surplus goes.
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
        assert time.time() < raise_at - 5, "the cut took too long to see B wait before the raise"
        seen = wait_until(lambda: (x := api.app(b)).state.value in ("STARTING", "RUNNING")
                          and x.target == 0 and api.app(a).target <= CAP and x,
                          raise_at - 3 - time.time(), "B admitted with a target of 0 under the cap")
        print(f"B under the cap: {seen.state.value}, target {seen.target}, {seen.reason!r}, "
              f"{raise_at - time.time():.1f}s before the raise")
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
        # The cut killed busy executors: counted as reclaimed (docs/usage.md).
        u = usage_of(api, a)
        assert u["reclaimed_executors"] >= A_TASKS - CAP and u["reclaimed_core_s"] > 0
        assert usage_of(api, b)["busy_core_s"] > 0  # B ran its tasks after the raise
    finally:
        release.touch()
        for app_id in api.submitted:
            if not api.app(app_id).state.terminal:
                api.kill(app_id)
        wait_until(lambda: all(api.app(i).state.terminal for i in api.submitted), 60,
                   "every app to end")
        api.close()
        server.stop()
        wait_until(lambda: not agent_cluster.status().apps, 60, "the cluster to have no app left")
