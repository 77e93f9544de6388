"""Gangs on a real cluster (docs/design/gangs.md): a PySpark app whose barrier stage needs 4
tasks at once
(``apps/barrier_job.py``), through the real submit path on the agent tests' 6-core cluster
(``conftest.py``), in ``root.prio`` (priority policy, reclaim_timeout 0, stateaware).

- With a gang of 4 (``spark.sessionsched.gang.size=4``): submitted while two other apps hold
  every core, it reserves the 2 cores the first one frees - the second, which wants 6, does
  not grow into them - and once the second ends it is whole, launched, its barrier stage runs
  and it FINISHES. Spark's log shows it was granted exactly its 4 executors: the launch caps a
  static app with ``spark.cores.max`` (Spark standalone ignores ``spark.executor.instances``
  and gave it all 6 free cores before that cap).
- Without a gang, on the same kind of busy cluster (1 core free): it is admitted (an executor
  fits) and Spark gives it the one free core. Spark then waits - its max-concurrent-tasks
  check (``Barrier stage in job 0 requires 4 slots, but only 1 are available. Will retry up
  to N more times``, 40 times 15 s apart by default, 6 times 1 s apart here) - and then refuses
  the stage (``[SPARK-24819]``): the job and the app end FAILED. It waits, then fails.
- ``hard`` with a 20 s timeout the cluster cannot meet (the second app's floor is 4 of the 6
  cores): FAILED with the reason naming the gang and what it held, and the 2 cores it held
  are in use by the app that wants them within seconds.

A barrier stage needs dynamic allocation off (Spark's SPARK-24942): the app is static,
``spark.executor.instances=4``. The gang's app has the check 300 times 1 s apart (5 min): its
4 executors are granted at once but register with its driver only once their JVMs are up
(27-49 s at load 5-16); a check that runs out before them ends the app FAILED, exit 1, as it
once ended at load ~30 when this test gave it 12 checks 5 s apart (that run's log was not
kept). The checks are 1 s apart, not 5, so that the app without a gang is refused 6 s after
its first check, not 30, and the gang's stage starts within 1 s of its 4th executor. Every
wait is bounded; nothing sleeps a fixed time (the hogs' tasks end when the test touches their
``--until`` file).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from agent_stack import START_S, described, held, settle, submit

from sessionsched.client import Submission
from tests.sparkcluster import SLACK, SMALL, wait_until

pytestmark = pytest.mark.cluster

BARRIER = Path(__file__).parent / "apps" / "barrier_job.py"
QUEUE = "root.prio"
SPARK_REFUSES = ("[SPARK-24819]: Barrier execution mode does not allow run a barrier stage that "
                 "requires more slots than the total number of slots in the cluster currently")
# Spark's waits, in its driver's log: the slot check before the stage, and the grants.
SLOT_CHECK = re.compile(r"Barrier stage in job \d+ requires 4 slots, but only (\d+) are available")
GRANTED = re.compile(r"Granted executor ID (\S+)")
STATIC_4 = {"spark.dynamicAllocation.enabled": "false", "spark.executor.instances": "4",
            # Spark checks for N slots before the stage, 40 times 15 s apart by default.
            "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s"}
CHECKS = "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures"


def submit_barrier(api, name: str, priority: int, **conf: str) -> str:
    props = {**SMALL, "spark.driver.host": "127.0.0.1", **STATIC_4, **conf}
    argv = ["--name", name]
    for k, v in props.items():
        argv += ["--conf", f"{k}={v}"]
    argv += [str(BARRIER), "--tasks", "4"]
    app = api.submit(Submission(tuple(argv), str(BARRIER.parent), queue=QUEUE,
                                priority=priority))
    api.submitted.append(app.id)
    return app.id


def ended(api, app_id):
    app = api.app(app_id)
    return app if app.state.terminal else None


def reserved(api, app_id) -> int | None:
    res = (api.app(app_id).gang or {}).get("reservation")
    return None if res is None else res["held_cores"]


def states(api, *ids) -> str:
    """The apps as the server has them, for a failed wait's message."""
    return "; ".join(described(api.app(i)) for i in ids)


def wait_apps(api, ids, condition, timeout_s, what):
    try:
        return wait_until(condition, timeout_s, what, interval_s=0.5)
    except pytest.fail.Exception:
        pytest.fail(f"timed out after {SLACK * timeout_s:g}s waiting for {what}: "
                    f"{states(api, *ids)}")


