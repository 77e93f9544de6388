"""Every workload under every admission mode: makespan, utilisation, deadlocks.

Not a test: it prints a table (``--markdown`` for docs/design/admission.md). Usage::

    .venv/bin/python benchmarks/admission_table.py                 # examples/workloads/*.yaml
    .venv/bin/python benchmarks/admission_table.py --markdown
    .venv/bin/python benchmarks/admission_table.py --fraction 0.5  # another max_driver_fraction
    .venv/bin/python benchmarks/admission_table.py a.yaml b.yaml

Each workload runs in the simulator once per mode, with every leaf queue's ``admission`` set to
that mode (the rest of the file as written; ``sessionsched simulate --admission MODE`` is one of
these runs). Columns per mode: makespan in seconds (``stuck`` when some app never ended: the
run ends as a deadlock, or at ``max_time_s``) and utilisation (core-seconds running tasks over
cores x makespan). ``demand/best``: the ``demand`` makespan over the better of ``stateaware``
and ``reserve``, rounded *up* to two decimals, so the figure printed is the one judged: the
target is at most 1.10 on every workload (a printed 1.10 is a pass, never a rounded-down 1.104),
and no deadlock. Exit code 1 when a workload misses it, so a change that breaks the target
shows.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.model import Admission, Queue  # noqa: E402
from sessionsched.sim import load_workload, simulate  # noqa: E402
from sessionsched.sim.queue_trees import with_admission  # noqa: E402
from sessionsched.sim.workload import Workload  # noqa: E402

MODES = (Admission.STATEAWARE, Admission.RESERVE, Admission.DEMAND, Admission.NONE)
TARGET = 1.10
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "workloads"


def run(workload: Workload, mode: Admission) -> dict:
    r = simulate(with_admission(workload, mode))
    s = r.summary
    return {"makespan": s["makespan"], "utilization": s["utilization"], "stuck": s["stuck"],
            "failed": s["failed"], "deadlock": r.end_reason.startswith("deadlock")}


def with_fraction(workload: Workload, fraction: float) -> Workload:
    def rebuild(q: Queue) -> Queue:
        return replace(q, max_driver_fraction=fraction,
                       children=tuple(rebuild(c) for c in q.children))

    return replace(workload, root=rebuild(workload.root))


def ratio(rows: dict[Admission, dict]) -> float | None:
    """demand's makespan over the better of stateaware and reserve, rounded up to two decimals
    (the figure shown is the figure judged); None if demand is stuck."""
    best = [rows[m]["makespan"] for m in (Admission.STATEAWARE, Admission.RESERVE)
            if not rows[m]["stuck"]]
    if rows[Admission.DEMAND]["stuck"]:
        return None
    if not best:
        return 0.0  # both stuck, demand not: better than either
    exact = rows[Admission.DEMAND]["makespan"] / min(best)
    return math.ceil(round(exact * 100, 6)) / 100  # round() first: 1.1 * 100 is 110.00000000000001


def cell(row: dict) -> str:
    if row["stuck"]:
        return f"stuck {row['stuck']}" + (" (deadlock)" if row["deadlock"] else "")
    return f"{row['makespan']:g} s, {row['utilization']:.0%}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workloads", nargs="*", help="workload files (default: examples/workloads)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--fraction", type=float, help="max_driver_fraction of every queue")
    args = p.parse_args(argv)
    paths = [Path(w) for w in args.workloads] or sorted(EXAMPLES.glob("*.yaml"))
    header = ["workload", *(m.value for m in MODES), "demand/best"]
    lines = []
    missed = []
    for path in paths:
        w = load_workload(path)
        if args.fraction is not None:
            w = with_fraction(w, args.fraction)
        rows = {m: run(w, m) for m in MODES}
        q = ratio(rows)
        if q is None or q > TARGET:
            missed.append(path.stem)
        lines.append([path.stem, *(cell(rows[m]) for m in MODES),
                      "stuck" if q is None else f"{q:.2f}"])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
        for line in [header, *lines]:
            print("  ".join(c.ljust(wd) for c, wd in zip(line, widths, strict=True)))
    if missed:
        print(f"demand misses the target ({TARGET:.2f} x the better of stateaware and reserve, "
              f"no stuck app) on: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
