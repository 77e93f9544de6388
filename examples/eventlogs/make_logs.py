"""Writes the event logs of this folder with real Spark (pyspark and Java needed): three small
PySpark apps (examples/apps/sleep_tasks.py) on a local standalone cluster of one worker with
4 cores and 4g, plain spark-submit without a scheduler in front, zstd-compressed logs.

    python examples/eventlogs/make_logs.py OUT_DIR

- ``nightly-etl`` at 0 s: 48 tasks of 4 s on as many 1-core executors as it can get (all 4);
- ``dashboard`` 6 s later: 4 tasks of 1 s on at most 2 executors;
- ``report`` 10 s later: 8 tasks of 2 s on at most 2 executors.
Each runs with dynamic allocation (shuffle tracking: a standalone cluster has no external
shuffle service here), so a scheduler may take executors back from it.

The standalone master gives cores first come first served, so the two small apps wait for the
big one's executors: what the logs show is a ``fifo`` day. docs/operator/simulator.md
("An example from real logs") builds ``day.yaml`` from them and compares ``fifo`` with
``fairshare``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sessionsched.backends.local import ClusterError, LocalCluster
from sessionsched.backends.spark_home import spark_submit

APP = Path(__file__).resolve().parents[1] / "apps" / "sleep_tasks.py"
APPS = (  # (start after the first, name, stages, spark.dynamicAllocation.maxExecutors)
    (0.0, "nightly-etl", "48x4", None),
    (6.0, "dashboard", "4x1", "2"),
    (10.0, "report", "8x2", "2"),
)


def start_cluster(directory: Path, attempts: int = 3) -> LocalCluster:
    """A started cluster; tried again on fresh ports when one was taken meanwhile."""
    for attempt in range(attempts):
        cluster = LocalCluster(directory, workers=1, cores=4, memory="4g")
        try:
            cluster.start()
            return cluster
        except ClusterError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = start_cluster(Path(tmp))
        running: list[subprocess.Popen] = []
        try:
            started = time.monotonic()
            for at, name, stages, max_executors in APPS:
                time.sleep(max(0.0, started + at - time.monotonic()))
                conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": out.as_uri(),
                        "spark.eventLog.compress": "true",
                        "spark.eventLog.compression.codec": "zstd",
                        "spark.eventLog.rolling.enabled": "false",
                        "spark.driver.memory": "512m", "spark.executor.memory": "512m",
                        "spark.executor.cores": "1", "spark.ui.enabled": "false",
                        "spark.dynamicAllocation.enabled": "true",
                        "spark.dynamicAllocation.shuffleTracking.enabled": "true"}
                if max_executors:
                    conf["spark.dynamicAllocation.maxExecutors"] = max_executors
                args = [spark_submit(), "--master", cluster.master_url, "--name", name,
                        *[a for k, v in conf.items() for a in ("--conf", f"{k}={v}")],
                        str(APP), "--stages", stages]
                log = open(Path(tmp) / f"{name}.log", "ab")  # noqa: SIM115 - closed below
                running.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, env=env,
                                                start_new_session=True))
                log.close()
            codes = [p.wait(timeout=600) for p in running]
        finally:
            for p in running:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=30)
            cluster.stop()
    print(f"{out}: exit codes {codes}", file=sys.stderr)
    return 0 if not any(codes) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
