"""The simulator on many workers: how long ``sessionsched simulate`` takes as the simulated
cluster grows, the workload the same per worker. What it measures is the memory cluster's own
cost (placing every driver and executor on a worker, ``backends/memory/rooms.py``) beside
the engine's, which the cluster's size barely moves.

Not a test: it prints one table. Usage::

    .venv/bin/python benchmarks/simulate_workers.py                     # 100 to 2,000 workers
    .venv/bin/python benchmarks/simulate_workers.py --workers 100000 --apps 20

The workload: one ``fairshare`` queue; workers of 16 cores/64 GiB; as many apps as workers
(``--apps``), submitted 20 a second; each app a client-mode driver and up to 20 executors of
4 cores/8 GiB for 80 tasks of 30 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.sim.simulator import simulate  # noqa: E402
from sessionsched.sim.workload import WorkloadConfig, to_workload  # noqa: E402


def workload(workers: int, apps: int) -> dict:
    app = {"queue": "etl", "driver": {"cores": 1, "memory": "1g"},
           "executor": {"cores": 4, "memory": "8g"}, "max_executors": 20,
           "stages": [{"tasks": 80, "task_s": 30}]}
    return {
        "cluster": {"cores": 16 * workers, "memory": f"{64 * workers}g", "workers": workers,
                    "driver_slots": max(apps // 5, 1), "driver_start_s": 5,
                    "executor_start_s": 3, "executor_idle_timeout_s": 60},
        "queues": [{"name": "root", "queues": [{"name": "etl", "policy": "fairshare"}]}],
        "apps": [{**app, "name": f"a{i:06d}", "submit": i // 20} for i in range(apps)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[100, 500, 2000])
    ap.add_argument("--apps", type=int, default=None, help="default: as many as workers")
    args = ap.parse_args()
    head = (f"{'workers':>8} {'apps':>6} {'wall s':>8} {'cycles':>7} {'cycle p50 ms':>12} "
            f"{'makespan':>9}")
    print(head)
    print("-" * len(head))
    for n in args.workers:
        apps = args.apps or n
        config = WorkloadConfig.model_validate(workload(n, apps))
        t0 = time.perf_counter()
        result = simulate(to_workload(config))
        wall = time.perf_counter() - t0
        engine = result.engine
        print(f"{n:>8,} {apps:>6,} {wall:>8.1f} {engine['cycles']:>7,} "
              f"{engine['cycle_ms_p50']:>12.2f} {result.summary['makespan']:>8.0f}s", flush=True)


if __name__ == "__main__":
    main()
