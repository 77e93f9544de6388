"""What open dashboards cost the scheduler: the cycle's p50/p99 and a status read's p99 with no
dashboard open, then with 50, paired (none, 50, none, 50: a change in the machine's load
meanwhile hits both alike). Prints one table.

What runs (127.0.0.1; every process stopped by its PID at the end, even on failure):
- ``sessionsched serve`` on the memory backend, busy (``service_throughput.py``'s busy
  configuration: 100 leaf queues, half the apps run, half wait, apps of 20-60 s): every cycle
  ends apps, admits queued ones and places them. Measured once the first apps have ended.
- the dashboards, in a process of their own (their client's CPU is not this one's): each a
  lean HTTP/1.1 client (``Lean``) with its own connections polling exactly what the overview page
  (doors/native/static/overview.js) polls: ``GET /api/v1/overview?limit=100`` (the apps
  table's first rows, its filters left at "all") with the ETag of its last answer
  (``If-None-Match``), again two seconds after each answer; and every thirty seconds the
  usage (usage.js, by queue over 7 days: each day once, then the open day and the totals, with
  ``Cache-Control: max-age=10``). They start spread over one poll interval. ``--polls whole``
  polls the overview with the whole app list, as the page did before its table asked for its
  first rows only; ``--polls four`` as it did before the shared overview: health, queues,
  apps and cluster together (no ETag), the usage without a max-age.
- the status reads: ``GET /api/v1/apps/ID`` of random apps, one at a time, 50 a second.

``server cpu`` is the server process's CPU time over the phase (``/proc``), in percent of one
core: what the dashboards cost it, whatever thread spent it; ``their cpu`` the dashboards'
process's own (on a small machine it takes cores the server and the status reads would have,
which browsers on other machines do not: hence ``Lean``).
The cycle's figures are the server's own ``sessionsched_cycle_seconds`` histogram, read before
and after each phase: its quantiles are interpolated inside the histogram's buckets
(service/metrics.py's CYCLE_BUCKETS: 1, 2.5, 5, 10, 25, 50, 100 ms...), so they are as fine as
those bounds.

    .venv/bin/python benchmarks/dashboard_load.py [--apps 1000] [--dashboards 50] [--seconds 15]
        [--pairs 2] [--polls overview|whole|four|overview,whole]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from service_throughput import (  # benchmarks/, beside this script
    busy_body,
    cycle_seconds,
    post,
    run_load,
    start_busy_scheduler,
    wait_for_ends,
)

POLL_S, USAGE_S, USAGE_AGE_S, HOUR, DAY = 2.0, 30.0, 10, 3600, 86400
FOUR = ("/api/v1/health", "/api/v1/queues", "/api/v1/apps", "/api/v1/cluster")
OVERVIEW = {"overview": "/api/v1/overview?limit=100", "whole": "/api/v1/overview"}


async def dashboard(port: int, delay: float, stop_at: float, polls: str = "overview") -> int:
    """One overview page's polls until ``stop_at``; the requests it made. ``polls``: what the
    page reads (``main``'s ``--polls``). A read that fails (a kept-alive connection the
    server closed as it was reused) is what a page shows as stale: it polls on."""
    n, kept, usage_at, etag = 0, set(), -USAGE_S, None
    four = polls == "four"
    usage_headers = {} if four else {"Cache-Control": f"max-age={USAGE_AGE_S}"}
    c = Lean(port)
    try:
        await asyncio.sleep(delay)
        while time.time() < stop_at:
            if four:
                await asyncio.gather(*(c.get(p) for p in FOUR))
                n += len(FOUR)
            else:
                got = await c.get(OVERVIEW[polls], {"If-None-Match": etag} if etag else {})
                etag = got.get("etag", etag) if got is not None else etag
                n += 1
            if time.monotonic() - usage_at >= USAGE_S:
                now = time.time()
                end = now // HOUR * HOUR + HOUR
                starts = [end - (7 - i) * DAY for i in range(7)]
                reads = [f"/api/v1/usage?by=queue&since={s:.0f}&until={s + DAY:.0f}"
                         for s in starts if s not in kept]
                reads.append(f"/api/v1/usage?by=queue&since={starts[0]:.0f}")
                await asyncio.gather(*(c.get(p, usage_headers) for p in reads))
                n += len(reads)
                kept.update(s for s in starts if s + DAY <= now)
                usage_at = time.monotonic()
            await asyncio.sleep(POLL_S)
    finally:
        c.close()
    return n


class Lean:
    """A page's HTTP/1.1 reads over kept-alive connections, as lean as a client can be (the
    body read whole by its Content-Length, nothing parsed): on a small machine a Python HTTP
    client reading 600 KB answers 25 times a second takes a good part of a core, the cores the
    server and the status reads would have; a browser on another machine does not."""

    def __init__(self, port: int):
        self.port, self.idle = port, []

    async def get(self, path: str, headers: dict | None = None) -> dict | None:
        """The answer's headers (lower-case names; ``status`` too), or None if it failed."""
        conn = self.idle.pop() if self.idle else None
        try:
            if conn is None:
                conn = await asyncio.open_connection("127.0.0.1", self.port)
            reader, writer = conn
            lines = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}\r\n".encode())
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            got = {"status": head[0].split()[1]}
            got.update((k.strip().lower(), v.strip()) for k, _, v in
                       (line.partition(":") for line in head[1:] if line))
            await reader.readexactly(int(got.get("content-length", 0)))
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            if conn is not None:
                conn[1].close()
            return None
        self.idle.append(conn)
        return got

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


