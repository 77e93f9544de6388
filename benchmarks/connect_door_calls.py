"""The Connect door's own per-call cost, without Spark: the same ``Config`` call straight to a
driver and through the door, many times, p50/p99 of each and the difference.

    python benchmarks/connect_door_calls.py [--calls 2000] [--ports 47000-47999] [--profile]

The "driver" is a stand-in (a ``grpc.aio`` server in a process of its own that answers every
``Config`` with the same bytes), so the difference is the door's alone: its routing (the
request read, the token, the session's app) and passing the bytes on. The door is the real
one, in ``sessionsched serve`` on the memory backend (the session's app is queued, admitted and
"runs" as any app; its driver's address is the stand-in's, written where a real driver writes
it). The client is a plain gRPC stub sending what pyspark's client sends for
``spark.conf.get``. ``benchmarks/connect_door.py`` measures the same figure against a real
Connect server on a real cluster; this one isolates the door (and runs in seconds).

``--profile``: the server runs under cProfile; its 40 costliest functions by their own time
are printed at the end (the whole server's: the door's calls, cycles, everything).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))

from sessionsched.backends.ports import port_picker  # noqa: E402
from sessionsched.commands._serverproc import ServerProcess  # noqa: E402
from tests.doors.connect.connect_standin import standin_driver  # noqa: E402

CONFIG = "/spark.connect.SparkConnectService/Config"
# the connection string's extra parameters as pyspark sends them (gRPC metadata); the memory
# backend's driver "works" an hour without executors
METADATA = (("user_id", "alice"), ("queue", "default"), ("priority", "5000"),
            ("spark.sessionsched.memory.work", "0"),
            ("spark.sessionsched.memory.startup", "3600"))


def request(session_id: str) -> bytes:
    from pyspark.sql.connect.proto import base_pb2

    r = base_pb2.ConfigRequest(session_id=session_id, client_type="_SPARK_CONNECT_PYTHON",
                               user_context=base_pb2.UserContext(user_id="alice"))
    r.operation.get_with_default.pairs.add(key="spark.app.name", value="x")
    return r.SerializeToString()


def timed(calls, body: bytes, n: int) -> list[list[float]]:
    """Each call ``n`` times, in turn (the machine's load the same for each), after a warm-up."""
    for _ in range(50):
        for call in calls:
            call(body, metadata=METADATA, timeout=60)
    out: list[list[float]] = [[] for _ in calls]
    for _ in range(n):
        for call, samples in zip(calls, out, strict=True):
            t0 = time.perf_counter()
            call(body, metadata=METADATA, timeout=60)
            samples.append(time.perf_counter() - t0)
    return out


def pcts(samples: list[float]) -> tuple[float, float]:
    ms = sorted(x * 1000 for x in samples)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


def profiled(server: ServerProcess, out: Path) -> ServerProcess:
    """``server``'s command again (same config), under cProfile."""
    # uvicorn raises the SIGTERM it caught again once it has shut down: exit then, so that
    # cProfile writes its file
    run = ("import cProfile, signal, sys; from sessionsched.cli import main; "
           "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); "
           f"sys.argv = ['sessionsched', 'serve', '--config', {str(server.config_path)!r}]; "
           f"cProfile.run('main()', {str(out)!r})")
    log = open(server.log_path, "ab")
    proc = subprocess.Popen([sys.executable, "-c", run], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            cwd=server.config_path.parent)
    again = ServerProcess(proc, server.url, server.config_path, server.log_path)
    again.wait_ready(60)
    return again


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--ports", default=os.environ.get("SESSIONSCHED_TEST_PORTS", "47000-47999"))
    p.add_argument("--profile", action="store_true")
    p.add_argument("--client", choices=("stub", "pyspark"), default="stub")
    args = p.parse_args()
    low, high = (int(x) for x in args.ports.split("-"))
    port = port_picker(range(low, high + 1))

    work = Path(tempfile.mkdtemp(prefix="connect-calls-"))
    sid = str(uuid.uuid4())
    up_port, door_port = port(), port()
    state = work / "state"
    with standin_driver(up_port, sid, state):
        config = {"server": {"state_dir": str(state), "cycle_ms": 100, "port": port()},
                  "cluster": {"backend": "memory", "workers": 1, "cores": 4},
                  "connect": {"port": door_port}}
        server = ServerProcess.start(config, work / "server")
        try:
            if args.profile:  # the same server again, under cProfile (it writes at its exit)
                server.stop()
                server = profiled(server, work / "server.prof")
            if args.client == "pyspark":
                d, v = pyspark_calls(up_port, door_port, sid, args.calls)
            else:
                d, v = stub_calls(up_port, door_port, sid, args.calls)
        finally:
            server.stop()
    load = os.getloadavg()
    (d50, d99), (v50, v99) = pcts(d), pcts(v)
    print(f"Config ({args.client}) x{args.calls} p50/p99 (ms): direct {d50:.3f}/{d99:.3f}"
          f"   door {v50:.3f}/{v99:.3f}   overhead {v50 - d50:+.3f}/{v99 - d99:+.3f}   "
          f"(load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; target p50 <= 2)")
    if args.profile:
        import pstats

        pstats.Stats(str(work / "server.prof")).sort_stats("tottime").print_stats(40)


def stub_calls(up_port: int, door_port: int, sid: str, n: int) -> list[list[float]]:
    import grpc

    body = request(sid)
    with grpc.insecure_channel(f"127.0.0.1:{up_port}") as direct, \
                grpc.insecure_channel(f"127.0.0.1:{door_port}") as door:
            via_door = door.unary_unary(CONFIG)
            via_door(body, metadata=METADATA, timeout=120)  # the session opened, its app up
            return timed((direct.unary_unary(CONFIG), via_door), body, n)


def pyspark_calls(up_port: int, door_port: int, sid: str, n: int) -> list[list[float]]:
    """pyspark's own client (``spark.conf.get``), the session id the stand-in answers for."""
    from pyspark.sql import SparkSession

    extra = "".join(f";{k}={v}" for k, v in METADATA)
    sessions = [SparkSession.builder.remote(f"sc://127.0.0.1:{port}/{extra};session_id={sid}")
                .create() for port in (up_port, door_port)]
    sessions[1].conf.get("spark.app.name")  # the session opened, its app up
    out: list[list[float]] = [[], []]
    for i in range(50 + n):
        for spark, samples in zip(sessions, out, strict=True):
            t0 = time.perf_counter()
            spark.conf.get("spark.app.name")
            if i >= 50:  # after a warm-up
                samples.append(time.perf_counter() - t0)
    return out


if __name__ == "__main__":
    main()
