"""A Spark Connect session's driver: the app the Connect door (``doors/connect``) submits for
a new session, launched by the backend like any Python app (through the agent's bootstrap,
with dynamic allocation), so it waits in its queue, reports to the scheduler and gives
executors back when idle.

It starts Spark's Connect service inside its own SparkContext (what Spark's
``SparkConnectServer`` main class does), bound to a port the OS picks on
``spark.connect.grpc.binding.address``, and writes ``HOST:PORT`` to ``--port-file`` (written
whole, then renamed) for the door to forward to. Then it watches the service's sessions
every ``POLL_S``:

- once a session has been opened and none is left (the client's ``spark.stop()`` sends
  ``ReleaseSession``), it stops Spark and exits 0: the app ends FINISHED;
- when no session has had a call for ``--idle-timeout-s`` (or none was opened in that time
  since the service started), likewise (its log says so).

Usage: ``python -m sessionsched.drivers.connect_server --port-file PATH [--idle-timeout-s S]``
(through spark-submit: the door's argv).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

POLL_S = 0.5
SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService$"


def _service(jvm):
    """The Scala object ``SparkConnectService`` (its ``localPort`` has no static forwarder)."""
    return jvm.java.lang.Class.forName(SERVICE).getField("MODULE$").get(None)


def _write_port(path: str, address: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(address)
    os.replace(tmp, path)


def _idle_ms(manager, now_ms: int) -> int | None:
    """Milliseconds since the last call of any live session; None with none live."""
    infos = manager.listActiveSessions()
    n = infos.size()
    if n == 0:
        return None
    it = infos.iterator()
    last = max(it.next().lastAccessTimeMs() for _ in range(n))
    return now_ms - last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sessionsched.drivers.connect_server")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--idle-timeout-s", type=float, default=3600.0)
    args = parser.parse_args(argv)

    # A classic SparkSession here, whatever the environment inherited says: pyspark's Connect
    # client marks its process (and so the children of a process that used it) as remote.
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        os.environ.pop(name, None)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    jvm = spark.sparkContext._jvm
    jvm.org.apache.spark.sql.connect.service.SparkConnectService.start(
        spark.sparkContext._jsc.sc())
    service = _service(jvm)
    host = spark.conf.get("spark.connect.grpc.binding.address", "127.0.0.1") or "127.0.0.1"
    _write_port(args.port_file, f"{host}:{service.localPort()}")
    print(f"Spark Connect service on {host}:{service.localPort()}", flush=True)
    manager = service.sessionManager()
    seen = False
    reason = ""
    started_ms = int(time.time() * 1000)
    while True:
        time.sleep(POLL_S)
        now_ms = int(time.time() * 1000)
        idle = _idle_ms(manager, now_ms)
        if idle is None:
            if seen:
                reason = "its last session was released"
                break
            idle = now_ms - started_ms
        else:
            seen = True
        if idle > args.idle_timeout_s * 1000:
            reason = f"no call for {args.idle_timeout_s:g}s (connect.idle_timeout_s)"
            break
    print(f"stopping the Connect session's driver: {reason}", flush=True)
    # the service's gRPC threads would keep the JVM (spark-submit) alive after Spark stops
    scs = jvm.org.apache.spark.sql.connect.service.SparkConnectService
    scs.stop(getattr(scs, "stop$default$1")(), getattr(scs, "stop$default$2")())
    spark.stop()
    # and a call that came while the service stopped (the client's ReleaseExecute, sent beside
    # its ReleaseSession) starts the session manager's periodic checks again, a thread that
    # also keeps the JVM alive: the JVM exits here, its shutdown hooks run
    try:
        jvm.java.lang.System.exit(0)
    except Exception:  # noqa: BLE001 - py4j's: the JVM went away mid-call, as asked
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
