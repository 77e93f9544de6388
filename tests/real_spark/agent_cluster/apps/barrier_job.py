"""A PySpark app for the gang tests: one barrier stage (``rdd.barrier().mapPartitions``, as
TorchDistributor and distributed XGBoost run) of N tasks that must all run at once: each waits
at ``BarrierTaskContext.barrier()`` for the others.

    barrier_job.py --tasks N

Prints ``BARRIER ran [0, 1, ..., N-1]`` (the partitions that met) and exits 0; when Spark
refuses the stage (not N slots at once, after its max-concurrent-tasks checks), the job's
error ends the driver with a non-zero exit code and Spark's own message in its log.
Barrier stages need dynamic allocation off (Spark's SPARK-24942): launch it static, with
``spark.executor.instances`` N (on standalone, which ignores that property, sessionsched's
launch caps the app with ``spark.cores.max`` N x executor cores).
"""

import argparse

from pyspark import BarrierTaskContext
from pyspark.sql import SparkSession


def meet(partition):
    ctx = BarrierTaskContext.get()
    ctx.barrier()  # returns only once every task of the stage is here
    yield ctx.partitionId()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, required=True)
    args = ap.parse_args()
    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    got = sc.parallelize(range(args.tasks), args.tasks).barrier().mapPartitions(meet).collect()
    print(f"BARRIER ran {sorted(got)}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
