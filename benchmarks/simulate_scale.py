"""The simulator at scale: 20,000 apps over 100 queues, half running and half queued, and
what each engine cycle costs (issue 14: every cycle <= 100 ms, p50 <= 10 ms, burst included).

Not a test: it prints one table. Usage::

    .venv/bin/python benchmarks/simulate_scale.py                    # 20,000 apps, 100 queues
    .venv/bin/python benchmarks/simulate_scale.py --apps 2000 --max-time 120
    .venv/bin/python benchmarks/simulate_scale.py --yaml scale.yaml  # write the workload only
    .venv/bin/python benchmarks/simulate_scale.py --profile          # cProfile the slowest cycles

The workload: 10 parents x 10 leaves, policies and admission modes (``none``, ``reserve``,
``stateaware``) mixed, each leaf capped at ``--apps / 200`` running apps by ``max_running_apps``.
Every app is submitted at t=0 (the burst): half of them may start at once, the other half stay
queued until running apps finish (tasks of 60-300 s), so later cycles admit as apps end. The
cluster has room for every admitted app's driver and a few executors, so the burst is not held
back by capacity: the first cycles have to admit and place 10,000 apps.

The figures are the simulator's own timing of ``Scheduler.step`` (``engine.cycle_ms``), plus
each admitted app's admission latency (admitted - submitted, virtual seconds): the cost, in
admission latency, of bounding each cycle's work.
"""

from __future__ import annotations

import argparse
import cProfile
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
    from sessionsched.engine.budget import CycleBudget
except ImportError:  # a tree from before issue 14: no slices (for the "before" figures)
    CycleBudget = None
from sessionsched.sim.simulator import Simulator  # noqa: E402
from sessionsched.sim.workload import WorkloadConfig, to_workload  # noqa: E402

PARENTS = 10
LEAVES = 10


def workload_dict(apps: int, max_time_s: float, seed: int = 1) -> dict:
    rng = random.Random(seed)
    leaves = PARENTS * LEAVES
    per_leaf_running = max(apps // (2 * leaves), 1)
    policies = ["fifo", "priority", "fairshare"]
    modes = ["none", "reserve", "none", "stateaware"]
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
    ap.add_argument("--admit-slice", type=int, default=CycleBudget and CycleBudget().admit,
                    help="apps admitted per step (0: no slice, as before issue 14)")
    ap.add_argument("--event-slice", type=int, default=CycleBudget and CycleBudget().events,
                    help="submissions handed to one step (0: all of them)")
    args = ap.parse_args()
    data = workload_dict(args.apps, args.max_time)
    if args.yaml:
        args.yaml.write_text(yaml.safe_dump(data, sort_keys=False))
        print(f"wrote {args.yaml}: sessionsched simulate {args.yaml}")
        return
    t0 = time.perf_counter()
    w = to_workload(WorkloadConfig.model_validate(data))
    if CycleBudget is None:
        sim = Simulator(w)
    else:
        budget = CycleBudget(admit=args.admit_slice or None, events=args.event_slice or None)
        sim = Simulator(w, Scheduler(w.root, w.cluster.capacity, w.cluster.driver_slots, budget))
    prof = cProfile.Profile() if args.profile else None
    step = sim.sched.step
    cpu_ms: list[float] = []

    def timed(now, events=()):
        # CPU time of the step beside the simulator's wall-clock figure: steadier when other
        # work loads the machine.
        if prof:
            prof.enable()
        c = time.thread_time()
        try:
            return step(now, events)
        finally:
            cpu_ms.append((time.thread_time() - c) * 1000)
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
    print(f"cycle ms: p50 {statistics.median(ms):.1f}  p99 {pct(ms, 0.99):.1f}  "
          f"max {max(ms):.1f}  over 100 ms: {sum(1 for x in ms if x > 100)}  "
          f"(first cycles: {', '.join(f'{x:.0f}' for x in ms[:6])})")
    print(f"cycle CPU ms: p50 {statistics.median(cpu_ms):.1f}  p99 {pct(cpu_ms, 0.99):.1f}  "
          f"max {max(cpu_ms):.1f}  over 100 ms: {sum(1 for x in cpu_ms if x > 100)}")
    print(f"the burst: {len(burst):,} apps admitted in the first 60 s, admission latency "
          f"p50 {statistics.median(burst):.0f} s, max {max(burst):.0f} s (virtual)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
