"""A small PySpark app that asks for GPUs: each task sleeps, then says which GPU addresses
Spark gave it (``TaskContext.resources()``), so how GPUs are shared between apps is easy to
see on a machine whose GPUs a discovery script only names.

    spark-submit --conf spark.executor.resource.gpu.amount=1 \\
        --conf spark.task.resource.gpu.amount=1 \\
        --conf spark.executor.resource.gpu.discoveryScript=/opt/gpus.sh \\
        gpu_tasks.py [--tasks 8] [--task-s 2] [--until PATH]

--tasks   tasks per job (each takes its executor's GPU amount of the task's)
--task-s  seconds each task sleeps
--until   run jobs again and again until this file exists (at least one job)

Prints a line per task: ``<app name>: task 3: gpu 2`` (its addresses, comma
separated), then ``<app name>: job 0 done``.
"""

import argparse
import os
import sys
import time

from pyspark import TaskContext
from pyspark.sql import SparkSession


def on_gpu(seconds: float):
    def task(i: int) -> tuple[int, list[str]]:
        time.sleep(seconds)
        gpu = TaskContext.get().resources().get("gpu")
        return i, list(gpu.addresses) if gpu else []

    return task


def main() -> int:
    parser = argparse.ArgumentParser(prog="gpu_tasks.py")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--task-s", type=float, default=2.0)
    parser.add_argument("--until", default=None)
    args = parser.parse_args()

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    name = sc.appName
    job = 0
    while True:
        tasks = sc.parallelize(range(args.tasks), args.tasks).map(on_gpu(args.task_s))
        for i, addresses in tasks.collect():
            print(f"{name}: task {i}: gpu {','.join(addresses)}", flush=True)
        print(f"{name}: job {job} done", flush=True)
        job += 1
        if args.until is None or os.path.exists(args.until):
            break
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