def two_hogs(api, tmp_path, b_conf=None):
    """A holds 2 cores until ``free_a``; B holds the other 4 and wants 6, until ``free_b``."""
    free_a, free_b = tmp_path / "free-a", tmp_path / "free-b"
    a = submit(api, "hog-a", QUEUE, 9000, "--tasks", 2, "--seconds", 600, "--until", free_a,
               conf={"spark.dynamicAllocation.maxExecutors": "2"})
    wait_apps(api, (a,), lambda: held(api, a) == (2,), 240, "A to hold its 2 executors")
    b = submit(api, "hog-b", QUEUE, 8000, "--tasks", 6, "--seconds", 600, "--until", free_b,
               conf=b_conf)
    settle(api, (a, b), (2, 4), 240, "B at the 4 cores A leaves")
    return (a, free_a), (b, free_b)


def test_a_gang_of_4_reserves_what_frees_then_its_barrier_stage_runs_and_it_finishes(
        api, tmp_path):
    (a, free_a), (b, free_b) = two_hogs(api, tmp_path)
    g = submit_barrier(api, "barrier-gang", 5000, **{"spark.sessionsched.gang.size": "4",
                                                      CHECKS: "300"})
    wait_apps(api, (a, b, g), lambda: reserved(api, g) is not None, 30,
              "the gang reserving (nothing free yet)")
    free_a.touch()
    wait_apps(api, (a, b, g), lambda: reserved(api, g) == 2, 120,
              "A's 2 cores reserved for the gang")
    # B wants 6 and the priority policy would give them to it: they are the gang's.
    settle(api, (b,), (4,), 30, "B kept at 4 beside the reservation")
    assert api.app(g).state.value == "ACCEPTED" and api.app(g).started_at is None
    free_b.touch()  # B ends: the gang is whole
    done = wait_apps(api, (b, g), lambda: ended(api, g), 420, "the gang's app to end")
    log = api.log(g, 2000)
    assert (done.state.value, done.exit_code) == ("FINISHED", 0), log[-3000:]
    assert "BARRIER ran [0, 1, 2, 3]" in log  # its 4 tasks ran at once
    assert len(GRANTED.findall(log)) == 4, GRANTED.findall(log)  # its room, no more
    print(f"slot checks before the stage: {SLOT_CHECK.findall(log)}")


def test_without_a_gang_spark_waits_for_the_slots_then_refuses_the_barrier_stage(api, tmp_path):
    free = tmp_path / "free"
    hog = submit(api, "hog", QUEUE, 9000, "--tasks", 5, "--seconds", 600, "--until", free,
                 conf={"spark.dynamicAllocation.maxExecutors": "5"})
    settle(api, (hog,), (5,), START_S, "the hog at 5 of the 6 cores")
    g = submit_barrier(api, "barrier-alone", 5000, **{CHECKS: "6"})
    done = wait_apps(api, (hog, g), lambda: ended(api, g), 180, "the barrier app to end")
    log = api.log(g, 3000)
    assert done.started_at is not None  # admitted and launched: the refusal is Spark's
    assert done.state.value == "FAILED" and done.exit_code != 0
    assert SPARK_REFUSES in log, log[-3000:]
    checks = SLOT_CHECK.findall(log)  # it waited: Spark checked again and again
    assert len(checks) == 7 and set(checks) <= {"0", "1"}, checks
    assert len(GRANTED.findall(log)) == 1, GRANTED.findall(log)  # the one free core
    print(f"slot checks before the refusal: {checks}")
    free.touch()


def test_a_hard_gang_fails_at_its_timeout_and_its_cores_go_back_at_once(api, tmp_path):
    # B's floor is 4 (minExecutors): the gang can never have more than A's 2 cores.
    (a, free_a), (b, free_b) = two_hogs(
        api, tmp_path, b_conf={"spark.dynamicAllocation.minExecutors": "4"})
    g = submit_barrier(api, "barrier-hard", 5000, **{
        "spark.sessionsched.gang.size": "4", "spark.sessionsched.gang.timeout": "20s",
        "spark.sessionsched.gang.style": "hard"})
    wait_until(lambda: reserved(api, g) is not None, 30, "the gang reserving (nothing yet)")
    free_a.touch()
    wait_apps(api, (a, b, g), lambda: reserved(api, g) == 2, 120,
              "A's 2 cores reserved for the gang")
    done = wait_until(lambda: ended(api, g), 60, "the gang to time out")
    failed_at = time.monotonic()
    assert done.state.value == "FAILED" and done.started_at is None
    assert "gang of 4 executor(s)" in done.reason and "20s timeout (hard)" in done.reason
    assert "2 cores" in done.reason, done.reason  # what it held when time ran out
    # B wants 6: the released cores are its within seconds (executor start on a loaded host).
    wait_until(lambda: held(api, b) == (6,), 60, "B to take the released cores")
    print(f"B at 6 executors {time.monotonic() - failed_at:.1f} s after the gang failed")
    free_b.touch()
    api.submitted.remove(g)  # never launched: it has no driver log for the fixture to read
