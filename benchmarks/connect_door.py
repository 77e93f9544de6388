"""The Spark Connect door against a Connect server started by hand, on one real cluster.

    python benchmarks/connect_door.py [--calls 200] [--mb 100] [--ports 47000-47999]

Real parts only: a local standalone cluster from pyspark's Spark (1 worker), ``sessionsched
serve`` on it with ``connect: {port}``, and a Connect server started by hand on the same
cluster (``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer``, the
jar pyspark ships, the same Spark properties as the door's drivers). The client is pyspark's
own (``SparkSession.builder.remote``). Everything started here is stopped by PID on exit.

Figures (printed, one line each, direct then through the door):

1. **session start**: from ``remote(...).create()`` to the first result of
   ``spark.range(1).collect()``, the cluster idle. The direct server is timed the same way
   from its spark-submit: until its port answers, plus the first query. Two JVM starts timed
   one after the other vary by seconds on a loaded machine, so ``--starts`` rounds are taken,
   each starting a new direct server and a new door session, in turns (direct first, then
   the door first); each round's difference is printed and their median. Target: door <=
   direct + 1 s.
2. **per-call overhead**: ``--calls`` small calls (``spark.conf.get``: one ``Config`` RPC the
   driver answers without a Spark job) and ``--calls`` small queries
   (``createDataFrame([(1,)]).collect()``: an ``ExecutePlan`` on a local relation), p50 and p99
   of each, the direct and the door's calls taken in turn (the same load for both); the
   door's overhead is its p50/p99 minus direct's; "paired" is the median of each door call
   less the direct call before it. Target: p50 overhead <= 2 ms. The load average is printed
   beside it.
3. **streaming**: ``--mb`` MB of rows (``range`` with a 100-byte string column) returned as
   Arrow (``toArrow()``), MB/s, the median of 3 each way taken in turn. Target: door >= 80 %
   of direct.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))

from sessionsched.backends import procs  # noqa: E402
from sessionsched.backends.local import LocalCluster  # noqa: E402
from sessionsched.backends.ports import port_picker  # noqa: E402
from sessionsched.backends.spark_home import spark_submit  # noqa: E402
from sessionsched.commands._serverproc import ServerProcess  # noqa: E402

CONF = {"spark.executor.cores": "1", "spark.executor.memory": "1g",
        "spark.driver.memory": "1g", "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1", "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.connect.grpc.maxInboundMessageSize": str(256 * 1024 * 1024)}
ROW_BYTES = 108  # 8-byte id + 100-byte string
STREAMS = 3


def wait_port(port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing answered on port {port} within {timeout_s:g}s")


def remote(port: int, extra: str = ""):
    from pyspark.sql import SparkSession

    return SparkSession.builder.remote(f"sc://127.0.0.1:{port}/{extra}").create()


def first_result(port: int, extra: str = "") -> tuple[object, float]:
    t0 = time.monotonic()
    spark = remote(port, extra)
    spark.range(1).collect()
    return spark, time.monotonic() - t0


def pcts(samples: list[float]) -> tuple[float, float]:
    ms = sorted(x * 1000 for x in samples)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


def per_call(sessions: list, calls: int) -> tuple[list[dict[str, tuple[float, float]]],
                                                   dict[str, float]]:
    """Each figure's p50/p99 for each session (direct, door), their calls taken in turn so
    that both see the same load (the machine is shared); and the median of the door's call
    less the direct call just before it (ms): each call's overhead, paired."""
    out: list[dict[str, tuple[float, float]]] = [{} for _ in sessions]
    paired: dict[str, float] = {}
    for name, call in (("Config", lambda spark: spark.conf.get("spark.app.name")),
                       ("small query", lambda spark: spark.createDataFrame([(1,)], "x int")
                        .collect())):
        for _ in range(10):  # warm up
            for spark in sessions:
                call(spark)
        samples: list[list[float]] = [[] for _ in sessions]
        for _ in range(calls):
            for spark, mine in zip(sessions, samples, strict=True):
                t0 = time.perf_counter()
                call(spark)
                mine.append(time.perf_counter() - t0)
        for figures, mine in zip(out, samples, strict=True):
            figures[name] = pcts(mine)
        paired[name] = statistics.median(1000 * (p - d) for d, p in zip(*samples, strict=True))
    return out, paired


def streaming(spark, mb: int) -> float:
    rows = mb * 1024 * 1024 // ROW_BYTES
    df = spark.range(rows).selectExpr("id", "repeat('x', 100) AS s")
    df.limit(10).toArrow()  # warm up: executors up, plan cached
    t0 = time.monotonic()
    table = df.toArrow()
    took = time.monotonic() - t0
    return table.nbytes / 1024 / 1024 / took


