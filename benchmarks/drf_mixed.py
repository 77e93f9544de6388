"""Dominant-resource fair share against cores-only fairshare on a mixed GPU/CPU workload, in
the simulator (``engine.arbitration.drf``).

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/drf_mixed.py
    .venv/bin/python benchmarks/drf_mixed.py --gpu-apps 3 --cpu-apps 8   # one mix

The cluster: 2 GPU workers (8 cores, 32 GiB, 2 GPUs each) and 6 plain ones (8 cores, 32 GiB):
64 cores, 4 GPUs. One ``fairshare`` queue; GPU training apps (executors of 2 cores, 8 GiB and
1 GPU, up to 4) and CPU ETL apps (2 cores, 8 GiB, up to 16) submitted a minute apart, in
turn. Both runs play the same workload on the same engine; cores-only is the engine with DRF
switched off (``drf.DOMINANT = False``, a private switch for this comparison: the division
levels cores and ignores the GPUs, as fairshare did before DRF - the GPU apps' executors still
fit only where the GPUs are).

Columns: ``gpu util``: GPU-seconds held by executors / (GPUs x makespan); ``core util``: the
simulator's utilisation (core-seconds running tasks / (cores x makespan)); ``jain``: Jain's
index of the apps' slowdowns (``sim.result``); ``gpu wait``: the GPU apps' mean time from
submission to first executor; ``gpu done``: their mean completion; ``cpu done``: the CPU
apps'; ``makespan``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.engine.arbitration import drf  # noqa: E402
from sessionsched.sim import simulate  # noqa: E402
from sessionsched.sim.workload import WorkloadConfig, to_workload  # noqa: E402

MIXES = ((2, 2), (2, 6))  # (GPU apps, CPU apps)
GPU_CONF = {"spark.executor.resource.gpu.amount": "1", "spark.task.resource.gpu.amount": "1"}


def workload(gpu_apps: int, cpu_apps: int, gap_s: float):
    apps = []
    kinds = ["gpu"] * gpu_apps + ["cpu"] * cpu_apps
    order = sorted(range(len(kinds)), key=lambda i: (i % max(gpu_apps, 1), kinds[i]))
    for n, i in enumerate(order):
        kind = kinds[i]
        app = {"name": f"{kind}-{i}", "queue": "ml", "submit": n * gap_s,
               "executor": {"cores": 2, "memory": "8g"}}
        if kind == "gpu":
            app.update(max_executors=4, conf=GPU_CONF,
                       stages=[{"tasks": 60, "task_s": 40}])
        else:
            app.update(max_executors=16, stages=[{"tasks": 320, "task_s": 30}])
        apps.append(app)
    return to_workload(WorkloadConfig.model_validate({
        "cluster": {"worker_groups": [
            {"count": 2, "cores": 8, "memory": "32g", "resources": {"gpu": 2}},
            {"count": 6, "cores": 8, "memory": "32g"}],
            "driver_slots": 16, "driver_start_s": 5, "executor_start_s": 3,
            "executor_idle_timeout_s": 30},
        "queues": [{"name": "root", "queues": [{"name": "ml", "policy": "fairshare"}]}],
        "apps": apps}))


def run(dominant: bool, gpu_apps: int, cpu_apps: int, gap_s: float) -> dict:
    drf.DOMINANT = dominant
    try:
        r = simulate(workload(gpu_apps, cpu_apps, gap_s))
    finally:
        drf.DOMINANT = True
    end = r.summary["makespan"]
    gpus = [a for a in r.apps if a.name.startswith("gpu")]
    cpus = [a for a in r.apps if a.name.startswith("cpu")]
    gpu_s = sum(r.timeline.executors[a.name].mean(end) * end for a in gpus)  # 1 GPU each

    def done(apps):
        return statistics.mean(a.finished - a.submitted for a in apps if a.finished is not None)

    return {"gpu util": gpu_s / (4 * end), "core util": r.summary["utilization"],
            "jain": r.summary["fairness_jain"],
            "gpu wait": statistics.mean(a.first_executor - a.submitted for a in gpus),
            "gpu done": done(gpus), "cpu done": done(cpus), "makespan": end,
            "stuck": r.summary["stuck"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-apps", type=int, default=None, help="one mix of this many")
    ap.add_argument("--cpu-apps", type=int, default=None, help="and this many")
    ap.add_argument("--gap", type=float, default=60.0, help="seconds between submissions")
    args = ap.parse_args()
    mixes = ([(args.gpu_apps or 2, args.cpu_apps or 2)]
             if args.gpu_apps is not None or args.cpu_apps is not None else MIXES)
    print(f"GPU and CPU apps in one fairshare queue, {args.gap:g} s apart; 64 cores, 4 GPUs")
    head = (f"{'mix':<10} {'division':<11} {'gpu util':>8} {'core util':>9} {'jain':>6} "
            f"{'gpu wait':>8} {'gpu done':>8} {'cpu done':>8} {'makespan':>8}")
    print(head)
    print("-" * len(head))
    for gpu_apps, cpu_apps in mixes:
        for name, dominant in (("cores-only", False), ("DRF", True)):
            m = run(dominant, gpu_apps, cpu_apps, args.gap)
            print(f"{f'{gpu_apps} + {cpu_apps}':<10} {name:<11} {m['gpu util']:>8.1%} "
                  f"{m['core util']:>9.1%} {m['jain']:>6.3f} {m['gpu wait']:>7.0f}s "
                  f"{m['gpu done']:>7.0f}s {m['cpu done']:>7.0f}s {m['makespan']:>7.0f}s"
                  + (f"  ({m['stuck']} stuck)" if m["stuck"] else ""), flush=True)
    print("mix: GPU apps + CPU apps; times are means over the apps of each kind;"
          " completion = finished - submitted")


if __name__ == "__main__":
    main()
