"""Driver agents at scale: N agents heartbeating at 1 Hz, plus submissions and status reads at
a steady rate, against a real ``sessionsched serve``; prints throughput, p50/p99 latencies and
errors per kind of request, and what the load generator itself cost.

    .venv/bin/python benchmarks/agent_load.py [--agents 1000] [--submit-hz 50]
        [--status-hz 50] [--duration 60] [--warmup 10]

What runs (127.0.0.1; the server stopped by its PID at the end, even on failure):
- ``sessionsched serve`` in its own process on the memory backend (no Spark: the figures are
  the service's own), real uvicorn, real SQLite store. Its memory cluster has one 1-core
  worker, so one app runs and every other waits in its queue: the agents' apps are booked
  (a heartbeat for an unknown app is a 404), and the submissions keep changing the books.
- this process: the load, open loop on asyncio (uvloop if installed) over raw keep-alive
  HTTP/1.1 connections. Each agent has its own connection and heartbeats once a second at
  its own phase (demand changes every ``DEMAND_EVERY`` beats, as a job's stages come and
  go); submissions (Spark REST creates) and status reads (``GET /api/v1/apps/ID`` of a
  random agent's app) each go out on a schedule over a pool of connections. A request's
  latency is counted from when it was *due* (not when it could be sent), so a server that
  falls behind is not hidden by a generator that waits for it (coordinated omission). The
  generator reports its own CPU use and how late it sent requests: if it is the bottleneck,
  it says so.

Before the measured ``--duration``, the agents' apps are submitted and ``--warmup`` seconds
of the same load run unmeasured. Ports: ``$SESSIONSCHED_TEST_PORTS`` (``LOW-HIGH``), else
16000-16999.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.backends.local import free_port_in  # noqa: E402
from sessionsched.commands._serverproc import ServerProcess  # noqa: E402

try:  # uvloop when installed (uvicorn[standard] brings it): a cheaper load generator
    from uvloop import run as run_loop
except ImportError:
    run_loop = asyncio.run

DEMAND_EVERY = 10  # an agent's demand changes every this many heartbeats
POOL = 16  # connections for submissions, and as many for status reads
ANSWER_TIMEOUT_S = 30.0  # a request not answered by then counts as an error


def port_range() -> range:
    low, _, high = os.environ.get("SESSIONSCHED_TEST_PORTS", "16000-16999").partition("-")
    return range(int(low), int(high) + 1)


def server_config(state_dir: Path, port: int) -> dict:
    return {
        "server": {"state_dir": str(state_dir), "port": port, "cycle_ms": 200,
                   "retained_ended_apps": 100},
        "cluster": {"backend": "memory", "workers": 1, "cores": 1, "memory": "4g",
                    "work_s": 3600},
        "queues": [{"name": "root", "queues": [
            {"name": "agents", "admission": "stateaware"},
            {"name": "incoming", "admission": "stateaware"},
        ]}],
        "defaults": {"queue": "root.incoming"},
    }


def create_body(i: int, queue: str) -> bytes:
    return json.dumps({
        "action": "CreateSubmissionRequest", "appResource": "file:/tmp/bench.jar",
        "mainClass": "Bench", "clientSparkVersion": "4.0.1", "environmentVariables": {},
        "appArgs": [str(i)],
        "sparkProperties": {"spark.app.name": f"load-{i}", "spark.submit.deployMode": "cluster",
                            "spark.sessionsched.queue": queue},
    }).encode()


def post(path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


class Conn:
    """One keep-alive HTTP/1.1 connection; ``ask`` sends a request, returns (status, body)."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def ask(self, raw: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            self.writer.write(raw)
            status = await self.reader.readline()
            length = 0
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await self.reader.readexactly(length)
            return int(status.split()[1]), body
        except (OSError, asyncio.IncompleteReadError, IndexError, ValueError):
            self.close()
            raise

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Kind:
    """The figures of one kind of request."""

    latencies: list[float] = field(default_factory=list)  # from when it was due
    late: list[float] = field(default_factory=list)  # how late the generator sent it
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


