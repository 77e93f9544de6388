"""A driver-heavy burst (burst-driver-heavy.yaml): the default admission mode against ``reserve``.

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/driver_heavy_burst.py   # examples/workloads/burst-driver-heavy.yaml
    .venv/bin/python benchmarks/driver_heavy_burst.py --apps 1000 --cores 2400

500 tiny apps submitted at once (each an in-cluster 1-core driver and one 1-core executor,
``max_executors: 1``) on a 1,200-core cluster, run in the simulator once per mode (every leaf
queue set to that mode; ``sessionsched simulate --admission MODE`` is one run). Columns:
makespan (first submission to last app ended); the last admission's time; admissions per
minute (apps admitted over the time from the first submission to the last admission, or
"all at t=0" when every app was admitted in the first cycle); the most apps admitted in one
cycle; ``default/reserve``, the default's makespan over ``reserve``'s (target: at most 1.10).
The simulator's clock is virtual: the figures are the same on any machine.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.model import Admission  # noqa: E402
from sessionsched.sim import load_workload, simulate  # noqa: E402
from sessionsched.sim.queue_trees import with_admission  # noqa: E402
from sessionsched.sim.workload import Workload  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "workloads"
WORKLOAD = EXAMPLES / "burst-driver-heavy.yaml"
MODES = (Admission.DEMAND, Admission.RESERVE, Admission.STATEAWARE)
TARGET = 1.10


def scaled(w: Workload, apps: int, cores: int) -> Workload:
    """The workload with ``apps`` copies of its first app and ``cores`` cores (memory scaled
    alike), so deeper bursts can be tried without another file."""
    first = w.apps[0]
    copies = tuple(replace(first, spec=replace(first.spec, app_id=f"tiny-{i:04d}", seq=i))
                   for i in range(apps))
    factor = cores / w.cluster.capacity.cores
    cluster = replace(w.cluster, capacity=replace(
        w.cluster.capacity, cores=cores, mem_mib=int(w.cluster.capacity.mem_mib * factor)))
    return replace(w, apps=copies, cluster=cluster)


def row(w: Workload, mode: Admission) -> dict:
    r = simulate(with_admission(w, mode))
    admitted = [a.admitted for a in r.apps if a.admitted is not None]
    last = max(admitted, default=0.0)
    per_cycle = Counter(admitted)
    return {"mode": mode.value, "makespan": r.summary["makespan"], "stuck": r.summary["stuck"],
            "admitted": len(admitted), "last": last,
            "per_min": None if last == 0 else len(admitted) / last * 60,
            "most": max(per_cycle.values(), default=0)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workload", nargs="?", type=Path, default=WORKLOAD)
    p.add_argument("--apps", type=int,
                   help="copies of the workload's first app (default: as written)")
    p.add_argument("--cores", type=int, help="cluster cores (default: as written)")
    args = p.parse_args(argv)
    w = load_workload(args.workload)
    if args.apps or args.cores:
        w = scaled(w, args.apps or len(w.apps), args.cores or w.cluster.capacity.cores)
    print(f"{args.workload.name}: {len(w.apps)} apps on {w.cluster.capacity.cores} cores")
    rows = {m: row(w, m) for m in MODES}
    print(f"{'mode':<17} {'makespan':>9} {'last admitted':>14} {'admissions/min':>15}"
          f" {'most in a cycle':>16}")
    for m, r in rows.items():
        name = f"{r['mode']}{' (default)' if m is Admission.DEMAND else ''}"
        span = f"stuck {r['stuck']}" if r["stuck"] else f"{r['makespan']:.0f} s"
        rate = "all at t=0" if r["per_min"] is None else f"{r['per_min']:.0f}"
        print(f"{name:<17} {span:>9} {r['last']:>12.0f} s {rate:>15} {r['most']:>16}")
    d, res = rows[Admission.DEMAND], rows[Admission.RESERVE]
    ratio = d["makespan"] / res["makespan"]
    ok = not d["stuck"] and ratio <= TARGET
    print(f"default/reserve makespan: {ratio:.2f} (target <= {TARGET:.2f}: "
          f"{'met' if ok else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
