"""A notebook's cells, run as a script: ``notebook_session.py SERVER QUEUE``.

Opens a session (waits for admission, progress on stderr), runs a job, sits idle until Spark's
idle timeout has given every executor back and a line arrives on stdin, runs another job, and
stops. Prints ``STEP name``
lines with the app id and executor counts the driver sees, for the test to follow.
"""

import sys
import time

import sessionsched


def executors(spark):
    return len(spark.sessionsched.agent.control.executors())


def step(name, **kv):
    print("STEP", name, " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def job(spark, tasks, seconds):
    sc = spark.sparkContext
    return sc.parallelize(range(tasks), tasks).map(lambda x: (time.sleep(seconds), x)[1]).sum()


def main(server, queue):
    spark = sessionsched.session(
        "notebook", queue=queue, priority=5000, server=server,
        conf={"spark.executor.cores": "1", "spark.executor.memory": "512m",
              "spark.driver.host": "127.0.0.1", "spark.ui.enabled": "false",
              "spark.dynamicAllocation.executorIdleTimeout": "3s"},
    )
    step("admitted", app=spark.sessionsched.app_id, master=spark.sparkContext.master)
    step("job1", result=job(spark, 3, 2))
    deadline = time.monotonic() + 270  # 90 s on a quiet machine, times tests.sparkcluster.SLACK
    while executors(spark) and time.monotonic() < deadline:
        time.sleep(0.2)
    step("idle", executors=executors(spark))
    sys.stdin.readline()  # the user comes back
    step("job2", result=job(spark, 2, 2))
    spark.stop()
    step("stopped")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