class Load:
    def __init__(self, port: int, app_ids: list[str], submit_hz: float, status_hz: float):
        self.port = port
        self.app_ids = app_ids
        self.submit_hz = submit_hz
        self.status_hz = status_hz
        self.kinds = {k: Kind() for k in ("heartbeat", "submit", "status")}
        self.measuring = False
        self.submitted = 0

    async def _one(self, kind: str, conn: Conn, raw: bytes, due: float, ok: int = 200) -> None:
        sent = time.perf_counter()
        try:
            status, body = await asyncio.wait_for(conn.ask(raw), ANSWER_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - counted, never raised: the load goes on
            conn.close()
            if self.measuring:
                self.kinds[kind].error(type(e).__name__)
            return
        if not self.measuring:
            return
        k = self.kinds[kind]
        k.latencies.append(time.perf_counter() - due)
        k.late.append(sent - due)
        if status != ok:
            k.error(f"HTTP {status}")
        elif kind == "submit" and b'"success" : true' not in body:
            k.error("not accepted")

    async def agent(self, app_id: str, phase_s: float, until: float) -> None:
        conn = Conn(self.port)
        due = time.perf_counter() + phase_s
        beat = random.randrange(DEMAND_EVERY)
        while due < until:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            beat += 1
            body = json.dumps({"app_id": app_id, "demand": (beat // DEMAND_EVERY) % 4,
                               "executors": [], "control": "full"}).encode()
            await self._one("heartbeat", conn, post("/api/v1/agent/heartbeat", body), due)
            due += 1.0
        conn.close()

    async def paced(self, kind: str, hz: float, until: float) -> None:
        """``hz`` requests a second, each on the next free connection of a pool (a request
        that finds none free waits for one: its latency counts from when it was due)."""
        free: asyncio.Queue[Conn] = asyncio.Queue()
        for _ in range(POOL):
            free.put_nowait(Conn(self.port))
        tasks = set()
        due = time.perf_counter()
        while due < until:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            if kind == "submit":
                self.submitted += 1
                raw = post("/v1/submissions/create", create_body(self.submitted, "incoming"))
                ok = 200
            else:
                raw, ok = get(f"/api/v1/apps/{random.choice(self.app_ids)}"), 200
            task = asyncio.create_task(self._pooled(kind, free, raw, due, ok))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            due += 1.0 / hz
        await asyncio.gather(*tasks)
        while not free.empty():
            free.get_nowait().close()

    async def _pooled(self, kind: str, free: asyncio.Queue, raw: bytes, due: float,
                      ok: int) -> None:
        conn = await free.get()
        try:
            await self._one(kind, conn, raw, due, ok)
        finally:
            free.put_nowait(conn)

    async def run(self, warmup_s: float, duration_s: float) -> float:
        start = time.perf_counter()
        until = start + warmup_s + duration_s
        n = len(self.app_ids)
        jobs = [self.agent(a, i / n, until) for i, a in enumerate(self.app_ids)]
        if self.submit_hz > 0:
            jobs.append(self.paced("submit", self.submit_hz, until))
        if self.status_hz > 0:
            jobs.append(self.paced("status", self.status_hz, until))

        async def measure_after_warmup() -> None:
            await asyncio.sleep(warmup_s)
            self.measuring = True

        jobs.append(measure_after_warmup())
        await asyncio.gather(*jobs)
        return time.perf_counter() - start - warmup_s


async def submit_apps(port: int, n: int) -> list[str]:
    """The agents' apps, submitted over 16 connections; their ids."""
    ids: list[str] = []
    todo = list(range(n))

    async def worker() -> None:
        conn = Conn(port)
        while todo:
            i = todo.pop()
            status, body = await conn.ask(post("/v1/submissions/create",
                                               create_body(100_000 + i, "agents")))
            if status != 200:
                raise RuntimeError(f"submitting the agents' apps: HTTP {status}: {body[:200]!r}")
            ids.append(json.loads(body)["submissionId"])
        conn.close()

    await asyncio.gather(*(worker() for _ in range(16)))
    return ids


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--submit-hz", type=float, default=50.0)
    ap.add_argument("--status-hz", type=float, default=50.0)
    ap.add_argument("--duration", type=float, default=60.0, help="measured seconds")
    ap.add_argument("--warmup", type=float, default=10.0, help="unmeasured seconds first")
    ap.add_argument("--port", type=int, default=None,
                    help="load a server already listening on this 127.0.0.1 port (started by "
                         "you with this script's queues: agents, incoming) instead of one of "
                         "its own, e.g. under a profiler")
    args = ap.parse_args()
    # One connection per agent, here and in the server (a child: it inherits the limit).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.agents + 4 * POOL + 256
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            sys.exit(f"agent_load: {args.agents} agents need {need} open files; the limit is "
                     f"{hard} (raise it with ulimit -n)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    with tempfile.TemporaryDirectory(prefix="agent-load-") as tmp:
        port = args.port or free_port_in(port_range())
        server = (None if args.port else
                  ServerProcess.start(server_config(Path(tmp) / "state", port), Path(tmp)))
        try:
            ids = run_loop(submit_apps(port, args.agents))
            load = Load(port, ids, args.submit_hz, args.status_hz)
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)
            elapsed = run_loop(load.run(args.warmup, args.duration))
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            server_cpu = _cpu_s(server.proc.pid) if server else float("nan")
        finally:
            if server is not None:
                server.stop()
    gen_cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    print(f"{args.agents} agents at 1 Hz, {args.submit_hz:g} submissions/s, {args.status_hz:g} "
          f"status reads/s; {elapsed:.0f} s measured after {args.warmup:g} s warm-up; "
          f"memory backend, SQLite; {os.cpu_count()} CPUs")
    print(f"{'request':<10} {'done/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'sent late p99 ms':>17}  errors")
    for name, k in load.kinds.items():
        rate = len(k.latencies) / elapsed
        errors = ", ".join(f"{w}: {c}" for w, c in sorted(k.errors.items())) or "0"
        print(f"{name:<10} {rate:8.1f} {pct(k.latencies, 50) * 1e3:8.1f} "
              f"{pct(k.latencies, 99) * 1e3:8.1f} {max(k.latencies, default=0) * 1e3:8.1f} "
              f"{pct(k.late, 99) * 1e3:17.1f}  {errors}")
    total = args.warmup + elapsed
    print(f"load generator: {gen_cpu / total * 100:.0f}% of one CPU; "
          f"server (whole run, with the apps' submission): {server_cpu:.0f} CPU-s")
    return 0


def _cpu_s(pid: int) -> float:
    """CPU seconds the process has used so far (user + system), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    sys.exit(main())
