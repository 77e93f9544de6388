"""The simulator at scale: 20,000 apps over 100 queues, half running and half queued, and
what each engine cycle costs (target: every cycle <= 100 ms, p50 <= 10 ms, burst included).

Not a test: it prints one table. Usage::

    .venv/bin/python benchmarks/simulate_scale.py                    # 20,000 apps, 100 queues
    .venv/bin/python benchmarks/simulate_scale.py --apps 2000 --max-time 120
    .venv/bin/python benchmarks/simulate_scale.py --yaml scale.yaml  # write the workload only
    .venv/bin/python benchmarks/simulate_scale.py --profile          # cProfile the slowest cycles

The workload: 10 parents x 10 leaves, policies mixed, every leaf in the ``demand`` admission
mode (the default; ``--admission mixed``: ``none``, ``reserve`` and ``stateaware`` mixed, as
before ``demand`` was the default), each leaf capped at ``--apps / 200`` running apps by
``max_running_apps``.
Every app is submitted at t=0 (the burst): half of them may start at once, the other half stay
queued until running apps finish (tasks of 60-300 s), so later cycles admit as apps end. The
cluster has room for every admitted app's driver and a few executors, so the burst is not held
back by capacity: the first cycles have to admit and place 10,000 apps.

The figures are the simulator's own timing of ``Scheduler.step`` (``engine.cycle_ms``) and the
step's CPU time, for the whole run, the burst (the first 60 cycles) and the steady part after
it, and the *busy* cycles - every cycle that launched a full admission slice, the burst's
cycles wherever they fall (target: p50 <= 25 ms, max <= 100 ms) -, with the full
garbage-collector passes that fell inside steps; plus each admitted app's
admission latency (admitted - submitted, virtual seconds): the cost, in admission latency, of
bounding each cycle's work. The process runs with ``sessionsched.runtime.gc_pacer.GcPacer``
installed, as ``sessionsched simulate`` and ``serve`` do (``--no-gc-pacer``: without it).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.engine import Scheduler  # noqa: E402

try:
    from sessionsched.runtime.gc_pacer import GcPacer
except ImportError:  # a tree from before the pacer (for the "before" figures)
    GcPacer = None

try:
    from sessionsched.engine.budget import CycleBudget
except ImportError:  # a tree from before the cycle budget: no slices ("before" figures)
    CycleBudget = None
from sessionsched.sim.simulator import Simulator  # noqa: E402
from sessionsched.sim.workload import WorkloadConfig, to_workload  # noqa: E402

PARENTS = 10
LEAVES = 10


MIXED = ["none", "reserve", "none", "stateaware"]
BURST_CYCLES = 60


def workload_dict(apps: int, max_time_s: float, seed: int = 1, admission: str = "demand") -> dict:
    rng = random.Random(seed)
    leaves = PARENTS * LEAVES
    per_leaf_running = max(apps // (2 * leaves), 1)
    policies = ["fifo", "priority", "fairshare"]
    modes = MIXED if admission == "mixed" else [admission]
    queues = [{"name": "root", "queues": [
        {"name": f"p{p}", "weight": 1 + p % 3, "queues": [
            {"name": f"l{leaf}", "policy": policies[(p + leaf) % 3],
             "admission": modes[leaf % len(modes)], "starting_limit": per_leaf_running,
             "max_running_apps": per_leaf_running, "weight": 1 + leaf % 4}
            for leaf in range(LEAVES)]}
        for p in range(PARENTS)]}]
    app_list = []
    for i in range(apps):
        leaf = i % leaves
        app_list.append({
            "name": f"app-{i:05d}", "submit": 0,
            "queue": f"root.p{leaf // LEAVES}.l{leaf % LEAVES}",
            "priority": rng.randint(1, 10000),
            "driver": {"cores": 1, "memory": "1g", "in_cluster": rng.random() < 0.3},
            "executor": {"cores": rng.choice((1, 2)), "memory": "2g"},
            "max_executors": rng.choice((2, 4)),
            "startup_s": rng.choice((0, 5, 20)),
            "stages": [{"tasks": rng.choice((2, 4, 8)), "task_s": rng.randint(60, 300)}],
        })
    running = per_leaf_running * leaves
    cores = running * 4
    return {
        "cluster": {"cores": cores, "memory": f"{cores * 3}g", "driver_slots": running,
                    "driver_start_s": 2, "executor_start_s": 1, "executor_idle_timeout_s": 30,
                    "cycle_s": 1, "max_time_s": max_time_s},
        "queues": queues,
        "apps": app_list,
    }


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(math.ceil(p * len(s)) - 1, 0))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", type=int, default=20_000)
    ap.add_argument("--max-time", type=float, default=400.0, help="virtual seconds to run")
    ap.add_argument("--yaml", type=Path, help="write the workload here and stop")
    ap.add_argument("--profile", action="store_true", help="cProfile every engine step")
    ap.add_argument("--profile-from", type=int, default=0, metavar="CYCLE",
                    help="cProfile only the steps from this cycle on (e.g. 60: the steady part)")
    ap.add_argument("--admission", default="demand",
                    help="every leaf's admission mode, or 'mixed' (none/reserve/stateaware)")
    ap.add_argument("--no-gc-pacer", action="store_true", help="run without GcPacer")
    ap.add_argument("--admit-slice", type=int, default=CycleBudget and CycleBudget().admit,
                    help="apps admitted per step (0: no slice, as before the cycle budget)")
    ap.add_argument("--event-slice", type=int, default=CycleBudget and CycleBudget().events,
                    help="submissions handed to one step (0: all of them)")
    args = ap.parse_args()
    data = workload_dict(args.apps, args.max_time, admission=args.admission)
    if args.yaml:
        args.yaml.write_text(yaml.safe_dump(data, sort_keys=False))
        print(f"wrote {args.yaml}: sessionsched simulate {args.yaml}")
        return
    load_at_start = os.getloadavg()[0]
    t0 = time.perf_counter()
    w = to_workload(WorkloadConfig.model_validate(data))
    if CycleBudget is None:
        sim = Simulator(w)
    else:
        budget = CycleBudget(admit=args.admit_slice or None, events=args.event_slice or None)
        sim = Simulator(w, Scheduler(w.root, w.cluster.capacity, w.cluster.driver_slots, budget))
    pacer = None
    if GcPacer is not None and not args.no_gc_pacer:
        pacer = GcPacer().install()
        pacer.settle()  # the workload and the simulator's records, built before the run
    prof = cProfile.Profile() if args.profile else None
    step = sim.sched.step
    cpu_ms: list[float] = []
    gc_in_step: list[float] = []  # per step: CPU ms of the full GC passes inside it
    launches: list[int] = []  # per step: drivers launched (a busy step launches a full slice)
    in_step = [False, 0.0, 0.0]  # (in a step?, pass start, this step's GC ms)

    def watch_gc(phase: str, info: dict) -> None:
        if info.get("generation") != 2 or not in_step[0]:
            return
        if phase == "start":
            in_step[1] = time.thread_time()
        else:
            in_step[2] += (time.thread_time() - in_step[1]) * 1000

    gc.callbacks.append(watch_gc)

    def timed(now, events=()):
        # CPU time of the step beside the simulator's wall-clock figure: steadier when other
        # work loads the machine.
        if prof and len(cpu_ms) >= args.profile_from:
            prof.enable()
        in_step[0], in_step[2] = True, 0.0
        c = time.thread_time()
        out = ()
        try:
            out = step(now, events)
            return out
        finally:
            cpu_ms.append((time.thread_time() - c) * 1000)
            launches.append(sum(1 for d in out if type(d).__name__ == "LaunchDriver"))
            gc_in_step.append(in_step[2])
            in_step[0] = False
            if prof:
                prof.disable()

    sim.sched.step = timed
    res = sim.run()
    wall = time.perf_counter() - t0
    ms = sim.rec.cycle_ms
    # The burst's share: apps admitted before the first running app can have ended.
    burst = [t.admitted - t.submitted for t in sim.rec.apps.values()
             if t.admitted is not None and t.admitted < 60]
    admitted = sum(1 for t in sim.rec.apps.values() if t.admitted is not None)
    print(f"simulate: {args.apps:,} apps, {PARENTS * LEAVES} leaf queues, {len(ms)} cycles "
          f"({wall:.0f} s wall), {admitted:,} admitted, {res.summary['completed']:,} completed")
    print(f"admission {args.admission}, GC pacer {'off' if pacer is None else 'on'}")
    print(f"first cycles ms: {', '.join(f'{x:.0f}' for x in ms[:6])}")
    parts = [("all", slice(None))]
    if len(ms) > BURST_CYCLES:
        parts += [(f"burst (< {BURST_CYCLES})", slice(0, BURST_CYCLES)),
                  (f"steady (>= {BURST_CYCLES})", slice(BURST_CYCLES, None))]
    rows = [(name, ms[part], cpu_ms[part]) for name, part in parts]
    most = max(launches, default=0)
    busy = [i for i, n in enumerate(launches) if most and n == most]
    if busy:  # every cycle that launched a full admission slice (``engine.budget``)
        rows.append((f"busy ({len(busy)}, {most} launched)", [ms[i] for i in busy],
                     [cpu_ms[i] for i in busy]))
    for name, wall_ms, step_cpu_ms in rows:
        for what, xs in (("wall", wall_ms), ("CPU", step_cpu_ms)):
            print(f"{name:>14} {what:>4} ms: p50 {statistics.median(xs):6.1f}  "
                  f"p99 {pct(xs, 0.99):6.1f}  max {max(xs):6.1f}  "
                  f"over 100 ms: {sum(1 for x in xs if x > 100)}")
    passes = [x for x in gc_in_step if x > 0]
    print(f"full GC passes inside steps: {len(passes)}, CPU ms max "
          f"{max(passes, default=0):.1f}, total {sum(passes):.0f}"
          + ("" if pacer is None else f"; pacer froze {pacer.freezes} time(s), slowest pass "
             f"{pacer.slowest_ms:.1f} ms"))
    print(f"the burst: {len(burst):,} apps admitted in the first 60 s, admission latency "
          f"p50 {statistics.median(burst):.0f} s, max {max(burst):.0f} s (virtual)")
    print(f"load average (1 min): {load_at_start:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
