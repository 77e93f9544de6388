"""``sessionsched simulate --compare A.yaml B.yaml``: both runs, and the comparison
(``sim/compare.py``) as tables -- or as JSON with ``--json``, and drawn with ``--plot``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from ..cli import UserError
from ..sim.compare import compare
from .console import console


def label(path: str, config: str | None) -> str:
    name = Path(path).name
    return name if config is None else f"{name} under {Path(config).name}"


def run_compare(args: argparse.Namespace, json_out: Path | None, plot_out: Path | None) -> int:
    from .simulate import _load, _run, _write

    path_a, path_b = args.compare
    config_a = args.config_a or args.config
    config_b = args.config_b or args.config
    labels = (label(path_a, config_a), label(path_b, config_b))
    # Both loaded (and checked) before either runs: a bad B is said at once.
    start = args.start_at
    loaded = (_load(path_a, config_a, args.admission, start),
              _load(path_b, config_b, args.admission, start))
    a, b = _run(loaded[0], config_a), _run(loaded[1], config_b)
    figures = compare(a, b)
    if args.json is not None:
        doc = {"a": {"label": labels[0], **a.to_json()}, "b": {"label": labels[1], **b.to_json()},
               "compare": figures}
        text = json.dumps(doc, indent=2) + "\n"
        if json_out is None:
            sys.stdout.write(text)
        else:
            _write(json_out, text, "--json")
    else:
        print_compare(figures, labels)
    for side, r in zip("AB", (a, b), strict=True):
        if r.executor_waits:
            print(f"warning: {side}: {r.executor_waits} granted executor(s) found no room in the "
                  "cluster and waited: the scheduler promised cores twice", file=sys.stderr)
    if plot_out is not None:
        from ..sim.plot import plot_pair  # matplotlib is slow to import: only when asked

        try:
            plot_pair(a, b, plot_out, titles=(f"A: {labels[0]}", f"B: {labels[1]}"))
        except OSError as e:
            raise UserError(f"--plot {plot_out}: cannot write: {e.strerror or e}") from None
    return 0


def _v(x: Any, pct: bool = False) -> str:
    if x is None:
        return "-"
    if pct:
        return f"{x:.1%}"
    return f"{x:g}" if isinstance(x, (int, float)) else str(x)


def _delta(a: Any, b: Any, pct: bool = False) -> str:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return "-"
    d = b - a
    if pct:
        return f"{d * 100:+.1f} pt"
    return f"{round(d, 3):+g}"


def _table(title: str, first: str) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, min_width=60)
    table.add_column(first, no_wrap=True)
    for col in ("A", "B", "B - A"):
        table.add_column(col, justify="right")
    return table


def print_compare(figures: dict[str, Any], labels: tuple[str, str]) -> None:
    out = console()
    for side, text in zip("AB", labels, strict=True):
        out.print(f"{side}: {text}", highlight=False)
    summary = _table("summary (times in seconds)", "")
    for key, ab in figures["summary"].items():
        pct = key == "utilization"
        summary.add_row(key, _v(ab["a"], pct), _v(ab["b"], pct), _delta(ab["a"], ab["b"], pct))
    out.print(summary)
    queues = _table("per queue: queue wait and completion (s)", "queue")
    for q, ab in figures["queues"].items():
        a, b = ab["a"], ab["b"]
        queues.add_row(f"{q} ({a['apps']}|{b['apps']} apps)", "", "", "")
        for key in ("mean_wait", "p95_wait", "mean_completion", "p95_completion"):
            queues.add_row(f"  {key}", _v(a[key]), _v(b[key]), _delta(a[key], b[key]))
    out.print(queues)
    usage = _table("usage, summed over the apps (s, core-s)", "")
    for key, x in figures["usage"]["a"].items():
        y = figures["usage"]["b"][key]
        usage.add_row(key, _v(x), _v(y), _delta(x, y))
    out.print(usage)
    for title, rows in (("apps that gain most in B", figures["gains"]),
                        ("apps that lose most in B", figures["losses"])):
        if not rows:
            out.print(f"{title}: none", highlight=False)
            continue
        table = _table(f"{title}: completion (s)", "app")
        for r in rows:
            table.add_row(r["name"], _v(r["completion_a"]) if r["completion_a"] is not None
                          else r["state_a"], _v(r["completion_b"]) if r["completion_b"]
                          is not None else r["state_b"],
                          "-" if r["delta_s"] is None else f"{r['delta_s']:+g}")
        out.print(table)
