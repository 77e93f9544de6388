"""Custom resources' cost in a cycle, paired: the engine cycle of ``engine_cycle.py`` with
three resources - cores, memory and GPUs: the cluster has them and a fraction of the apps'
executors ask for one each - against the same workload with two, two engines stepped side by
side, cycle by cycle, as ``gang_cycle_pair.py`` does (its doc says why: a machine's speed
drifts over minutes, more than the difference looked for).

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/resources_cycle_pair.py                  # the rows below
    .venv/bin/python benchmarks/resources_cycle_pair.py --scenario steady --cycles 200

With GPUs the cluster has one GPU per ``--cores-per-gpu`` cores (so GPUs are as scarce as the
cores, or scarcer) and ``--gpu-apps`` of the apps, running and queued, ask for one GPU per
executor; which apps is drawn apart from the rest, so both engines play the same workload
but for the GPUs. By default they are spread over all 100 leaf queues, so nearly every leaf
and parent divides by dominant share: the dearest layout. ``--gpu-queues N`` puts them in the
first N leaves only, as where one team's queues run the GPU work (``--gpu-queues 10
--gpu-apps 1``: every app of one parent's 10 leaves, a tenth of all apps, as by default).
What it costs: each queue's division by dominant share where GPUs are asked
(``engine.arbitration.drf``), the fairshare leaves whose GPUs are short divided by
progressive filling when they change (a fifo/priority leaf's walk within its GPU budget is
kept: ``greedy_budget``), the GPUs counted in grants and reclaim. Target: the cycle with
GPUs at most 1.1x the one without at 10,000 running apps.

Columns: CPU ms p50 and mean per cycle of each; ``ratio p50``: the median over the cycles of
with / without; ``gpus dearer``: in how many cycles the step with GPUs cost more.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_cycle import MAX_WAIT_S, Bench, Workload, stepped_in_turn  # noqa: E402

from sessionsched.engine import CapacityChanged, Scheduler  # noqa: E402
from sessionsched.model import AppSpec, Resources  # noqa: E402
from sessionsched.runtime import gc_pacer  # noqa: E402

ROWS = (("steady", 1000), ("steady", 10_000), ("burst", 10_000), ("capacity-swing", 10_000),
        ("memory-bound", 10_000), ("max-wait", 10_000))
GPU = (("gpu", 1),)


class GpuWorkload(Workload):
    """``engine_cycle.Workload`` whose apps ask for a GPU per executor at ``share`` (drawn from
    a generator of its own: every other draw is the same with or without)."""

    def __init__(self, *args, share: float = 0.0, gpu_queues: int = 0, **kw) -> None:
        super().__init__(*args, **kw)
        self.share = share
        self.gpu_rng = random.Random(7)
        # With ``gpu_queues``: only the apps of the first so many leaves ask (one team's
        # queues), each of them with the ``share``'s chance.
        self.gpu_leaves = frozenset(self.leaves[:gpu_queues]) if gpu_queues else None

    def spec(self, leaf: str | None = None) -> AppSpec:
        spec = super().spec(leaf)
        if self.gpu_leaves is not None and spec.queue not in self.gpu_leaves:
            return spec
        if self.share and self.gpu_rng.random() < self.share:
            e = spec.executor
            spec = replace(spec, executor=Resources(e.cores, e.mem_mib, GPU))
        return spec


class ResBench(Bench):
    """``engine_cycle.Bench`` on a cluster with ``gpus`` GPUs (0: none) and the apps of a
    ``GpuWorkload``."""

    def __init__(self, running: int, queued: int, scenario: str, share: float, gpus: int,
                 gpu_queues: int = 0):
        self.scenario = scenario
        self.wl = wl = GpuWorkload(running, queued, expiring=scenario == "max-wait", gangs=0.0,
                                   share=share, gpu_queues=gpu_queues)
        self.cores = cores = running * 3
        self.mem_mib = mem_mib = cores * (1024 if scenario == "memory-bound" else 4096)
        self.custom = (("gpu", gpus),) if gpus else ()
        self.sched = sched = Scheduler(wl.root, Resources(cores, mem_mib, self.custom),
                                       driver_slots=running * 2)
        t0 = time.perf_counter()
        wl.carry_out(sched.step(0.0, wl.setup_events()))
        self.setup_s = time.perf_counter() - t0
        self.settle()

    def events(self) -> list:
        events = super().events()
        if self.custom:  # the swing's capacity keeps the GPUs
            events = [CapacityChanged(Resources(e.capacity.cores, e.capacity.mem_mib,
                                                self.custom))
                      if isinstance(e, CapacityChanged) else e for e in events]
        return events


def pair(pacer: gc_pacer.GcPacer, scenario: str, running: int, queued: int, cycles: int,
         share: float, cores_per_gpu: int, gpu_queues: int = 0) -> dict:
    plain = ResBench(running, queued, scenario, 0.0, 0)
    gpu = ResBench(running, queued, scenario, share, max(running * 3 // cores_per_gpu, 1),
                   gpu_queues)
    r = stepped_in_turn(pacer, plain, gpu, cycles)
    r["cpu"] = dict(zip(("plain", "gpu"), r["cpu"], strict=True))
    r["launched"] = dict(zip(("plain", "gpu"), r["launched"], strict=True))
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=sorted({s for s, _ in ROWS}))
    ap.add_argument("--running", type=int, default=None, help="with --scenario (default 10,000)")
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--cycles", type=int, default=60)
    ap.add_argument("--gpu-apps", type=float, default=0.1)
    ap.add_argument("--cores-per-gpu", type=int, default=12)
    ap.add_argument("--gpu-queues", type=int, default=0,
                    help="only the apps of the first N leaf queues (of 100) ask for GPUs, each"
                         " with the --gpu-apps chance; 0 (default): the apps of every leaf")
    args = ap.parse_args()
    rows = [(args.scenario, args.running or 10_000)] if args.scenario else list(ROWS)
    where = f" of the first {args.gpu_queues} leaves" if args.gpu_queues else ""
    print(f"cores, memory and GPUs (1 per {args.cores_per_gpu} cores, {args.gpu_apps:.0%} of the"
          f" apps{where} asking) against cores and memory, {args.queued:,} queued,"
          f" {args.cycles} cycles per row, stepped in turn; max_wait {MAX_WAIT_S:g} s in"
          f" max-wait")
    head = (f"{'scenario':<15} {'running':>8} {'p50 2 res':>9} {'p50 3 res':>9} "
            f"{'mean 2 res':>10} {'mean 3 res':>10} {'ratio p50':>9} {'gpus dearer':>11} "
            f"{'launched':>13}")
    print(head)
    print("-" * len(head))
    with gc_pacer.GcPacer() as pacer:
        for scenario, n in rows:
            r = pair(pacer, scenario, n, args.queued, args.cycles, args.gpu_apps,
                     args.cores_per_gpu, args.gpu_queues)
            plain, gpu = r["cpu"]["plain"], r["cpu"]["gpu"]
            print(f"{scenario:<15} {n:>8,} {statistics.median(plain):>9.2f} "
                  f"{statistics.median(gpu):>9.2f} {statistics.mean(plain):>10.2f} "
                  f"{statistics.mean(gpu):>10.2f} {r['ratio_p50']:>9.2f} "
                  f"{r['dearer']:>4} of {args.cycles:<4} "
                  f"{r['launched']['plain']:>6,}/{r['launched']['gpu']:<6,}", flush=True)
    print("CPU ms per step (its thread's); launched: drivers launched with 2 / 3 resources.")


if __name__ == "__main__":
    main()
