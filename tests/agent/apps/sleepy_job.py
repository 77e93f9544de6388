"""A PySpark app for the agent's cluster tests: one job of sleeping tasks, then a report line.

    sleepy_job.py --tasks N --seconds S [--detach-agent] [--linger-s L]

Prints ``REPORT {"result": ..., "failed_tasks": ..., "seconds": ...}``: the job's result (the
sum of the task indexes, so a lost or duplicated task shows), and the number of failed task
attempts over the job's stages (a task killed with its executor is one; a gracefully
decommissioned executor leaves none).

``--detach-agent`` stops the agent right after the SparkContext starts, leaving the cap where it
is: the app runs on as if its agent had died. ``--linger-s`` keeps the driver alive after the
job (idle, holding its executors until Spark's idle timeout).
"""

import argparse
import json
import sys
import time

from pyspark.sql import SparkSession


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--detach-agent", action="store_true")
    parser.add_argument("--linger-s", type=float, default=0.0)
    args = parser.parse_args()

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    if args.detach_agent:
        from sessionsched.agent.attach import detach

        detach(release=False)
        print("AGENT detached", flush=True)
    started = time.monotonic()
    sc.setJobGroup("work", "sleeping tasks")
    seconds = args.seconds
    result = (
        sc.parallelize(range(args.tasks), args.tasks)
        .map(lambda x: (time.sleep(seconds), x)[1])
        .sum()
    )
    tracker = sc.statusTracker()
    failed = 0
    for job_id in tracker.getJobIdsForGroup("work"):
        for stage_id in tracker.getJobInfo(job_id).stageIds:
            failed += tracker.getStageInfo(stage_id).numFailedTasks
    report = {"result": result, "failed_tasks": failed,
              "seconds": round(time.monotonic() - started, 1)}
    print("REPORT " + json.dumps(report), flush=True)
    time.sleep(args.linger_s)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
