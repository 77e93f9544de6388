"""A PySpark app for the agent's cluster tests: one job of sleeping tasks, then a report line.

    sleepy_job.py --tasks N --seconds S [--until PATH] [--job-after PATH] [--detach-agent-at E]
                  [--linger-s L] [--linger-while-executors] [--log-reports]

Prints ``REPORT {"result": ..., "failed_tasks": ..., "seconds": ...}``: the job's result (the
sum of the task indexes, so a lost or duplicated task shows) and the number of failed task
attempts over the job's stages (a task killed with its executor is one; a gracefully
decommissioned executor leaves none). What the executors did, as Spark records it, the tests
read from the app's event log once it has ended
(``tests/real_spark/agent_cluster/spark_eventlog.py``).

``--until PATH`` ends each task's sleep early once the file PATH exists (the test creates it):
the tasks are busy for exactly as long as the test needs them busy, S only bounds it. The
executors are on the test's host, so they see the file.

``--job-after PATH`` holds the job until the file PATH exists (at most 600 s): the driver
starts and its agent registers, asking for no executor, so a test can start a driver's JVM
while another app takes the cluster and have its job ask only when the test says.

``--detach-agent-at E`` stops the agent once E executors are registered, leaving the cap where
it is: the app runs on as if its agent had died. ``--linger-s`` keeps the driver alive after
the job (idle: its executors leave at Spark's idle timeout); with
``--linger-while-executors`` it ends as soon as it has none left (at most L seconds): an app
that idles with its executors until their idle timeout, then ends.

``--log-reports`` turns the agent's log to debug: the driver log then has each body the agent
sent, as the server took it (``sent PATH {json}``), for a test to read what was reported.
"""

import argparse
import json
import logging
import os
import sys
import threading
import time

from pyspark.sql import SparkSession


def detach_at(sc, executors: int) -> None:
    from sessionsched.agent.attach import detach

    tracker = sc._jsc.sc().statusTracker()  # the Java tracker lists executors (+ the driver)
    while len(tracker.getExecutorInfos()) - 1 < executors:
        time.sleep(0.2)
    detach(release=False)
    print(f"AGENT detached at {executors} executors", flush=True)


def sleeper(seconds: float, until: str | None):
    """A task: sleep ``seconds``, or less if the file ``until`` appears."""
    def task(x):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and os.path.exists(until)):
            time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))
        return x
    return task


def linger(sc, seconds: float, while_executors: bool) -> None:
    """Stay up ``seconds`` with no job; ``while_executors``: only while executors are left."""
    deadline = time.monotonic() + seconds
    tracker = sc._jsc.sc().statusTracker()  # the Java tracker lists executors (+ the driver)
    while time.monotonic() < deadline:
        if while_executors and len(tracker.getExecutorInfos()) <= 1:
            print("LINGER no executor left", flush=True)
            return
        time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--until", default=None)
    parser.add_argument("--job-after", default=None)
    parser.add_argument("--detach-agent-at", type=int, default=0)
    parser.add_argument("--linger-s", type=float, default=0.0)
    parser.add_argument("--linger-while-executors", action="store_true")
    parser.add_argument("--log-reports", action="store_true")
    args = parser.parse_args()
    if args.log_reports:  # before the SparkContext: its agent's first report is logged too
        logging.getLogger("sessionsched.agent").setLevel(logging.DEBUG)

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    if args.detach_agent_at:
        threading.Thread(target=detach_at, args=(sc, args.detach_agent_at), daemon=True).start()
    if args.job_after:
        sleeper(600, args.job_after)(None)
    started = time.monotonic()
    sc.setJobGroup("work", "sleeping tasks")
    result = sc.parallelize(range(args.tasks), args.tasks).map(
        sleeper(args.seconds, args.until)).sum()
    tracker = sc.statusTracker()
    failed = 0
    for job_id in tracker.getJobIdsForGroup("work"):
        for stage_id in tracker.getJobInfo(job_id).stageIds:
            failed += tracker.getStageInfo(stage_id).numFailedTasks
    report = {"result": result, "failed_tasks": failed,
              "seconds": round(time.monotonic() - started, 1)}
    print("REPORT " + json.dumps(report), flush=True)
    linger(sc, args.linger_s, args.linger_while_executors)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
