"""``sessionsched simulate WORKLOAD.yaml [--config SERVER [--start WHEN]] [--json OUT]
[--plot OUT.png] [--admission MODE]``; ``sessionsched simulate --compare A.yaml B.yaml
[--config SERVER] [--config-a SERVER] [--config-b SERVER] [--start WHEN] [--json OUT]
[--plot OUT.png] [--admission MODE]``

Runs a workload through the discrete-event simulator (``sessionsched.sim``), which drives the
same engine as the server. Without ``--json`` it prints a table of the apps and the summary;
``--json OUT`` writes the result as JSON instead (``-`` for stdout); ``--plot`` draws
executors, states and queue lengths over time; ``--admission`` runs every leaf queue with one
admission mode instead of the file's; ``--config`` runs it under a server config's queues,
defaults and cluster instead of the file's (``sim/replay.py``), and with ``--start`` (the date
and time the run's 0 stands for) its time-of-day plans fire at their times in the run
(``sim/queue_trees.py``; default: the workload's ``start:``; without either they are not
run, and a line says so). ``--compare`` runs two (two workloads, or one twice under
``--config-a`` and ``--config-b``, each winning over ``--config`` for its side) and prints
them side by side (``sim/compare.py``); ``--json`` then writes both results and the
comparison, ``--plot`` draws both. A run with stuck apps is
a result, not an error: exit code 0. A bad workload or config: one line, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from rich import box
from rich.table import Table

from ..cli import UserError
from ..config.plan_times import aware, date_time
from ..model import Admission
from ..runtime.gc_pacer import GcPacer
from ..sim import SimResult, simulate
from ..sim.queue_trees import with_admission
from ..sim.replay import Replayed, load
from .console import console


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="run a workload through the scheduler on a simulated Spark cluster",
        description="Simulate a workload (YAML) on a simulated Spark standalone cluster driven "
        "by the real scheduler. Prints a table, or writes the result JSON with --json.",
    )
    p.add_argument("workload", metavar="WORKLOAD.yaml", nargs="?",
                   help="the workload file (not with --compare)")
    p.add_argument("--config", metavar="SERVER_CONFIG",
                   help="run under this server config's queues (with their admission), "
                   "defaults and cluster instead of the workload's; an app whose queue it "
                   "lacks runs in its default queue")
    p.add_argument("--start", metavar="WHEN",
                   help="with a config: the date and time the run's 0 stands for (ISO 8601, "
                   "2026-12-01T08:00; an offset optional, local time without), so that the "
                   "config's time-of-day plans fire at their times in the run (default: the "
                   "workload's start:, which from-eventlogs writes; without either they are "
                   "not run)")
    p.add_argument("--compare", nargs=2, metavar=("A.yaml", "B.yaml"),
                   help="run two workloads (or one, twice, with --config-a/--config-b) and "
                   "print them side by side: queue wait and completion per queue, "
                   "utilisation, fairness, usage, the apps that gain or lose most")
    p.add_argument("--config-a", metavar="SERVER_CONFIG",
                   help="with --compare: run A under this server config (wins over --config)")
    p.add_argument("--config-b", metavar="SERVER_CONFIG",
                   help="with --compare: run B under this server config (wins over --config)")
    p.add_argument("--json", metavar="OUT", help="write the result JSON here ('-' for stdout)")
    p.add_argument("--plot", metavar="OUT.png", help="draw executors, states and queues over time")
    p.add_argument("--admission", choices=[m.value for m in Admission],
                   help="run every leaf queue with this admission mode instead of the file's "
                   "(to compare modes; benchmarks/admission_table.py runs them all)")
    p.set_defaults(func=run)


def _writable(path: str, what: str) -> Path:
    if not path.strip():  # Path("") is the working directory: "is a directory" named no file
        raise UserError(f"{what}: the file name is empty")
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{what} {path}: is a directory")
    if not p.parent.exists():
        raise UserError(f"{what} {path}: directory {p.parent} does not exist")
    return p


def _plottable(path: str) -> Path:
    """Matplotlib draws in the format the name's suffix says (none: png); one it does not
    write was found only after the run, as a ValueError's traceback."""
    p = _writable(path, "--plot")
    suffix = p.suffix.removeprefix(".").lower()
    if suffix:
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # slow: only with --plot

        kinds = FigureCanvasAgg.get_supported_filetypes()
        if suffix not in kinds:
            raise UserError(f"--plot {path}: no format .{suffix} (one of {', '.join(kinds)})")
    return p


def _check(args: argparse.Namespace) -> None:
    if args.compare is None:
        if args.workload is None:
            raise UserError("give a WORKLOAD.yaml, or --compare A.yaml B.yaml")
        for flag, value in (("--config-a", args.config_a), ("--config-b", args.config_b)):
            if value is not None:
                raise UserError(f"{flag}: only with --compare (one run: --config)")
    elif args.workload is not None:
        raise UserError(f"{args.workload}: --compare takes both workloads itself "
                        "(--compare A.yaml B.yaml)")
    args.start_at = None if args.start is None else _start(args)