def start_direct(cluster: LocalCluster, port: int, work: Path) -> subprocess.Popen:
    cmd = [spark_submit(), "--master", cluster.master_url, "--class",
           "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1"]
    for k, v in CONF.items():
        cmd += ["--conf", f"{k}={v}"]
    jar = next((Path(spark_submit()).parents[1] / "jars").glob("spark-connect_*.jar"))
    cmd.append(str(jar))
    log = open(work / "direct.log", "ab")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def session_start(cluster: LocalCluster, direct_port: int, door_port: int, extra: str,
                  work: Path, direct_first: bool, started: list) -> tuple:
    """A new direct server (added to ``started``) and a new door session, each timed from its
    own start: (the direct server's process, its session, the door's session, the times)."""
    if not direct_first:
        spark_p, start_p = first_result(door_port, extra)
    t0 = time.monotonic()
    direct = start_direct(cluster, direct_port, work)
    started.append(direct)
    wait_port(direct_port, 300)
    spark_d, _ = first_result(direct_port)
    start_d = time.monotonic() - t0
    if direct_first:
        spark_p, start_p = first_result(door_port, extra)
    return direct, spark_d, spark_p, start_d, start_p


def stop_round(direct: subprocess.Popen, spark_d, spark_p, *_) -> None:
    spark_p.stop()  # the door's app ends
    spark_d.stop()
    procs.stop_group(procs.identify(direct.pid), grace_s=10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--starts", type=int, default=4,
                   help="session start rounds, direct and door first in turns (default 4)")
    p.add_argument("--ports", default=os.environ.get("SESSIONSCHED_TEST_PORTS", "47000-47999"))
    args = p.parse_args()
    low, high = (int(x) for x in args.ports.split("-"))
    port = port_picker(range(low, high + 1))

    work = Path(tempfile.mkdtemp(prefix="connect-bench-"))
    print(f"logs in {work}")
    cluster = LocalCluster(work / "cluster", workers=1, cores=4, memory="6g", port=port(),
                           ui_port=port(), rest_port=port(), start_timeout_s=180,
                           worker_ports=(port(), port()))
    cluster.start()
    server = None
    started: list[subprocess.Popen] = []  # the direct servers
    try:
        door_port, direct_port = port(), port()
        config = {"server": {"state_dir": str(work / "state"), "cycle_ms": 100,
                             "port": port()},
                  "cluster": {"backend": "standalone", "master": cluster.master_url,
                              "master_ui": cluster.master_ui},
                  "connect": {"port": door_port}}
        server = ServerProcess.start(config, work / "server")
        # gRPC metadata keys are lower case: the camel-case ones (dynamic allocation) the door
        # sets itself
        extra = "".join(f";{k}={v}" for k, v in CONF.items() if k == k.lower())

        differences, last = [], None
        for round_ in range(args.starts):
            if last is not None:  # the last round's sessions are the ones measured below
                stop_round(*last)
                direct_port = port()
            last = session_start(cluster, direct_port, door_port, extra, work, round_ % 2 == 0,
                                 started)
            _, spark_d, spark_p, start_d, start_p = last
            differences.append(start_p - start_d)
            print(f"session start (s):      direct {start_d:7.2f}   door {start_p:7.2f}   "
                  f"door - direct {start_p - start_d:+.2f} "
                  f"({'direct' if round_ % 2 == 0 else 'door'} first)")
        print(f"session start, door - direct (s, median of {args.starts}): "
              f"{statistics.median(differences):+.2f} (target <= +1)")
        (calls_d, calls_p), paired = per_call([spark_d, spark_p], args.calls)
        load = os.getloadavg()
        for name in calls_d:
            (d50, d99), (p50, p99) = calls_d[name], calls_p[name]
            print(f"{name:<14} p50/p99 (ms): direct {d50:6.2f}/{d99:6.2f}   door "
                  f"{p50:6.2f}/{p99:6.2f}   overhead {p50 - d50:+.2f}/{p99 - d99:+.2f}, "
                  f"paired {paired[name]:+.2f} (target p50 <= 2; load {load[0]:.1f} "
                  f"{load[1]:.1f} {load[2]:.1f})")
        rates = [[], []]
        for _ in range(STREAMS):  # in turn: a load change between them is not the door's
            for spark, mine in zip((spark_d, spark_p), rates, strict=True):
                mine.append(streaming(spark, args.mb))
        mbs_d, mbs_p = (statistics.median(r) for r in rates)
        print(f"streaming {args.mb} MB x{STREAMS} (MB/s, median): direct {mbs_d:7.1f}   door "
              f"{mbs_p:7.1f}   {100 * mbs_p / mbs_d:.0f} % (target >= 80 %)")
        spark_p.stop()
        spark_d.stop()
    finally:
        for direct in started:
            if direct.poll() is None:
                procs.stop_group(procs.identify(direct.pid), grace_s=10)
        if server is not None:
            server.stop()
        cluster.stop()


if __name__ == "__main__":
    main()
