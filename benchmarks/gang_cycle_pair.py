"""Gangs' cost in a cycle, paired: one workload without gangs and the same with a fraction of
its apps in gangs, two engines stepped side by side, cycle by cycle (docs/design/gangs.md).

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/gang_cycle_pair.py                     # engine_cycle's --quick rows
    .venv/bin/python benchmarks/gang_cycle_pair.py --scenario steady --cycles 200

``engine_cycle.py --gangs`` runs the two configurations one after the other, minutes apart.
On a shared or throttled machine the speed of the same code drifts by tens of percent over
minutes (the same seeded run: 0.70 to 1.11 s of step CPU under cProfile, quiet), which swamps a
difference of a few percent. Here both engines live in one process and step in turn, the
first of the two alternating, so a drift falls on both alike. The workloads are the same
draws (``engine_cycle.Workload`` draws which apps are gangs from a generator of its own);
they part only where the gangs make the engine decide otherwise (gang heads hold their
queues, so fewer drivers launch).

Each step's CPU is its thread's (``time.thread_time``); after each, ``gc_pacer.between_cycles``
runs outside the timing, as the server's cycle loop does it (``service/cycle.py``), so a
collection the other engine's garbage triggers is not counted in this one's step. Columns:
CPU ms p50 and mean per cycle of each; ``ratio p50``: the median over the cycles of with /
without; ``gangs dearer``: in how many of the cycles the step with gangs cost more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_cycle import QUICK_ROWS, SCENARIOS, Bench, stepped_in_turn  # noqa: E402

from sessionsched.runtime import gc_pacer  # noqa: E402


def pair(pacer: gc_pacer.GcPacer, scenario: str, running: int, queued: int, cycles: int,
         gangs: float) -> dict:
    plain = Bench(running, queued, scenario, gangs=0.0)
    ganged = Bench(running, queued, scenario, gangs=gangs)
    r = stepped_in_turn(pacer, plain, ganged, cycles)
    r["cpu"] = dict(zip(("plain", "ganged"), r["cpu"], strict=True))
    r["launched"] = dict(zip(("plain", "ganged"), r["launched"], strict=True))
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=SCENARIOS, help="only this scenario (10,000 running)")
    ap.add_argument("--running", type=int, default=None, help="with --scenario (default 10,000)")
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--cycles", type=int, default=60)
    ap.add_argument("--gangs", type=float, default=0.1)
    args = ap.parse_args()
    rows = ([(args.scenario, args.running or 10_000)] if args.scenario else QUICK_ROWS)
    print(f"{args.gangs:.0%} of the apps in gangs against none, {args.queued:,} queued, "
          f"{args.cycles} cycles per row, stepped in turn")
    head = (f"{'scenario':<15} {'running':>8} {'p50 none':>9} {'p50 gangs':>9} "
            f"{'mean none':>9} {'mean gangs':>10} {'ratio p50':>9} {'gangs dearer':>12} "
            f"{'launched':>13}")
    print(head)
    print("-" * len(head))
    with gc_pacer.GcPacer() as pacer:
        for scenario, n in rows:
            r = pair(pacer, scenario, n, args.queued, args.cycles, args.gangs)
            plain, ganged = r["cpu"]["plain"], r["cpu"]["ganged"]
            print(f"{scenario:<15} {n:>8,} {statistics.median(plain):>9.2f} "
                  f"{statistics.median(ganged):>9.2f} {statistics.mean(plain):>9.2f} "
                  f"{statistics.mean(ganged):>10.2f} {r['ratio_p50']:>9.2f} "
                  f"{r['dearer']:>5} of {args.cycles:<4} "
                  f"{r['launched']['plain']:>6,}/{r['launched']['ganged']:<6,}")
    print("CPU ms per step (its thread's); launched: drivers launched without / with gangs.")


if __name__ == "__main__":
    main()
