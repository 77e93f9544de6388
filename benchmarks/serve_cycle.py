"""The server's scheduling cycle at scale, in-process: where a ``serve`` cycle's time goes.

Builds the real ``Service`` (real SQLite store, WAL with synchronous FULL; the memory cluster
backend) from the same configuration as ``service_throughput.py --busy`` (100 leaf queues,
half the apps may run, half wait; apps of 20-60 s), submits N apps through the real
submission path (``new_apps.from_rest`` then ``Service.submit``, committed), then runs the
service's own cycle (``Service.cycle``) on a virtual clock advanced by ``server.cycle_ms`` per
cycle (``--rate``: submissions committed between cycles instead, as over HTTP): the first
cycles take them and admit them in slices of 200, later ones end apps and admit queued ones in
their place (the bursts of launches). No HTTP and no readers, so
the figures are the cycle's own; ``--profile`` adds cProfile's top functions over the cycles
that launched.

Each cycle's wall time (``perf_counter``, commits included: the store's writer thread and its
fsync) and the cycle thread's CPU time (``thread_time``) are reported, for the cycles that
launched drivers and for the rest, as p50 / p99 / max; as in the server's
``sessionsched_cycle_seconds``, without the collector's pass between cycles
(``gc_pacer.between_cycles``), which has its own row.

    .venv/bin/python benchmarks/serve_cycle.py [--apps 10000] [--seconds 120] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

from service_throughput import busy_body, busy_config  # benchmarks/, beside this script

import sessionsched
from sessionsched.backends import create_backend
from sessionsched.config import ServerConfig, parse_model
from sessionsched.engine.events import LaunchDriver
from sessionsched.intake import new_apps
from sessionsched.runtime import gc_pacer
from sessionsched.service.service import Service


def config(apps: int, state_dir: Path) -> ServerConfig:
    """``service_throughput.py --busy``'s configuration (the port is never opened)."""
    return parse_model(ServerConfig, busy_config(apps, 41999, state_dir), "serve_cycle")


def body(i: int) -> dict:
    """``service_throughput.py``'s busy submission ``i`` (spark-submit's REST body)."""
    return json.loads(busy_body(i))


