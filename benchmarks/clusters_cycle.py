"""Several clusters' cost in a cycle, paired: the engine cycle of ``engine_cycle.py`` on one
cluster against the same workload over 2 or 4 clusters of the same total size (a
``Federation``: one engine per cluster, each queued app copied to every cluster's queue),
stepped side by side, cycle by cycle, as ``gang_cycle_pair.py`` does (its doc says why: a
machine's speed drifts over minutes, more than the difference looked for).

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/clusters_cycle.py                   # the rows below
    .venv/bin/python benchmarks/clusters_cycle.py --clusters 4 --scenario steady --cycles 100

The running apps are spread over the clusters in turn (adopted there), each cluster has
``1/k`` of the cores, memory and driver slots, and its queues ``1/k`` of their ``min_share``
(it holds per cluster; ``max_cores`` and ``max_running_apps`` hold over all: kept whole); the
queued apps may use every cluster. What
it costs: each submission, priority change and expiry of a queued app is applied in every
cluster's engine, each engine walks its own queues for admission, and each launch takes the
app's copies out of the others. Target: at most 1.2x the one cluster at 10,000 running apps.

Columns: CPU ms p50 and mean per cycle of each; ``ratio p50``: the median over the cycles of
several / one; ``dearer``: in how many cycles the federation cost more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_cycle import (  # noqa: E402
    MAX_WAIT_S,
    Bench,
    Workload,
    queue_tree,
    stepped_in_turn,
)

from sessionsched.engine import Adopted, CapacityChanged, QueuesChanged  # noqa: E402
from sessionsched.engine.clusters import ClusterSpec, Federation, OnCluster  # noqa: E402
from sessionsched.model import Queue, Resources  # noqa: E402
from sessionsched.runtime import gc_pacer  # noqa: E402

ROWS = (("steady", 1000, 2), ("steady", 10_000, 2), ("steady", 10_000, 4),
        ("burst", 10_000, 2), ("max-wait", 10_000, 2), ("capacity-swing", 10_000, 2))


class FedBench(Bench):
    """``engine_cycle.Bench`` over ``k`` clusters of ``1/k`` the size each."""

    def __init__(self, running: int, queued: int, scenario: str, k: int):
        self.scenario = scenario
        self.k = k
        self.names = [f"c{i}" for i in range(k)]
        self.wl = wl = Workload(running, queued, expiring=scenario == "max-wait", gangs=0.0)
        self.cores = cores = running * 3
        self.mem_mib = mem_mib = cores * (1024 if scenario == "memory-bound" else 4096)
        root = per_cluster(queue_tree(
            running, max_wait_s=MAX_WAIT_S if scenario == "max-wait" else None), k)
        self.sched = sched = Federation(root, [ClusterSpec(n) for n in self.names],
                                        driver_slots=running * 2 // k)
        t0 = time.perf_counter()
        setup = [OnCluster(n, CapacityChanged(Resources(cores // k, mem_mib // k)))
                 for n in self.names]
        adopted = 0
        leaves = len(wl.leaves)
        for ev in wl.setup_events():
            if isinstance(ev, Adopted):  # every leaf's apps spread evenly (its i-th: i % leaves)
                ev = OnCluster(self.names[(adopted // leaves) % k], ev)
                adopted += 1
            setup.append(ev)
        wl.carry_out(sched.step(0.0, setup))
        self.setup_s = time.perf_counter() - t0
        self.settle()

    def events(self) -> list:
        out = []
        for ev in super().events():  # the swing's capacity and the burst's tree: per cluster
            if isinstance(ev, QueuesChanged):
                out.append(QueuesChanged(per_cluster(ev.root, self.k)))
            elif isinstance(ev, CapacityChanged):
                c = ev.capacity
                out += [OnCluster(n, CapacityChanged(Resources(c.cores // self.k,
                                                               c.mem_mib // self.k)))
                        for n in self.names]
            else:
                out.append(ev)
        return out


def per_cluster(root: Queue, k: int) -> Queue:
    """The tree with its ``min_share`` over k: it holds per cluster (``max_cores`` and
    ``max_running_apps`` hold over all: kept)."""
    return replace(root, children=tuple(per_cluster(c, k) for c in root.children),
                   min_share_cores=root.min_share_cores // k)


def pair(pacer: gc_pacer.GcPacer, scenario: str, running: int, queued: int, cycles: int,
         k: int) -> dict:
    one = Bench(running, queued, scenario, gangs=0.0)
    several = FedBench(running, queued, scenario, k)
    r = stepped_in_turn(pacer, one, several, cycles)
    r["cpu"] = dict(zip(("one", "several"), r["cpu"], strict=True))
    r["launched"] = dict(zip(("one", "several"), r["launched"], strict=True))
    r["setup_s"] = (one.setup_s, several.setup_s)
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=sorted({s for s, _, _ in ROWS}))
    ap.add_argument("--running", type=int, default=None, help="with --scenario (default 10,000)")
    ap.add_argument("--clusters", type=int, default=2, help="with --scenario")
    ap.add_argument("--queued", type=int, default=10_000)
    ap.add_argument("--cycles", type=int, default=60)
    args = ap.parse_args()
    rows = ([(args.scenario, args.running or 10_000, args.clusters)] if args.scenario
            else list(ROWS))
    print(f"one cluster against k clusters of 1/k its size, {args.queued:,} queued, "
          f"{args.cycles} cycles per row, stepped in turn; max_wait {MAX_WAIT_S:g} s in max-wait")
    head = (f"{'scenario':<15} {'running':>8} {'k':>2} {'p50 one':>8} {'p50 k':>8} "
            f"{'mean one':>9} {'mean k':>9} {'ratio p50':>9} {'dearer':>11} {'launched':>13} "
            f"{'setup s':>11}")
    print(head)
    print("-" * len(head))
    with gc_pacer.GcPacer() as pacer:
        for scenario, n, k in rows:
            r = pair(pacer, scenario, n, args.queued, args.cycles, k)
            one, several = r["cpu"]["one"], r["cpu"]["several"]
            print(f"{scenario:<15} {n:>8,} {k:>2} {statistics.median(one):>8.2f} "
                  f"{statistics.median(several):>8.2f} {statistics.mean(one):>9.2f} "
                  f"{statistics.mean(several):>9.2f} {r['ratio_p50']:>9.2f} "
                  f"{r['dearer']:>4} of {args.cycles:<4} "
                  f"{r['launched']['one']:>6,}/{r['launched']['several']:<6,} "
                  f"{r['setup_s'][0]:>5.1f}/{r['setup_s'][1]:<5.1f}", flush=True)
    print("CPU ms per step (its thread's); launched: drivers launched by one / k clusters; "
          "setup: the first step's wall seconds (every submission, and its copies).")


if __name__ == "__main__":
    main()
