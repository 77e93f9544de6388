"""Where a cycle's CPU goes: ``engine_cycle.py``'s workload without and with gangs, one run
after the other, split by ``time.thread_time`` around the step's and the arbiter's parts.

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/engine_cycle_parts.py                    # steady, 10,000 running
    .venv/bin/python benchmarks/engine_cycle_parts.py --scenario memory-bound --runs 3

The workload is seeded, so cycle i is the same work in every run of a configuration; on a
shared machine each cycle's figure is the least of ``--runs`` runs (what the other processes
added is not the cycle's), and a row is the mean over the cycles of those least figures. The
runs alternate between the configurations (10 % of the apps in gangs: ``--gangs``), so a change
in the machine's load falls on both.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine_cycle  # noqa: E402

from sessionsched.engine import scheduler  # noqa: E402
from sessionsched.engine.arbitration import incremental  # noqa: E402

PARTS = [("step", None), ("compute", incremental.Arbiter), ("_leaf_results", incremental.Arbiter),
         ("_finish_exact", incremental.Arbiter), ("_finish_cut", incremental.Arbiter),
         ("_admit", scheduler.Scheduler), ("_grant", scheduler.Scheduler),
         ("gang_phase", scheduler)]


def _instrument(cycle: dict[str, float], measuring: list[bool]) -> None:
    """Wrap each part so that its thread CPU time adds to ``cycle`` while ``measuring``."""
    def timed(f, label):
        def wrapper(*a, **k):
            t = time.thread_time()
            try:
                return f(*a, **k)
            finally:
                if measuring[0]:
                    cycle[label] = cycle.get(label, 0.0) + time.thread_time() - t
        return wrapper
    for name, owner in PARTS:
        if owner is not None:
            setattr(owner, name, timed(getattr(owner, name), name))
    scheduler.Scheduler.step = timed(scheduler.Scheduler.step, "step")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=engine_cycle.SCENARIOS, default="steady")
    ap.add_argument("--running", type=int, default=10_000)
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gangs", type=float, default=0.1)
    args = ap.parse_args()
    cycle: dict[str, float] = {}
    measuring = [False]
    _instrument(cycle, measuring)
    rows: list[dict[str, float]] = []
    step = scheduler.Scheduler.step

    def stepped(self, now, events=()):
        cycle.clear()
        out = step(self, now, events)
        if measuring[0]:
            rows.append(dict(cycle))
        return out

    scheduler.Scheduler.step = stepped
    collect = gc.collect

    def collect_then_measure(*a):  # ``run`` collects once, just before its measured cycles
        collect(*a)
        measuring[0] = True

    engine_cycle.gc.collect = collect_then_measure
    configs = (0.0, args.gangs)
    runs: dict[float, list[list[dict[str, float]]]] = {g: [] for g in configs}
    for _ in range(args.runs):
        for g in configs:
            engine_cycle.GANGS = g
            measuring[0] = False
            rows = []
            engine_cycle.run(args.running, args.queued, args.cycles, args.scenario)
            runs[g].append(rows)
    print(f"{args.scenario}, {args.running:,} running + {args.queued:,} queued, {args.cycles} "
          f"cycles: ms a cycle (mean over the cycles of each cycle's least of {args.runs} runs)")
    names = [n for n, _ in PARTS]
    print(f"{'gangs':>6} " + " ".join(f"{n.strip('_'):>13}" for n in names))
    for g in configs:
        least = [statistics.mean(min(r[i].get(n, 0.0) for r in runs[g]) * 1000
                                 for i in range(args.cycles)) for n in names]
        print(f"{g:>6.0%} " + " ".join(f"{v:>13.2f}" for v in least))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
