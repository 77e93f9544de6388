"""A stand-in for a Connect session's driver: a ``grpc.aio`` server in a process of its own
that answers ``Config`` with the same bytes and ``ExecutePlan`` with ``streamed`` messages, and
where a real driver writes its address (``<state_dir>/connect/<session id>.port``) its own is
written. The door's relay tests (tests/doors/connect/test_connect_relay.py) and its call benchmark
(benchmarks/connect_door_calls.py) run it, so the door under them is measured and checked
against one driver.

    python -m tests.doors.connect.connect_standin PORT SESSION_ID STREAMED
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sessionsched.backends import procs


@contextmanager
def standin_driver(session_id: str, state_dir: Path, streamed: int = 3) -> Iterator[int]:
    """The stand-in, ready and written where the door looks for the session's driver; yields
    its port, which it bound itself (a port chosen free beforehand may be taken by another
    process before the stand-in binds it: a loaded parallel run refused a call so); stopped
    by PID on exit."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.doors.connect.connect_standin",
                             session_id, str(streamed)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        ready, _, port = proc.stdout.readline().strip().partition(b" ")
        assert ready == b"ready" and int(port) > 0, "the stand-in driver did not start"
        (state_dir / "connect").mkdir(parents=True, exist_ok=True)
        (state_dir / "connect" / f"{session_id}.port").write_text(f"127.0.0.1:{int(port)}")
        yield int(port)
    finally:
        procs.stop_group(procs.identify(proc.pid), grace_s=5)


def config_answer(session_id: str) -> bytes:
    """What the stand-in answers every ``Config`` call with."""
    from pyspark.sql.connect.proto import base_pb2

    return base_pb2.ConfigResponse(
        session_id=session_id, server_side_session_id="stand-in",
        pairs=[base_pb2.KeyValue(key="spark.app.name", value="stand-in")]).SerializeToString()


async def _serve(sid: str, streamed: int) -> None:
    import grpc
    from pyspark.sql.connect.proto import base_pb2

    config = config_answer(sid)

    async def answer_config(request, context):
        return config

    async def execute(request, context):
        for i in range(streamed):
            yield base_pb2.ExecutePlanResponse(session_id=sid,
                                               response_id=f"r{i}").SerializeToString()

    class Handler(grpc.GenericRpcHandler):
        def service(self, details):
            if details.method.endswith("/ExecutePlan"):
                return grpc.unary_stream_rpc_method_handler(execute)
            return grpc.unary_unary_rpc_method_handler(answer_config)

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"ready {port}", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], int(sys.argv[2])))