class Clock:
    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def row(label: str, wall: list[float], cpu: list[float]) -> str:
    if not wall:
        return f"{label:<28} none"
    return (f"{label:<28} {len(wall):>6} {pct(wall, .5):>8.1f} {pct(wall, .99):>8.1f} "
            f"{max(wall):>8.1f} {statistics.fmean(wall):>8.1f} {pct(cpu, .5):>8.1f} "
            f"{pct(cpu, .99):>8.1f} {max(cpu):>8.1f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--apps", type=int, default=10_000)
    p.add_argument("--seconds", type=float, default=120.0, help="virtual seconds of cycles")
    p.add_argument("--rate", type=float, default=0.0,
                   help="submissions per virtual second, committed between cycles (0: all "
                        "before the first cycle)")
    p.add_argument("--profile", action="store_true",
                   help="cProfile the cycles that launched; print the top functions")
    p.add_argument("--top", type=int, default=40)
    args = p.parse_args(argv)
    load = os.getloadavg()[0]
    clock = Clock()
    launched_in: list[int] = []
    with tempfile.TemporaryDirectory(prefix="sessionsched-servecycle-") as tmp, \
            gc_pacer.GcPacer():
        conf = config(args.apps, Path(tmp))
        service = Service(conf, create_backend(conf), clock=clock)
        service.start(run_cycles=False)
        try:
            defaults = new_apps.Defaults(root=conf.queue_tree(), queue=conf.defaults.queue,
                                            priority=conf.defaults.priority,
                                            drivers_in_cluster=True)
            def submit(first: int, n: int) -> None:
                futures = [service.submit(new_apps.from_rest(body(i), defaults)[0], "bench")
                           for i in range(first, min(first + n, args.apps))]
                for f in futures:
                    f.result(120)

            submitted = 0 if args.rate else args.apps
            t0 = time.perf_counter()
            submit(0, submitted)
            if submitted:
                print(f"{args.apps} submissions committed in {time.perf_counter() - t0:.1f} s")
            per_cycle = round(args.rate * conf.server.cycle_ms / 1000)
            engine = service.engine
            engine_step = engine.step

            def counting_step(now, events):  # the launches each step decided
                decisions = engine_step(now, events)
                launched_in.append(sum(isinstance(d, LaunchDriver) for d in decisions))
                return decisions

            engine.step = counting_step
            profile = cProfile.Profile() if args.profile else None
            batches: tuple[list[float], list[float]] = ([], [])  # the writer's, during cycles
            commit = service.writer._commit

            def timed_commit(batch):  # the writer thread's wall and CPU per transaction
                w0, c0 = time.perf_counter(), time.thread_time()
                commit(batch)
                batches[0].append(1000 * (time.perf_counter() - w0))
                batches[1].append(1000 * (time.thread_time() - c0))

            service.writer._commit = timed_commit
            between = gc_pacer.between_cycles
            gc_pass: list[tuple[float, float]] = []

            def timed_between() -> None:  # not part of a cycle's time (as in the server's metric)
                w0, c0 = time.perf_counter(), time.thread_time()
                between()
                gc_pass.append((1000 * (time.perf_counter() - w0),
                                1000 * (time.thread_time() - c0)))

            gc_pacer.between_cycles = timed_between
            gc_rows: tuple[list[float], list[float]] = ([], [])
            rows: dict[str, tuple[list[float], list[float]]] = {
                "launching": ([], []), "not launching": ([], []),
                "launching, inbox empty": ([], [])}
            phases: dict[str, tuple[list[float], list[float]]] = {}
            slowest: list[tuple] = []
            cycles = int(args.seconds * 1000 / conf.server.cycle_ms)
            for _ in range(cycles):
                clock.t += conf.server.cycle_ms / 1000
                if submitted < args.apps:  # committed between two cycles, as if over HTTP
                    submit(submitted, per_cycle)
                    submitted += per_cycle
                n = len(launched_in)
                waiting = service.inbox._items.qsize()  # submissions not taken yet
                w0, c0 = time.perf_counter(), time.thread_time()
                if profile is not None:
                    profile.enable()
                service.cycle()
                if profile is not None:
                    profile.disable()
                wall, cpu = 1000 * (time.perf_counter() - w0), 1000 * (time.thread_time() - c0)
                gc_wall, gc_cpu = gc_pass.pop() if gc_pass else (0.0, 0.0)
                wall, cpu = wall - gc_wall, cpu - gc_cpu
                gc_rows[0].append(gc_wall)
                gc_rows[1].append(gc_cpu)
                launching = len(launched_in) > n and launched_in[-1] > 0
                w, c = rows["launching" if launching else "not launching"]
                w.append(wall)
                c.append(cpu)
                if launching and not waiting:
                    rows["launching, inbox empty"][0].append(wall)
                    rows["launching, inbox empty"][1].append(cpu)
                if launching:
                    for phase, (pw, pc) in getattr(service._cycle, "last_phases", {}).items():
                        phases.setdefault(phase, ([], []))
                        phases[phase][0].append(1000 * pw)
                        phases[phase][1].append(1000 * pc)
                    slowest.append((cpu, wall, len(launched_in) - 1, launched_in[-1],
                                    dict(getattr(service._cycle, "last_phases", {}))))
            view = service.reads.view
            states: dict[str, int] = {}
            for _, state in view.states():
                states[state.value] = states.get(state.value, 0) + 1
        finally:
            service.stop()
    print(f"{cycles} cycles over {args.seconds:g} virtual s; launches per launching cycle: "
          f"max {max(launched_in, default=0)}; apps at the end: {json.dumps(states)}")
    print(f"{'cycles (ms)':<28} {'n':>6} {'p50':>8} {'p99':>8} {'max':>8} {'mean':>8} "
          f"{'CPU p50':>8} {'CPU p99':>8} {'CPU max':>8}")
    for label, (w, c) in rows.items():
        print(row(label, w, c))
    print(row("all", rows["launching"][0] + rows["not launching"][0],
              rows["launching"][1] + rows["not launching"][1]))
    print(row("GC between cycles (gc_pacer)", *gc_rows))
    print(row("store writer's transactions", *batches))
    print("phases of the launching cycles (server.cycle.PHASES):")
    for phase, (w, c) in phases.items():
        print(row(f"  {phase}", w, c))
    print("slowest launching cycles by CPU (cycle #, launches: phase wall/CPU ms):")
    for cpu, wall, i, n, ph in sorted(slowest, key=lambda x: x[0], reverse=True)[:5]:
        parts = ", ".join(f"{k} {1000 * v[0]:.0f}/{1000 * v[1]:.0f}" for k, v in ph.items())
        print(f"  #{i} {n} launches, {wall:.0f}/{cpu:.0f} ms: {parts}")
    print(f"sessionsched from {Path(sessionsched.__file__).parent}")
    print(f"{os.cpu_count()} cores; 1-minute load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after")
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(args.top)
        print(out.getvalue())
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
