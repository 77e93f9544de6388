"""A time-of-day plan that lowers a queue's ``max_cores`` on a real cluster (issue 25, YuniKorn's
YUNIKORN-3133): the app above the new cap gives executors back whether or not anyone waits,
within the queue's reclaim timeout (0: killed at once) plus one Spark executor stop; the plan
that raises the cap again gives the queue's waiting app its executors.

Plans fire by cron, to the minute (``service/plans.py``), so the test runs a server of its
own on the agent tests' cluster (``conftest.py``; the session's server has no app meanwhile)
with two plans on the next minutes: lower, then raise. It takes two to three minutes, most of
it waiting for the minute; every wait is bounded, every app and the server stopped after.
"""

from __future__ import annotations

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
# A (four of the cluster's six cores, for minutes) needs this long at most to hold them before
# the cap falls; the lowering plan fires at the first whole minute after it.
RAMP_UP_S = 100.0
# One Spark executor stop on a loaded 2-core machine: the master kills the process, the
# driver and the agent see it gone (reclaim_timeout 0 adds nothing).
EXECUTOR_STOP_S = 30.0


def minute_after(t: float) -> float:
    return t - t % 60 + 60


def plan_at(t: float, max_cores: int) -> dict:
    at = datetime.fromtimestamp(t, timezone.utc)
    return {"cron": f"{at.minute} {at.hour} * * *", "timezone": "UTC",
            "queues": {"root.capped": {"max_cores": max_cores}}}


def cores_on_cluster(cluster) -> int:
    """The executor cores the master gives apps now (client-mode drivers hold none)."""
    return sum(a.cores for a in cluster.status().apps)


def test_a_plan_lowering_max_cores_takes_executors_back_and_raising_it_starts_the_waiting(
        agent_cluster, tmp_path):
    lower_at = minute_after(time.time() + RAMP_UP_S)
    raise_at = lower_at + 60
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
        # The plan fires at its minute: nobody else wants a core, yet A's surplus goes.
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
        print(f"B under the cap: {seen.state.value}, target {seen.target}, {seen.reason!r}")
        assert held(api, a)[0] <= CAP and held(api, b) == (0,)
        # The raising plan fires: B's executors start on the room the cap kept idle.
        wait_until(lambda: held(api, b)[0] >= 1 or api.app(b).state.value == "FINISHED",
                   raise_at + 90 - time.time(), "B's executors to start once the cap is raised",
                   interval_s=0.5)
        assert time.time() >= raise_at
        print(f"quota cut: A at {CAP} executors {cut_s:.1f}s after the plan's minute")
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
