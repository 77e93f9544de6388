"""The price of not spanning clusters: one mixed workload simulated on one cluster of 2C and on
two clusters of C each, under each placement rule.

An app's executors cannot leave its driver's cluster, so two clusters of C hold less than one
of 2C: an app that would spread over the whole 2C is held to C, and room free on one cluster
is of no use to an app placed on the other. This measures how much that costs in makespan and
queue wait, on the simulator (the real engine, the memory cluster).

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/clusters_split.py                 # C = 32 cores, 200 apps
    .venv/bin/python benchmarks/clusters_split.py --cores 64 --apps 400 --seed 3

The workload (drawn from ``--seed``): batch apps of 1-4-core executors, 1-32 executors
wanted, one to three stages of 10-150 tasks of 2-10 s, and a fifth of them wide (16-64
executors); arrivals spread over the first ``--span`` seconds (about 70 % of 2C's cores by
default); one fairshare queue. Queue wait: admitted - submitted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.sim import simulate  # noqa: E402
from sessionsched.sim.workload import WorkloadConfig, parse_model, to_workload  # noqa: E402


def apps(n: int, span_s: float, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        cores = rng.choice((1, 2, 4))
        wide = rng.random() < 0.2
        out.append({
            "name": f"app-{i:04d}", "submit": round(rng.uniform(0, span_s), 1),
            "driver": {"cores": 1, "memory": "2g", "in_cluster": True},
            "executor": {"cores": cores, "memory": f"{cores * 4}g"},
            "min_executors": 1,
            "max_executors": rng.randint(16, 64) if wide else rng.randint(1, 32),
            "stages": [{"tasks": rng.randint(10, 150), "task_s": rng.choice((2, 5, 10))}
                       for _ in range(rng.randint(1, 3))],
        })
    return out


def run(cores: int, split: bool, placement: str, workload_apps: list[dict]) -> dict:
    cluster = {"cores": cores, "memory": f"{cores * 4}g", "workers": max(cores // 8, 1),
               "driver_start_s": 5, "executor_start_s": 3}
    data: dict = {"apps": workload_apps, "queues": [{"name": "batch", "policy": "fairshare"}]}
    if split:
        data["clusters"] = [{"name": "a", **cluster}, {"name": "b", **cluster}]
        data["placement"] = placement
    else:
        data["cluster"] = {**cluster, "cores": 2 * cores, "memory": f"{cores * 8}g",
                           "workers": 2 * max(cores // 8, 1)}
    result = simulate(to_workload(parse_model(WorkloadConfig, data, "split.yaml"))).to_json()
    waits = [a["admitted"] - a["submitted"] for a in result["apps"] if a["admitted"] is not None]
    on = {}
    for a in result["apps"]:
        on[a.get("cluster")] = on.get(a.get("cluster"), 0) + 1
    s = result["summary"]
    return {"makespan": s["makespan"], "completed": s["completed"],
            "wait_mean": statistics.mean(waits), "wait_p95": sorted(waits)[int(0.95 * len(waits))],
            "mean_completion": s["mean_completion"], "utilization": s["utilization"], "on": on}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=32, help="C: each of the two clusters' cores")
    ap.add_argument("--apps", type=int, default=200)
    ap.add_argument("--span", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    workload_apps = apps(args.apps, args.span, args.seed)
    print(f"{args.apps} apps over {args.span:g} s (seed {args.seed}); one cluster of "
          f"{2 * args.cores} cores against two of {args.cores}")
    head = (f"{'clusters':<22} {'makespan':>9} {'done':>5} {'wait mean':>10} {'wait p95':>9} "
            f"{'completion':>11} {'util':>6}  apps per cluster")
    print(head)
    print("-" * len(head))
    rows = [("1 x 2C", False, "spill")] + [(f"2 x C, {p}", True, p)
                                          for p in ("spill", "most_free", "weighted")]
    base = None
    for label, split, placement in rows:
        r = run(args.cores, split, placement, workload_apps)
        base = base or r
        on = ", ".join(f"{k}: {v}" for k, v in sorted(r["on"].items()) if k) or "-"
        print(f"{label:<22} {r['makespan']:>9.0f} {r['completed']:>5} {r['wait_mean']:>10.1f} "
              f"{r['wait_p95']:>9.1f} {r['mean_completion']:>11.1f} {r['utilization']:>6.1%}  "
              f"{on}", flush=True)
    print("seconds; wait: admitted - submitted; completion: finished - submitted, mean; util: "
          "task core-seconds / (all cores x makespan).")


if __name__ == "__main__":
    main()