def dashboards(port: int, count: int, stop_at: float, done, polls: str) -> None:
    async def all_of_them():
        return await asyncio.gather(*(dashboard(port, i * POLL_S / count, stop_at, polls)
                                      for i in range(count)))
    polled = sum(asyncio.run(all_of_them()))
    done.put((polled, time.process_time()))


def quantile(before: dict[float, float], after: dict[float, float], q: float) -> float:
    """The ``q`` quantile (ms) of the cycles between two reads of the histogram, interpolated
    inside its bucket."""
    bounds = sorted(after)
    cum = [after[b] - before.get(b, 0.0) for b in bounds]
    target = q * cum[-1]
    low, below = 0.0, 0.0
    for bound, count in zip(bounds, cum, strict=True):
        if count >= target:
            if bound == float("inf"):
                return float("inf")
            share = (target - below) / (count - below) if count > below else 1.0
            return 1000 * (low + (bound - low) * share)
        low, below = bound, count
    return float("inf")


def cpu_s(pid: int) -> float:
    """The process's user and system CPU seconds so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(port: int, pid: int, ids: list[str], count: int, seconds: float, polls: str) -> dict:
    """``seconds`` of status reads with ``count`` dashboards polling: the figures."""
    done = multiprocessing.Queue()
    warm = POLL_S + 1.0 if count else 0.0
    proc = None
    if count:
        stop_at = time.time() + warm + seconds
        proc = multiprocessing.Process(target=dashboards, args=(port, count, stop_at, done, polls))
        proc.start()
        time.sleep(warm)  # all of them polling
    rnd, latencies = random.Random(count), []
    before, cpu0, began = cycle_seconds(port), cpu_s(pid), time.monotonic()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            r = c.get(f"/api/v1/apps/{rnd.choice(ids)}")
            latencies.append(1000 * (time.perf_counter() - t0))
            if r.status_code != 200:
                raise RuntimeError(f"status read: {r.status_code} {r.text[:200]}")
            time.sleep(max(0.0, 0.02 - (time.perf_counter() - t0)))
    after = cycle_seconds(port)
    cpu = 100 * (cpu_s(pid) - cpu0) / (time.monotonic() - began)
    polled, their_cpu = 0, 0.0
    if proc is not None:
        polled, their_cpu = done.get(timeout=60)
        proc.join(30)
    latencies.sort()
    n = after[0] - before[0]
    return {"dashboards": count, "cycles": n, "mean": 1000 * (after[1] - before[1]) / max(n, 1),
            "p50": quantile(before[2], after[2], 0.5), "p99": quantile(before[2], after[2], 0.99),
            "reads": len(latencies), "read_p50": latencies[len(latencies) // 2],
            "read_p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "polled_per_s": polled / (seconds + warm), "cpu": cpu,
            "their_cpu": 100 * their_cpu / (seconds + warm)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--apps", type=int, default=1000)
    p.add_argument("--dashboards", type=int, default=50)
    p.add_argument("--seconds", type=float, default=15.0, help="each phase's length")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--polls", default="overview",
                   help="what each dashboard polls: overview (the page's one shared read), "
                        "whole (the same with the whole app list, before its table asked for "
                        "its first rows) or four (the four reads it made before the shared "
                        "read); several, comma-separated (overview,whole): each pair becomes "
                        "none, then each in turn, compared with the same none")
    args = p.parse_args(argv)
    modes = args.polls.split(",")
    if not set(modes) <= {"overview", "whole", "four"}:
        p.error(f"--polls: overview, whole or four, not {args.polls!r}")
    procs, taken = [], set()
    with tempfile.TemporaryDirectory(prefix="sessionsched-dashboards-") as tmp:
        try:
            proc, port = start_busy_scheduler(Path(tmp), taken, args.apps)
            procs.append(proc)
            result = run_load(port, [post("/v1/submissions/create", busy_body(i))
                                     for i in range(args.apps)], 16)
            ids = [a["id"] for a in httpx.get(f"http://127.0.0.1:{port}/api/v1/apps",
                                              timeout=60).json()]
            sizes = {mode: len(httpx.get(f"http://127.0.0.1:{port}{path}", timeout=60).content)
                     for mode, path in OVERVIEW.items()}
            print(f"{result['n']} submissions; {len(ids)} apps; first ends after "
                  f"{wait_for_ends(port):.0f} s; the overview's bytes: {sizes}")
            groups = [[{**phase(port, proc.popen.pid, ids, count, args.seconds, mode),
                        "polls": mode if count else "-"}
                       for count, mode in [(0, modes[0])] + [(args.dashboards, m) for m in modes]]
                      for _ in range(args.pairs)]
        finally:
            for proc in procs:
                proc.stop()
    rows = [r for g in groups for r in g]
    print(f"{'dashboards':>10} {'polls':>8} {'cycles':>7} {'mean ms':>8} {'p50 ms':>7} "
          f"{'p99 ms':>7} {'reads':>6} {'read p50':>9} {'read p99':>9} {'their req/s':>11} "
          f"{'server cpu':>10} {'their cpu':>9}")
    for r in rows:
        print(f"{r['dashboards']:>10} {r['polls']:>8} {r['cycles']:>7.0f} {r['mean']:>8.1f} "
              f"{r['p50']:>7.1f} {r['p99']:>7.1f} {r['reads']:>6} {r['read_p50']:>9.2f} "
              f"{r['read_p99']:>9.2f} {r['polled_per_s']:>11.0f} {r['cpu']:>9.0f}% "
              f"{r['their_cpu']:>8.0f}%")
    for polls in ["-", *modes]:
        mine = [r for r in rows if r["polls"] == polls]
        print(f"median of {len(mine)} with {polls}: cycle p50 "
              f"{statistics.median(r['p50'] for r in mine):.1f} ms, p99 "
              f"{statistics.median(r['p99'] for r in mine):.1f} ms; status read p99 "
              f"{statistics.median(r['read_p99'] for r in mine):.2f} ms; server cpu "
              f"{statistics.median(r['cpu'] for r in mine):.0f}%")
    for i, mode in enumerate(modes, 1):
        print(f"{mode}, pair by pair (with minus without), medians: " + ", ".join(
            f"{name} {statistics.median(g[i][k] - g[0][k] for g in groups):+.1f}"
            for name, k in (("cycle p50 ms", "p50"), ("p99 ms", "p99"),
                            ("status read p99 ms", "read_p99"), ("server cpu points", "cpu"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
