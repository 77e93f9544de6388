"""A small PySpark app whose work is sleeping: it behaves the same on a 2-core laptop as on a
big cluster, so queueing and executor sharing are easy to see (the demo and tests use it).

    spark-submit sleep_tasks.py [--startup-s S] [--stages 8x2,4x1] [--exit-code N]

--startup-s   driver pre-processing before any Spark job (the StateAware "starting" phase)
--stages      jobs to run one after another, TASKSxSECONDS each (tasks sleep that long)
--exit-code   exit with this code after the work (non-zero: the app FAILED)
"""

import argparse
import sys
import time

from pyspark.sql import SparkSession


def stage_spec(text: str) -> list[tuple[int, float]]:
    stages = []
    for part in text.split(","):
        tasks, _, seconds = part.strip().partition("x")
        stages.append((int(tasks), float(seconds)))
    return stages


def main() -> int:
    parser = argparse.ArgumentParser(prog="sleep_tasks.py")
    parser.add_argument("--startup-s", type=float, default=0.0)
    parser.add_argument("--stages", type=stage_spec, default=stage_spec("4x2"))
    parser.add_argument("--exit-code", type=int, default=0)
    args = parser.parse_args()

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    name = sc.appName
    time.sleep(args.startup_s)
    for i, (tasks, seconds) in enumerate(args.stages):
        started = time.monotonic()
        done = (
            sc.parallelize(range(tasks), tasks)
            .map(lambda x, s=seconds: (time.sleep(s), x)[1])
            .count()
        )
        took = time.monotonic() - started
        print(f"{name}: stage {i}: {done} tasks of {seconds:g}s in {took:.1f}s", flush=True)
    spark.stop()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
