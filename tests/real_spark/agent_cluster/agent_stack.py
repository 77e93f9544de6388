"""Helpers of the agent's real-cluster tests (fixtures: ``conftest.py``): the cluster's size,
the queues, submitting the test app, reading apps' executors and reports."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from sessionsched.client import Submission
from tests.sparkcluster import SMALL, wait_until

CORES = 6
# The bound on an app's start to its full size: a driver and six executor JVMs. 25-35 s here
# even with two other workers starting clusters of their own; once over 120 s in the project's
# CI, at the start of a run, when every worker starts its JVMs at once.
START_S = 240
# Spark's driver (CoarseGrainedSchedulerBackend, INFO) for each executor it decommissions.
DECOMMISSION = re.compile(r"Notify executor (\S+) to decommission")
# The agent's debug line for each heartbeat it sent (sessionsched/agent/transport.py).
SENT_HEARTBEAT = re.compile(r"sessionsched agent: sent /api/v1/agent/heartbeat (\{.*\})$", re.M)
APP = Path(__file__).parent / "apps" / "sleepy_job.py"
# The arbitration tests need a second app admitted beside one that wants every core, which
# `stateaware` does once the first has an executor; `demand` (the default) would start one
# equal-priority app ahead and hold the next back.
SA = {"admission": "stateaware"}
QUEUES = [{"name": "root", "queues": [
    {"name": "fair", "policy": "fairshare", "reclaim_timeout": 0, **SA},
    {"name": "default", "policy": "fairshare", "reclaim_timeout": 0, **SA},  # the notebook's
    {"name": "prio", "policy": "priority", "reclaim_timeout": 0, **SA},
    # A deadline far above what a graceful decommission takes (seconds), so that on a loaded
    # machine too the executors leave by themselves: a kill at the deadline would show.
    {"name": "graceful", "policy": "priority", "reclaim_timeout": 150, **SA},
    {"name": "solo", "policy": "fifo", "max_running_apps": 1, **SA},
]}]


def submit(api, name, queue, priority, *args, conf=None, idle_timeout_s=60):
    props = {**SMALL, "spark.driver.host": "127.0.0.1",
             "spark.dynamicAllocation.executorIdleTimeout": f"{idle_timeout_s}s", **(conf or {})}
    argv = ["--name", name]
    for k, v in props.items():
        argv += ["--conf", f"{k}={v}"]
    argv += [str(APP), *map(str, args)]
    app = api.submit(Submission(tuple(argv), str(APP.parent), queue=queue, priority=priority))
    api.submitted.append(app.id)
    return app.id


def described(app) -> str:
    """One app as the server has it, for a failed test's output."""
    return (f"{app.id} {app.name}: {app.state.value}, executors {app.executors}, target "
            f"{app.target}, demand {app.demand}, started {app.started_at}, first executor "
            f"{app.first_executor_at}, reason {app.reason!r}, gang {app.gang}")


def held(api, *ids):
    return tuple(api.app(i).executors for i in ids)


def settle(api, ids, expected, timeout_s, what):
    """Wait until the apps hold ``expected`` executors, and still do 3 s later (converged,
    not passing through)."""
    def converged():
        if held(api, *ids) != expected:
            return False
        time.sleep(3)
        return held(api, *ids) == expected
    wait_until(converged, timeout_s, what, interval_s=0.5)


def usage_of(api, app_id) -> dict:
    """The app's line of ``GET /api/v1/usage?by=app`` (what ``sessionsched usage --by app``
    prints)."""
    (line,) = [u for u in api.usage("app") if u["app"] == app_id]
    return line


def report(api, app_id):
    """The app's REPORT line: result, failed task attempts, seconds."""
    for line in api.log(app_id, tail=400).splitlines():
        if line.startswith("REPORT "):
            return json.loads(line.removeprefix("REPORT "))
    return None


def sent_reports(api, app_id) -> list[dict]:
    """The heartbeats the app's agent sent, from its driver log (``sleepy_job.py
    --log-reports``)."""
    return [json.loads(m.group(1)) for m in SENT_HEARTBEAT.finditer(api.log(app_id, tail=100000))]


def decommissioning(api, app_id):
    """The executors the app's Spark was told to decommission (its driver log says so)."""
    return {m.group(1) for m in DECOMMISSION.finditer(api.log(app_id, tail=2000))}


def finished(api, app_id):
    app = api.app(app_id)
    return app if app.state.terminal else None
