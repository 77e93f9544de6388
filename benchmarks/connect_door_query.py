"""Where a small query's time goes through the Connect door: its calls one by one, straight to
a Connect server and through the door, and the door's CPU per query.

    python benchmarks/connect_door_query.py [--queries 200] [--ports 47000-47999]

Real parts: a Spark Connect server in local mode (``spark-submit --master local[2]
--class SparkConnectServer``, the jar pyspark ships), the real door in ``sessionsched serve``
on the memory backend (the session's app "runs" as any app; its driver's address is the
Connect server's, written where a real driver writes it), pyspark's own client. The small query
is ``benchmarks/connect_door.py``'s (``createDataFrame([(1,)], "x int").collect()``), run
``--queries`` times straight and through the door in turn (the same load for both).

Printed: the query's p50 each way; for each RPC the client made (its stub's calls timed:
``AnalyzePlan``, ``Config``, ``ExecutePlan`` and when each of its messages arrived,
``ReleaseExecute`` sent by the client's reattachable execution from a thread of its own after
each message), how many per query and their p50 each way; the scheduler process's CPU per
query (all its threads, less what it spends idle over as long: its cycles) and its main
thread's alone (the event loop the door runs on). CPU seconds hold up under a loaded machine
better than latencies do. Everything started here is stopped by PID on exit.
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
import uuid
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))

from sessionsched.backends import procs  # noqa: E402
from sessionsched.backends.ports import port_picker  # noqa: E402
from sessionsched.backends.spark_home import spark_submit  # noqa: E402
from sessionsched.commands._serverproc import ServerProcess  # noqa: E402

TIMED = ("AnalyzePlan", "Config", "ExecutePlan", "ReleaseExecute", "ReattachExecute")
STREAMS = ("ExecutePlan", "ReattachExecute")
# the memory backend's driver "works" an hour without executors
MEMORY = ";user_id=alice;spark.sessionsched.memory.work=0;spark.sessionsched.memory.startup=3600"


def cpu_s(pid: int, thread: int | None = None) -> float:
    """User + system CPU seconds of a process (or one of its threads)."""
    path = f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_stub(spark, log: dict[str, list]) -> None:
    """Each call of the session's stub logged: (seconds to its answer or last message so far,
    the seconds at which each message came)."""
    stub = spark.client._stub
    for name in TIMED:
        setattr(stub, name, _timed(getattr(stub, name), name, log))


def _timed(original, name: str, log: dict[str, list]):
    def call(*args, **kwargs):
        t0 = time.perf_counter()
        out = original(*args, **kwargs)
        if name not in STREAMS:
            log[name].append([time.perf_counter() - t0, []])
            return out
        row: list = [0.0, []]
        log[name].append(row)

        def messages():
            for m in out:  # the client stops reading at the result's last message
                row[0] = time.perf_counter() - t0
                row[1].append(row[0])
                yield m
        return messages()
    return call


def wait_port(port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing answered on port {port} within {timeout_s:g}s")


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--ports", default=os.environ.get("SESSIONSCHED_TEST_PORTS", "47000-47999"))
    args = p.parse_args()
    low, high = (int(x) for x in args.ports.split("-"))
    port = port_picker(range(low, high + 1))

    work = Path(tempfile.mkdtemp(prefix="connect-query-"))
    up, door_port, sid = port(), port(), str(uuid.uuid4())
    jar = next((Path(spark_submit()).parents[1] / "jars").glob("spark-connect_*.jar"))
    with open(work / "connect-server.log", "wb") as out:
        jvm = subprocess.Popen(
            [spark_submit(), "--master", "local[2]", "--class",
             "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--conf", f"spark.connect.grpc.binding.port={up}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
             str(jar)], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    server = None
    try:
        state = work / "state"
        (state / "connect").mkdir(parents=True)
        (state / "connect" / f"{sid}.port").write_text(f"127.0.0.1:{up}")
        server = ServerProcess.start(
            {"server": {"state_dir": str(state), "cycle_ms": 100, "port": port()},
             "cluster": {"backend": "memory", "workers": 1, "cores": 4},
             "connect": {"port": door_port}}, work / "server")
        wait_port(up, 300)
        from pyspark.sql import SparkSession

        direct = SparkSession.builder.remote(f"sc://127.0.0.1:{up}/;user_id=alice").create()
        door = SparkSession.builder.remote(
            f"sc://127.0.0.1:{door_port}/{MEMORY};session_id={sid}").create()
        logs: dict[str, dict[str, list]] = {"direct": defaultdict(list), "door": defaultdict(list)}
        timed_stub(direct, logs["direct"])
        timed_stub(door, logs["door"])

        def query(spark):
            return spark.createDataFrame([(1,)], "x int").collect()

        for _ in range(20):  # warm up (the door's session opened, its app up)
            query(direct), query(door)
        time.sleep(1)
        for log in logs.values():
            log.clear()
        pid = server.proc.pid
        idle0, t0 = cpu_s(pid), time.monotonic()
        time.sleep(5)
        idle_per_s = (cpu_s(pid) - idle0) / (time.monotonic() - t0)
        cpu0, main0, t0 = cpu_s(pid), cpu_s(pid, pid), time.monotonic()
        took: dict[str, list[float]] = {"direct": [], "door": []}
        for _ in range(args.queries):
            for who, spark in (("direct", direct), ("door", door)):
                t = time.perf_counter()
                query(spark)
                took[who].append(time.perf_counter() - t)
        time.sleep(1)  # the last ReleaseExecute calls answered
        cpu = cpu_s(pid) - cpu0 - idle_per_s * (time.monotonic() - t0)
        main = cpu_s(pid, pid) - main0
        load = os.getloadavg()
        n = args.queries
        print(f"small query x{n} p50 (ms): direct {ms(took['direct']):.2f}   door "
              f"{ms(took['door']):.2f}   (load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
        for name in TIMED:
            rows = {who: logs[who].get(name, []) for who in logs}
            if not any(rows.values()):
                continue
            line = f"  {name:<15}"
            for who, calls in rows.items():
                if not calls:
                    continue
                line += f"  {who} {len(calls) / n:4.1f}/query p50 {ms([c[0] for c in calls]):6.2f}"
                if name in STREAMS:
                    line += f" ({statistics.median(len(c[1]) for c in calls):.0f} messages)"
            print(line)
        print(f"door CPU per query (ms): scheduler process {cpu / n * 1000:.2f} (less its idle "
              f"{idle_per_s * 1000:.0f} ms/s), its event loop's thread {main / n * 1000:.2f}")
        direct.stop()
        door.stop()
    finally:
        if server is not None:
            server.stop()
        procs.stop_group(procs.identify(jvm.pid), grace_s=10)


if __name__ == "__main__":
    main()
