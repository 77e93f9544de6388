"""Driver agents at scale: N agents, plus submissions and status reads at a steady rate,
against a real ``sessionsched serve``; prints throughput, p50/p99 latencies and errors per kind
of request, whether every agent's last report is on the books, and what the load generator
itself cost.

    .venv/bin/python benchmarks/agent_load.py [--agents 300,1000] [--protocol change|beat]
        [--keepalive 10] [--submit-hz 10] [--status-hz 10] [--duration 60] [--warmup 10]

``--protocol change`` (the default; docs/design/agent-protocol.md): each agent looks at its facts
once a second and reports (``/api/v1/agent/heartbeat``) only when they changed or a keep-alive is
due, and keeps one watch (``/api/v1/agent/watch``) open on a second connection, asked again as
soon as it is answered. ``beat``: the old protocol, a heartbeat every second. ``--agents``
takes a comma-separated list: one run, on a server of its own, per count.

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

from sessionsched.backends.ports import free_port_in  # noqa: E402
from sessionsched.commands._serverproc import ServerProcess  # noqa: E402

try:  # uvloop when installed (uvicorn[standard] brings it): a cheaper load generator
    from uvloop import run as run_loop
except ImportError:
    run_loop = asyncio.run

DEMAND_EVERY = 10  # an agent's demand changes every this many heartbeats
POOL = 16  # connections for submissions, and as many for status reads
ANSWER_TIMEOUT_S = 30.0  # a request not answered by then counts as an error
REPORT = "/api/v1/agent/heartbeat"
WATCH = "/api/v1/agent/watch"


def port_range() -> range:
    low, _, high = os.environ.get("SESSIONSCHED_TEST_PORTS", "16000-16999").partition("-")
    return range(int(low), int(high) + 1)


def server_config(state_dir: Path, port: int, keepalive_s: float) -> dict:
    return {
        "server": {"state_dir": str(state_dir), "port": port, "cycle_ms": 200,
                   "retained_ended_apps": 100, "agent_keepalive_s": keepalive_s},
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
        fresh = self.writer is None
        if fresh:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            self.writer.write(raw)
            status = await self.reader.readline()
            if not status and not fresh:
                # The server closed the connection while it was idle (uvicorn's keep-alive
                # timeout: a change-driven agent can be quiet for longer): a new one, as any
                # HTTP client does.
                self.close()
                return await self.ask(raw)
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
    def __init__(self, port: int, app_ids: list[str], submit_hz: float, status_hz: float,
                 protocol: str, keepalive_s: float):
        self.port = port
        self.app_ids = app_ids
        self.submit_hz = submit_hz
        self.status_hz = status_hz
        self.protocol = protocol
        self.keepalive_s = keepalive_s
        names = ("report", "watch") if protocol == "change" else ("heartbeat",)
        self.kinds = {k: Kind() for k in (*names, "submit", "status")}
        self.measuring = False
        self.submitted = 0
        self.reported: dict[str, int] = {}  # app -> the last demand the server took

    async def _one(self, kind: str, conn: Conn, raw: bytes, due: float, ok: int = 200
                   ) -> bytes | None:
        """Sends one request; its answer's body when it was ``ok``."""
        sent = time.perf_counter()
        try:
            status, body = await asyncio.wait_for(conn.ask(raw),
                                                  ANSWER_TIMEOUT_S + self.keepalive_s)
        except Exception as e:  # noqa: BLE001 - counted, never raised: the load goes on
            conn.close()
            if self.measuring:
                self.kinds[kind].error(type(e).__name__)
            return None
        if not self.measuring:
            return body if status == ok else None
        k = self.kinds[kind]
        k.latencies.append(time.perf_counter() - due)
        k.late.append(sent - due)
        if status != ok:
            k.error(f"HTTP {status}")
        elif kind == "submit" and b'"success" : true' not in body:
            k.error("not accepted")
        return body if status == ok else None

    async def agent(self, app_id: str, phase_s: float, until: float) -> None:
        """One agent: it looks at its facts once a second; ``beat`` sends them every time,
        ``change`` when they changed or a keep-alive is due, and watches."""
        conn = Conn(self.port)
        watching = (asyncio.create_task(self.watch(app_id, until))
                    if self.protocol == "change" else None)
        due = time.perf_counter() + phase_s
        beat = random.randrange(DEMAND_EVERY)
        sent: int | None = None
        sent_at = -1e9
        kind = "report" if watching else "heartbeat"
        while due < until:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            beat += 1
            demand = (beat // DEMAND_EVERY) % 4
            if not watching or demand != sent or due - sent_at >= self.keepalive_s:
                body = json.dumps({"app_id": app_id, "demand": demand, "executors": [],
                                   "control": "full"}).encode()
                if await self._one(kind, conn, post(REPORT, body), due) is not None:
                    sent, sent_at = demand, due
                    self.reported[app_id] = demand
            due += 1.0
        conn.close()
        if watching:
            watching.cancel()

    async def watch(self, app_id: str, until: float) -> None:
        """The agent's watch: one request held open, asked again when answered (its latency
        is how long it was held: until a change, or the keep-alive)."""
        conn = Conn(self.port)
        version = 0
        # Drivers start at different times: so do their watches (the server's jitter spreads
        # watches that did begin together, but only over a few keep-alives).
        await asyncio.sleep(random.uniform(0.0, self.keepalive_s))
        try:
            while time.perf_counter() < until:
                body = json.dumps({"app_id": app_id, "version": version,
                                   "wait_s": self.keepalive_s}).encode()
                answer = await self._one("watch", conn, post(WATCH, body), time.perf_counter())
                if answer is None:
                    await asyncio.sleep(1.0)
                    continue
                version = json.loads(answer)["version"]
        finally:
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


async def books(port: int, app_ids: list[str]) -> dict[str, int]:
    """Each app's demand as the server's books have it (``GET /api/v1/apps/ID``)."""
    out: dict[str, int] = {}
    todo = list(app_ids)

    async def worker() -> None:
        conn = Conn(port)
        while todo:
            app_id = todo.pop()
            status, body = await conn.ask(get(f"/api/v1/apps/{app_id}"))
            if status == 200:
                out[app_id] = json.loads(body).get("demand")
        conn.close()

    await asyncio.gather(*(worker() for _ in range(POOL)))
    return out


def lost_reports(port: int, reported: dict[str, int], cycle_s: float) -> int:
    """Apps whose last report is not on the books a few cycles after the load stopped."""
    deadline = time.monotonic() + 20 * cycle_s
    while True:
        seen = run_loop(books(port, list(reported)))
        lost = sum(1 for a, d in reported.items() if seen.get(a) != d)
        if lost == 0 or time.monotonic() > deadline:
            return lost
        time.sleep(cycle_s)


def one_run(args, agents: int) -> None:
    with tempfile.TemporaryDirectory(prefix="agent-load-") as tmp:
        port = args.port or free_port_in(port_range())
        config = server_config(Path(tmp) / "state", port, args.keepalive)
        server = None if args.port else ServerProcess.start(config, Path(tmp))
        try:
            ids = run_loop(submit_apps(port, agents))
            load = Load(port, ids, args.submit_hz, args.status_hz, args.protocol,
                        args.keepalive)
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)
            server_cpu0 = _cpu_s(server.proc.pid) if server else float("nan")
            elapsed = run_loop(load.run(args.warmup, args.duration))
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            server_cpu = (_cpu_s(server.proc.pid) if server else float("nan")) - server_cpu0
            lost = lost_reports(port, load.reported, config["server"]["cycle_ms"] / 1000)
        finally:
            if server is not None:
                server.stop()
    gen_cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    how = (f"change-driven (keep-alive {args.keepalive:g} s, one watch each)"
           if args.protocol == "change" else "heartbeats at 1 Hz (the old protocol)")
    print(f"\n{agents} agents, {how}; {args.submit_hz:g} submissions/s, {args.status_hz:g} "
          f"status reads/s; {elapsed:.0f} s measured after {args.warmup:g} s warm-up; "
          f"memory backend, SQLite; {os.cpu_count()} CPUs; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'request':<10} {'done/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'sent late p99 ms':>17}  errors")
    for name, k in load.kinds.items():
        rate = len(k.latencies) / elapsed
        errors = ", ".join(f"{w}: {c}" for w, c in sorted(k.errors.items())) or "0"
        print(f"{name:<10} {rate:8.1f} {pct(k.latencies, 50) * 1e3:8.1f} "
              f"{pct(k.latencies, 99) * 1e3:8.1f} {max(k.latencies, default=0) * 1e3:8.1f} "
              f"{pct(k.late, 99) * 1e3:17.1f}  {errors}")
    if args.protocol == "change":
        print("(watch: how long each was held -- until its app's answer changed, or the "
              "keep-alive)")
    total = args.warmup + elapsed
    print(f"last reports not on the books: {lost} of {len(load.reported)}")
    print(f"server: {server_cpu / total * 100:.0f}% of one CPU over the load "
          f"({server_cpu:.0f} CPU-s); load generator (this process, apart): "
          f"{gen_cpu / total * 100:.0f}% of one CPU")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", default="300,1000",
                    help="agent counts, comma-separated: one run each")
    ap.add_argument("--protocol", choices=("change", "beat"), default="change")
    ap.add_argument("--keepalive", type=float, default=10.0,
                    help="the server's agent_keepalive_s (change-driven agents)")
    ap.add_argument("--submit-hz", type=float, default=10.0)
    ap.add_argument("--status-hz", type=float, default=10.0)
    ap.add_argument("--duration", type=float, default=60.0, help="measured seconds")
    ap.add_argument("--warmup", type=float, default=10.0, help="unmeasured seconds first")
    ap.add_argument("--port", type=int, default=None,
                    help="load a server already listening on this 127.0.0.1 port (started by "
                         "you with this script's queues: agents, incoming) instead of one of "
                         "its own, e.g. under a profiler")
    args = ap.parse_args()
    counts = [int(n) for n in args.agents.split(",")]
    # One connection per agent (two when watching), here and in the server (a child: it
    # inherits the limit).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * max(counts) + 4 * POOL + 256
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            sys.exit(f"agent_load: {max(counts)} agents need {need} open files; the limit is "
                     f"{hard} (raise it with ulimit -n)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    for n in counts:
        one_run(args, n)
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
