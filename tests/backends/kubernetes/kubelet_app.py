"""The driver of the fake-kubelet test: asks for 3 executors, then holds them to 1 with the
agent's SparkControl (cap, then kill of the surplus) and reports each step on stdout."""

import time

from pyspark.sql import SparkSession

from sessionsched.agent.spark_control import SparkControl


def wait(cond, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
ctl = SparkControl(sc)
print("PROBE", ctl.probe.control, flush=True)
wait(lambda: len(ctl.executors()) == 3, 240, "3 executors")
print("EXECUTORS", len(ctl.executors()), flush=True)
ctl.set_cap(1)
print("TARGET", ctl.target(), flush=True)
ids = sorted(e.executor_id for e in ctl.executors())
print("KILLED", ",".join(sorted(ctl.kill(ids[1:], force=True))), flush=True)
wait(lambda: len(ctl.executors()) == 1, 60, "1 executor")
print("AFTER", len(ctl.executors()), flush=True)
assert sc.parallelize(range(100), 2).sum() == 4950  # the one left still runs tasks
print("SUM ok", flush=True)
spark.stop()