def _start(args: argparse.Namespace) -> datetime:
    if not (args.config or args.config_a or args.config_b):
        raise UserError("--start: runs a server config's plans: give --config too")
    try:
        return aware(date_time(args.start))
    except ValueError as e:
        raise UserError(f"--start: {e}") from None


def _load(path: str, config: str | None, admission: str | None,
          start: datetime | None = None) -> Replayed:
    replayed = load(path, config, start)
    if admission is None:
        return replayed
    return replace(replayed, workload=with_admission(replayed.workload, Admission(admission)))


def _run(replayed: Replayed, config: str | None) -> SimResult:
    with GcPacer():  # no full GC pass over a large run's books inside a cycle (``gc_pacer``)
        result = simulate(replayed.workload)
    for line in notes(replayed, config):
        print(line, file=sys.stderr)
    return result


def notes(replayed: Replayed, config: str | None) -> list[str]:
    """What the run under ``config`` left out or changed, a line each."""
    out = []
    moved = replayed.moved
    if moved:
        shown = ", ".join(moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
        out.append(f"{config}: {len(moved)} app(s) name a queue it lacks and run in its "
                   f"default queue: {shown}")
    if replayed.plans and not replayed.started:
        out.append(f"{config}: its {replayed.plans} time-of-day plan(s) did not run: give "
                   "--start WHEN (the date and time the run's 0 stands for) to run them")
    return out


def run(args: argparse.Namespace) -> int:
    _check(args)
    # Check where results go before a long run, not after.
    json_out = None if args.json in (None, "-") else _writable(args.json, "--json")
    plot_out = None if args.plot is None else _plottable(args.plot)
    if args.compare is not None:
        from .compare_text import run_compare

        return run_compare(args, json_out, plot_out)
    result = _run(_load(args.workload, args.config, args.admission, args.start_at), args.config)
    if args.json is not None:
        text = json.dumps(result.to_json(), indent=2) + "\n"
        if json_out is None:
            sys.stdout.write(text)
        else:
            _write(json_out, text, "--json")
    else:
        print_table(result, Path(args.workload).name)
    if result.executor_waits:
        print(
            f"warning: {result.executor_waits} granted executor(s) found no room in the cluster "
            "and waited: the scheduler promised cores twice",
            file=sys.stderr,
        )
    if plot_out is not None:
        from ..sim.plot import plot  # matplotlib is slow to import: only when asked

        try:
            plot(result, plot_out, title=Path(args.workload).name)
        except OSError as e:
            raise UserError(f"--plot {plot_out}: cannot write: {e.strerror or e}") from None
    return 0


def _write(path: Path, text: str, what: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise UserError(f"{what} {path}: cannot write: {e.strerror or e}") from None


def _t(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def _by_resource(summary: dict) -> str:
    """Beside the cores' utilization, the memory's and each custom resource's, where the
    cluster has one (a GPU queue's GPUs may be busy while its cores idle)."""
    by = summary.get("utilization_by_resource") or {}
    if set(by) <= {"cores", "memory"}:
        return ""
    return " (" + ", ".join(f"{k} {v:.1%}" for k, v in by.items() if k != "cores") + ")"


def print_table(result: SimResult, title: str) -> None:
    out = console()
    table = Table(
        title=title, box=box.SIMPLE_HEAD, caption="times in seconds from the start", pad_edge=False
    )
    where = ("cluster",) if result.several_clusters else ()
    for col in ("app", *where, "queue", "prio", "state", "submit", "admitted", "1st exec",
                "finished"):
        table.add_column(col, justify="left" if col in ("app", "cluster", "queue", "state")
                         else "right", no_wrap=True)
    for a in result.apps:
        style = None if a.state == "FINISHED" else "bold red"
        table.add_row(
            a.name,
            *((a.cluster or "-",) if where else ()),
            a.queue,
            str(a.priority),
            a.state,
            _t(a.submitted),
            _t(a.admitted),
            _t(a.first_executor),
            _t(a.finished),
            style=style,
        )
    out.print(table)
    s = result.summary
    e = result.engine
    lines = [
        f"makespan {_t(s['makespan'])} s   completed {s['completed']}   stuck {s['stuck']}",
        f"completion mean {_t(s['mean_completion'])} s   p95 {_t(s['p95_completion'])} s",
        f"utilization {s['utilization']:.1%}{_by_resource(s)}   fairness (Jain) "
        f"{_t(s['fairness_jain'])}",
        f"whole workers {_t(s['whole_workers'])} on average, {s['whole_workers_min']} at fewest",
        f"engine: {e['cycles']} cycles, {e['cycle_ms_p50']:g} ms p50, {e['cycle_ms_max']:g} ms max",
        f"run ended at t={result.end_s:g}s: {result.end_reason}",
        *(f"t={at:g}s: {plan} fired" for at, plan in result.plans),
    ]
    for line in lines:
        out.print(line, highlight=False)
