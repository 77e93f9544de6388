"""Durable submissions/s and status reads/s of the scheduler, beside a real Spark master's REST
server, on loopback. Prints one table.

What runs (all on 127.0.0.1, every process stopped by its PID at the end, even on failure):
- ``sessionsched serve`` in its own process: real uvicorn, real SQLite store (WAL, synchronous
  FULL: a submission is on disk before it is acknowledged; concurrent ones share a commit).
  Its backend points at the Spark master below, which has no workers: drivers queue, none
  starts, so the figures are the service's own.
- a Spark 4.0.1 standalone master from pyspark's jars, REST server on (its default recovery
  mode NONE: its submissions are *not* durable).
- the load: C keep-alive HTTP/1.1 connections, each sending its next request as soon as the
  last answer arrived. Creates come from one asyncio (uvloop) client process; status reads from
  ``wrk`` (one C thread) when it is installed (``apt-get install wrk``), else from the same
  asyncio client, which tops out near 20k requests/s on one core and then measures itself.

Both servers get the same requests: Spark REST ``CreateSubmissionRequest``s (spark-submit's
body), then ``GET /v1/submissions/status/ID`` for random known ids. Status reads are measured
at each book size in ``--books`` (apps each server holds): a Spark master looks a driver up by
scanning all of its drivers, so its reads slow down as its queue grows; ours are a dict lookup
and a sorted-list rank, and an answer is cached until the books change. So reads are measured
twice: with the books still (the cache's best case) and with 50 submissions/s trickling in
alongside (every one changes the books: the uncached path). Each server is warmed up first
(the JVM's JIT); the two servers are measured in alternation, ``--rounds`` times, and the
median is reported, so that other load on the machine hits both alike.

    .venv/bin/python benchmarks/service_throughput.py [--books 200,5000] [--concurrency 32]
        [--load auto|wrk|python]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvloop
import yaml

from sessionsched.backends import procs
from sessionsched.backends.ports import free_port_in


def _ports() -> range:
    """The range this project's by-hand processes may use, or ``$SESSIONSCHED_TEST_PORTS``
    (``LOW-HIGH``) where agents sharing a machine each have their own."""
    low, _, high = os.environ.get("SESSIONSCHED_TEST_PORTS", "16000-16999").partition("-")
    return range(int(low), int(high) + 1)


PORTS = _ports()


def free_port(taken: set[int]) -> int:
    port = free_port_in(random.sample(PORTS, len(PORTS)), taken)
    taken.add(port)
    return port


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def create_body(i: int) -> bytes:
    return json.dumps({
        "action": "CreateSubmissionRequest", "appArgs": [str(i)],
        "appResource": "file:/tmp/bench.jar", "clientSparkVersion": "4.0.1",
        "environmentVariables": {}, "mainClass": "Bench",
        "sparkProperties": {"spark.app.name": f"bench-{i}", "spark.submit.deployMode": "cluster",
                            "spark.master": "spark://127.0.0.1:7077",
                            "spark.driver.supervise": "false"},
    }).encode()


# --- the load -------------------------------------------------------------------------------


async def _connection(port: int, requests: list[bytes], answers: list, latencies: list):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for req in requests:
            t0 = time.perf_counter()
            writer.write(req)
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            latencies.append(time.perf_counter() - t0)
            answers.append((int(status_line.split()[1]), body))
    finally:
        writer.close()


async def _trickle(port: int, request: bytes, every_s: float, stop: asyncio.Event,
                   answers: list) -> None:
    """One request every ``every_s`` on its own connection until ``stop``: the books keep
    changing while the measured load runs."""
    while not stop.is_set():
        await _connection(port, [request], answers, [])
        try:
            await asyncio.wait_for(stop.wait(), every_s)
        except asyncio.TimeoutError:
            pass


def run_load(port: int, requests: list[bytes], concurrency: int,
             trickle: bytes | None = None, trickle_hz: float = 50.0) -> dict:
    """Send ``requests`` over ``concurrency`` connections; rate and latencies. ``trickle``:
    a request sent ``trickle_hz`` times a second alongside (its answers in ``trickled``)."""
    shares = [requests[i::concurrency] for i in range(concurrency)]
    answers: list = []
    trickled: list = []
    latencies: list[float] = []

    async def load():
        stop = asyncio.Event()
        side = (asyncio.create_task(_trickle(port, trickle, 1 / trickle_hz, stop, trickled))
                if trickle else None)
        await asyncio.gather(*(_connection(port, s, answers, latencies) for s in shares if s))
        stop.set()
        if side is not None:
            await side

    t0 = time.perf_counter()
    uvloop.run(load())
    elapsed = time.perf_counter() - t0
    latencies.sort()
    return {
        "n": len(answers), "rate": len(answers) / elapsed, "answers": answers,
        "trickled": trickled,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    }


def post(path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def submit_many(port: int, first: int, count: int, concurrency: int) -> tuple[dict, list[str]]:
    result = run_load(port, [post("/v1/submissions/create", create_body(first + i))
                             for i in range(count)], concurrency)
    ids = []
    for status, body in result["answers"]:
        answer = json.loads(body)
        if status != 200 or not answer.get("success"):
            raise RuntimeError(f"create refused: {status} {body[:200]!r}")
        ids.append(answer["submissionId"])
    return result, ids


def read_many(port: int, ids: list[str], count: int, concurrency: int,
              changing: bool = False) -> dict:
    """Status reads of random known ids. ``changing``: submissions trickle in meanwhile (50/s),
    so the books change under the reads (no answer stays cached for long)."""
    rnd = random.Random(7)
    trickle = post("/v1/submissions/create", create_body(-1)) if changing else None
    result = run_load(port, [get(f"/v1/submissions/status/{rnd.choice(ids)}")
                             for _ in range(count)], concurrency, trickle)
    bad = [a for a in result["answers"] if a[0] != 200 or not _success(a[1])]
    if bad:
        raise RuntimeError(f"{len(bad)} status reads failed, e.g. {bad[0]!r}")
    result["trickled_ok"] = sum(1 for a in result["trickled"] if a[0] == 200 and _success(a[1]))
    return result


WRK_SCRIPT = """
local ids = {}
for line in io.lines(os.getenv("IDS_FILE")) do ids[#ids + 1] = line end
math.randomseed(7)
request = function()
  return wrk.format("GET", "/v1/submissions/status/" .. ids[math.random(#ids)])
end
"""


def read_many_wrk(port: int, ids: list[str], seconds: float, concurrency: int, work: Path,
                  changing: bool = False) -> dict:
    """The same status reads, generated by wrk (C, one thread): a Python load generator tops
    out near 20k requests/s on one core, below what the servers can answer."""
    ids_file = work / f"ids-{port}.txt"
    ids_file.write_text("\n".join(ids) + "\n")
    script = work / "status.lua"
    script.write_text(WRK_SCRIPT)
    stop = threading.Event()
    trickled: list = []
    side = None
    if changing:
        side = threading.Thread(target=lambda: uvloop.run(_trickle_until(port, stop, trickled)))
        side.start()
    try:
        out = subprocess.run(
            ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds:g}s", "--latency", "-s", str(script),
             f"http://127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=seconds + 60,
            env={**os.environ, "IDS_FILE": str(ids_file)}, check=True).stdout
    finally:
        stop.set()
        if side is not None:
            side.join(30)
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"status reads failed under wrk:\n{out}")
    n = int(re.search(r"(\d+) requests in", out).group(1))
    return {"n": n, "rate": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50_ms": _wrk_ms(re.search(r"50%\s+(\S+)", out).group(1)),
            "p99_ms": _wrk_ms(re.search(r"99%\s+(\S+)", out).group(1)),
            "trickled_ok": sum(1 for a in trickled if a[0] == 200 and _success(a[1]))}


async def _trickle_until(port: int, stop: threading.Event, answers: list) -> None:
    request = post("/v1/submissions/create", create_body(-1))
    while not stop.is_set():
        await _connection(port, [request], answers, [])
        await asyncio.sleep(1 / 50)


def _wrk_ms(text: str) -> float:
    """wrk's latency (``812.00us``, ``1.52ms``, ``2.01s``) in milliseconds."""
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def _success(body: bytes) -> bool:
    return b'"success":true' in body.replace(b" ", b"")


# --- the processes --------------------------------------------------------------------------


class Proc:
    """A child in its own process session, stopped by PID (its group) at the end."""

    def __init__(self, argv: list[str], log: Path, **kw):
        self.log = log
        self._out = open(log, "wb")
        self.popen = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.STDOUT,
                                      start_new_session=True, **kw)
        self._group = procs.ProcessId(self.popen.pid, procs.start_ticks(self.popen.pid) or 0)

    def stop(self) -> None:
        """SIGTERM its process group, SIGKILL what is left after 20 s."""
        procs.stop_group(self._group, grace_s=20)
        self._out.close()


def wait_ready(url: str, proc: Proc, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            tail = proc.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{proc.log.name}: exited with {proc.popen.returncode}:\n{tail}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} not ready after {timeout_s:g}s (log {proc.log})")


def start_spark_master(work: Path, taken: set[int]) -> tuple[Proc, int, int, int]:
    port, ui, rest = free_port(taken), free_port(taken), free_port(taken)
    props = work / "master.conf"
    props.write_text(f"spark.master.rest.enabled true\nspark.master.rest.port {rest}\n"
                     f"spark.master.rest.host 127.0.0.1\n")
    home = spark_home()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = Proc([str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                 "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui),
                 "--properties-file", str(props)], work / "master.log", env=env)
    wait_ready(f"http://127.0.0.1:{rest}/v1/submissions/readyz", proc)
    return proc, port, ui, rest


def start_scheduler(work: Path, taken: set[int], master: int, ui: int) -> tuple[Proc, int]:
    port = free_port(taken)
    config = {
        "server": {"host": "127.0.0.1", "port": port, "state_dir": str(work / "state"),
                   "cycle_ms": 200},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{master}",
                    "master_ui": f"http://127.0.0.1:{ui}"},
    }
    return serve(config, work / "sessionsched.yaml", work / "scheduler.log"), port


def serve(config: dict, path: Path, log: Path) -> Proc:
    """``sessionsched serve`` on ``config`` (written to ``path``), ready to answer."""
    path.write_text(yaml.safe_dump(config))
    proc = Proc([sys.executable, "-m", "sessionsched.cli", "serve", "--config", str(path),
                 "--log-level", "warning"], log)
    wait_ready(f"http://127.0.0.1:{config['server']['port']}/v1/submissions/readyz", proc)
    return proc


# --- reads while cycles work ------------------------------------------------------------------

BUSY_LEAVES = [f"root.p{p}.l{q}" for p in range(10) for q in range(10)]


def start_busy_scheduler(work: Path, taken: set[int], apps: int) -> tuple[Proc, int]:
    """``sessionsched serve`` on the memory backend, sized so that half of ``apps`` run (100
    leaf queues, ``max_running_apps`` apps/200 each; a core per driver and per executor) and
    half wait: every cycle admits, places and ends apps while the reads are measured."""
    port = free_port(taken)
    config = busy_config(apps, port, work / "busy")
    if ESTIMATE_S is not None:  # --estimate-s: the estimator's period (0: off)
        config["server"]["estimate_s"] = ESTIMATE_S
    return serve(config, work / "busy.yaml", work / "busy.log"), port


ESTIMATE_S: float | None = None  # server.estimate_s of the busy scheduler (None: its default)


def busy_config(apps: int, port: int, state_dir: Path) -> dict:
    """The busy scheduler's configuration (``start_busy_scheduler``; ``serve_cycle.py`` too)."""
    running = max(apps // 2, 100)
    leaves = [{"name": f"p{p}", "queues": [
        {"name": f"l{q}", "admission": "none", "policy": ("fifo", "priority", "fairshare")[q % 3],
         "max_running_apps": running // 100} for q in range(10)]} for p in range(10)]
    return {
        "server": {"host": "127.0.0.1", "port": port, "state_dir": str(state_dir),
                   "cycle_ms": 200, "retained_ended_apps": apps},
        "cluster": {"backend": "memory", "workers": 10, "cores": running * 3 // 10,
                    "memory": f"{running * 3 // 10 * 2}g", "driver_start_s": 1,
                    "executor_start_s": 1, "executor_idle_timeout_s": 30, "work_s": 30},
        "queues": [{"name": "root", "queues": leaves}],
        "defaults": {"queue": BUSY_LEAVES[0]},
    }


def busy_body(i: int) -> bytes:
    body = json.loads(create_body(i))
    rnd = random.Random(i)
    body["sparkProperties"].update({
        "spark.sessionsched.queue": BUSY_LEAVES[i % len(BUSY_LEAVES)],
        "spark.ego.priority": str(rnd.randint(1, 10000)),
        "spark.sessionsched.memory.work": str(rnd.randint(20, 60)),
        "spark.dynamicAllocation.maxExecutors": "2"})
    return json.dumps(body).encode()


def get_now(port: int, path: str) -> bytes:
    """One GET's body, at once (not a load: the estimates' check)."""
    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=60).content


def cycle_seconds(port: int) -> tuple[float, float, dict[float, float]]:
    """(count, sum, cumulative count per bucket bound) of ``sessionsched_cycle_seconds``."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    count = float(re.search(r"^sessionsched_cycle_seconds_count (\S+)$", text, re.M).group(1))
    total = float(re.search(r"^sessionsched_cycle_seconds_sum (\S+)$", text, re.M).group(1))
    buckets = {float(m.group(1).replace("+Inf", "inf")): float(m.group(2)) for m in re.finditer(
        r'^sessionsched_cycle_seconds_bucket\{le="([^"]+)"\} (\S+)$', text, re.M)}
    return count, total, buckets


def cycle_phases(port: int, cpu: bool = False) -> dict[str, tuple[float, float, float]]:
    """(count, sum, count over 25 ms) of ``sessionsched_cycle_phase_seconds`` per phase (of
    ``..._cpu_seconds``: the cycle thread's CPU time)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    name = "sessionsched_cycle_phase_cpu_seconds" if cpu else "sessionsched_cycle_phase_seconds"
    out: dict[str, list[float]] = {}
    for m in re.finditer(rf'^{name}_(count|sum)\{{phase="([^"]+)"\}} (\S+)$', text, re.M):
        out.setdefault(m.group(2), [0.0, 0.0, 0.0])[m.group(1) == "sum"] = float(m.group(3))
    for m in re.finditer(rf'^{name}_bucket\{{le="0.025",phase="([^"]+)"\}} (\S+)$', text, re.M):
        out[m.group(1)][2] = out[m.group(1)][0] - float(m.group(2))
    return {phase: (c, t, over) for phase, (c, t, over) in out.items()}


def on_books(port: int) -> tuple[int, int]:
    """(admitted, queued) apps in the whole tree: starting or running, and waiting."""
    states = httpx.get(f"http://127.0.0.1:{port}/api/v1/queues", timeout=30).json()
    root = next(q for q in states if q["name"] == "root")
    return root["starting"] + root["running"], root["pending"]


def ended(port: int) -> int:
    """Apps finished so far (a submission not stepped yet is in no queue's count: counting
    the apps in the queues would take it for an app that ended)."""
    url = f"http://127.0.0.1:{port}/api/v1/apps?state=FINISHED"
    return len(httpx.get(url, timeout=30).json())


def wait_for_ends(port: int, timeout_s: float = 300.0) -> float:
    """Wait until the first apps have finished; seconds waited."""
    t0 = time.monotonic()
    while not ended(port):
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f"no app ended within {timeout_s:g} s")
        time.sleep(0.5)  # polling the condition, bounded above
    return time.monotonic() - t0


def busy_reads(apps: int, concurrency: int, reads: int, work: Path, taken: set[int],
               procs_out: list[Proc]) -> list[list]:
    """Fill a memory-backend scheduler with ``apps`` submissions (half run, half queue), wait
    for the first apps to end, then measure status reads (Spark REST and native) and per-queue
    lists while its cycles end apps, admit queued ones and place them. Returns table rows (and
    the cycles' durations meanwhile)."""
    proc, port = start_busy_scheduler(work, taken, apps)
    procs_out.append(proc)
    result = run_load(port, [post("/v1/submissions/create", busy_body(i)) for i in range(apps)],
                      concurrency)
    ids = [json.loads(b)["submissionId"] for status, b in result["answers"] if status == 200]
    if len(ids) != apps:
        raise RuntimeError(f"{apps - len(ids)} busy submissions refused")
    rows = [["sessionsched (memory cluster)", "create (submission)", f"0->{apps}", concurrency,
             result["n"], result["rate"], result["p50_ms"], result["p99_ms"]]]
    queued = json.loads(get_now(port, "/api/v1/apps?state=ACCEPTED"))
    print(f"after the submissions: {len(queued)} queued, "
          f"{sum(1 for a in queued if a.get('estimated_start'))} with an estimated start")
    waited = wait_for_ends(port)
    queued = json.loads(get_now(port, "/api/v1/apps?state=ACCEPTED"))
    print(f"once apps end: {len(queued)} queued, "
          f"{sum(1 for a in queued if a.get('estimated_start'))} with an estimated start")
    print(f"reads begin {waited:.1f} s after the last submission, once apps end: cycles then "
          "end apps and admit queued ones, whatever the submission rate was")
    rnd = random.Random(11)
    before, phases_before = cycle_seconds(port), cycle_phases(port)
    cases = [
        ("status read (Spark REST), cycles busy",
         lambda: get(f"/v1/submissions/status/{rnd.choice(ids)}")),
        ("status read (native), cycles busy", lambda: get(f"/api/v1/apps/{rnd.choice(ids)}")),
        ("list one queue, cycles busy",
         lambda: get(f"/api/v1/apps?queue={rnd.choice(BUSY_LEAVES)}")),
    ]
    for label, make in cases:
        r = run_load(port, [make() for _ in range(reads)], concurrency)
        bad = [a for a in r["answers"] if a[0] != 200]
        if bad:
            raise RuntimeError(f"{label}: {len(bad)} failed, e.g. {bad[0][0]} {bad[0][1][:200]!r}")
        rows.append(["sessionsched (memory cluster)", label, apps, concurrency, r["n"],
                     r["rate"], r["p50_ms"], r["p99_ms"]])
    after, phases_after = cycle_seconds(port), cycle_phases(port)
    n = after[0] - before[0]
    over = {le: (after[2][le] - before[2].get(le, 0.0)) for le in after[2]}
    slow = n - max((c for le, c in over.items() if le <= 0.1), default=0.0)
    print(f"cycles during the reads: {n:.0f}, mean {1000 * (after[1] - before[1]) / max(n, 1):.1f}"
          f" ms, over 100 ms: {slow:.0f} (server's sessionsched_cycle_seconds)")
    means = []
    for phase, (count, total, _) in phases_after.items():
        c0, t0, _ = phases_before.get(phase, (0.0, 0.0, 0.0))
        if count > c0:
            means.append(f"{phase} {1000 * (total - t0) / (count - c0):.1f}")
    if means:
        print("  mean ms per phase: " + ", ".join(means))
    whole_slow = after[0] - max((c for le, c in after[2].items() if le <= 0.1), default=0.0)
    print(f"cycles over the whole run (submissions too): {after[0]:.0f}, mean "
          f"{1000 * after[1] / max(after[0], 1):.1f} ms, over 100 ms: {whole_slow:.0f}")
    for what, phases in (("wall", phases_after), ("CPU", cycle_phases(port, cpu=True))):
        if phases:
            print(f"  {what}: mean ms per phase (cycles over 25 ms in it): " + ", ".join(
                f"{phase} {1000 * t / max(c, 1):.1f} ({over:.0f})"
                for phase, (c, t, over) in phases.items()))
    admitted, queued = on_books(port)
    print(f"at the end: {admitted} starting or running, {queued} queued")
    return rows


# --- the run --------------------------------------------------------------------------------


def measure(servers: dict[str, int], books: list[int], concurrency: int, reads: int,
            rounds: int, rows: list[list], wrk: tuple[float, Path] | None = None
            ) -> dict[str, int]:
    """For each book size: fill both servers' books with submissions (measured), then status
    reads on each — with the books still, then with submissions trickling in — alternating
    servers over ``rounds`` rounds (the median is reported), so that a change in the machine's
    load mid-run hits both alike. Returns the submissions each server acknowledged."""
    ids: dict[str, list[str]] = {name: [] for name in servers}
    acked = {name: 0 for name in servers}
    submitted = 0
    for size in books:
        for name, port in servers.items():
            result, new = submit_many(port, submitted, size - submitted, concurrency)
            ids[name] += new
            acked[name] += len(new)
            rows.append([name, "create (submission)", f"{submitted}->{size}", concurrency,
                         result["n"], result["rate"], result["p50_ms"], result["p99_ms"]])
        submitted = size
        for name, port in servers.items():
            read_many(port, ids[name], min(reads, 5000), concurrency)  # warm-up (JIT)
        for changing, label in ((False, "status read, books still"),
                                (True, "status read, 50 submits/s alongside")):
            runs: dict[str, list[dict]] = {name: [] for name in servers}
            for _ in range(rounds):
                for name, port in servers.items():
                    if wrk:
                        result = read_many_wrk(port, ids[name], wrk[0], concurrency, wrk[1],
                                               changing)
                    else:
                        result = read_many(port, ids[name], reads, concurrency, changing)
                    acked[name] += result["trickled_ok"]
                    runs[name].append(result)
            for name, results in runs.items():
                median = sorted(results, key=lambda r: r["rate"])[len(results) // 2]
                rows.append([name, label, size, concurrency, median["n"], median["rate"],
                             median["p50_ms"], median["p99_ms"]])
    return acked


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--books", default="200,5000",
                   help="comma-separated book sizes (apps on each server) to read status at")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--reads", type=int, default=20000, help="status reads per measurement")
    p.add_argument("--rounds", type=int, default=3, help="alternating read rounds per case")
    p.add_argument("--load", choices=["auto", "wrk", "python"], default="auto",
                   help="what generates the status reads: wrk (C; Debian package 'wrk'), or "
                        "this script's asyncio client (tops out near 20k/s); auto: wrk if on PATH")
    p.add_argument("--wrk-seconds", type=float, default=5.0, help="length of one wrk run")
    p.add_argument("--busy", type=int, default=0, metavar="APPS",
                   help="instead: status and list reads while the cycles of a scheduler on the "
                        "memory cluster admit and end APPS apps (half running, half queued)")
    p.add_argument("--busy-concurrency", type=int, default=4)
    p.add_argument("--estimate-s", type=float, default=None, metavar="S",
                   help="--busy: the scheduler's server.estimate_s (0: no estimated starts; "
                        "default: the server's, 5 s)")
    args = p.parse_args(argv)
    global ESTIMATE_S
    ESTIMATE_S = args.estimate_s
    if args.busy:
        return main_busy(args)
    use_wrk = args.load == "wrk" or (args.load == "auto" and shutil.which("wrk") is not None)
    if use_wrk and shutil.which("wrk") is None:
        p.error("--load wrk: wrk is not on PATH (apt-get install wrk)")
    books = sorted(int(b) for b in args.books.split(","))
    taken: set[int] = set()
    procs: list[Proc] = []
    rows: list[list] = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="sessionsched-bench-") as tmp:
        work = Path(tmp)
        try:
            master, port, ui, rest = start_spark_master(work, taken)
            procs.append(master)
            sched, sched_port = start_scheduler(work, taken, port, ui)
            procs.append(sched)
            acked = measure({"sessionsched": sched_port, "Spark master": rest}, books,
                            args.concurrency, args.reads, args.rounds, rows,
                            (args.wrk_seconds, work) if use_wrk else None)
            db = work / "state" / "sessionsched.db"
            with sqlite3.connect(db) as c:
                stored = c.execute("select count(*) from apps").fetchone()[0]
            if stored != acked["sessionsched"]:
                raise RuntimeError(f"{acked['sessionsched']} submissions acknowledged, "
                                   f"{stored} stored")
        finally:
            for proc in reversed(procs):
                proc.stop()
    print_table(rows, books)
    print(f"\nstatus reads generated by {'wrk (1 thread)' if use_wrk else 'asyncio (uvloop)'}; "
          f"creates by asyncio (uvloop)")
    print(f"{os.cpu_count()} cores; 1-minute load average {load_before:.1f} before the run, "
          f"{os.getloadavg()[0]:.1f} after (other work on the machine skews both servers alike)")
    return 0


def main_busy(args: argparse.Namespace) -> int:
    taken: set[int] = set()
    started: list[Proc] = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="sessionsched-bench-") as tmp:
        try:
            rows = busy_reads(args.busy, args.busy_concurrency, min(args.reads, 3000), Path(tmp),
                              taken, started)
        finally:
            for proc in reversed(started):
                proc.stop()
    print_rows(rows)
    print(f"{os.cpu_count()} cores; 1-minute load average {load_before:.1f} before the run, "
          f"{os.getloadavg()[0]:.1f} after. Target: status and list p99 <= 20 ms.")
    return 0


def print_rows(rows: list[list]) -> None:
    head = ["server", "operation", "apps on books", "conc", "requests", "req/s", "p50 ms",
            "p99 ms"]
    cells = [head] + [[r[0], r[1], str(r[2]), str(r[3]), str(r[4]), f"{r[5]:,.0f}",
                       f"{r[6]:.2f}", f"{r[7]:.2f}"] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    for n, line in enumerate(cells):
        print("  ".join(c.rjust(w) if i >= 2 else c.ljust(w) for i, (c, w) in
                        enumerate(zip(line, widths, strict=True))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def print_table(rows: list[list], books: list[int]) -> None:
    print_rows(rows)
    ours = {(r[1], r[2]): r[5] for r in rows if r[0] == "sessionsched"}
    spark = {(r[1], r[2]): r[5] for r in rows if r[0] == "Spark master"}
    creates = [r for r in rows if r[0] == "sessionsched" and r[1].startswith("create")]
    total = sum(r[4] for r in creates) / sum(r[4] / r[5] for r in creates)
    theirs = [r for r in rows if r[0] == "Spark master" and r[1].startswith("create")]
    spark_total = sum(r[4] for r in theirs) / sum(r[4] / r[5] for r in theirs)
    print(f"\ndurable submissions: {total:,.0f}/s (target >= 1,000/s: "
          f"{'met' if total >= 1000 else 'NOT met'}); the Spark master took {spark_total:,.0f}/s "
          "(recovery mode NONE: not durable)")
    for label, size in sorted({(r[1], r[2]) for r in rows if r[1].startswith("status")},
                              key=lambda k: (k[1], k[0])):
        ratio = ours[(label, size)] / spark[(label, size)]
        print(f"{label}, {size} apps on the books: {ratio:.2f}x the Spark master's "
              f"(target >= 2x: {'met' if ratio >= 2 else 'NOT met'})")


if __name__ == "__main__":
    sys.exit(main())
