"""``sessionsched usage [--by queue|user|app|cluster] [--since 7d] [--until T] [--json|--csv]``:
what apps used -- core- and GiB-seconds held, busy, idle, lost to reclaim, their drivers', time
queued -- per app or added up per queue, user or cluster (``GET /api/v1/usage``;
docs/operator/usage.md)."""

from __future__ import annotations

import argparse
import csv
import sys

from ..client import SchedulerClient
from .client_cmds import add_connection_options, call, print_json

FIGURES = ("held_core_s", "busy_core_s", "idle_core_s", "reclaimed_core_s",
           "reclaimed_executors", "held_gib_s", "driver_core_s", "driver_gib_s", "queued_s")
KEYS = {"app": ("app", "queue", "user", "state"), "queue": ("queue",), "user": ("user",),
        "cluster": ("cluster",)}
# Each custom resource's figures (a GPU: ``gpu_held_s``...), after the cores' and memory's.
RESOURCE_FIGURES = ("held_s", "busy_s", "idle_s", "reclaimed_s", "driver_s")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "usage", help="what apps used: core-seconds held, busy, idle, lost to reclaim",
        description="Show what apps used (docs/operator/usage.md): core- and GiB-seconds their "
        "executors held, the part busy running tasks and the part idle, task work lost to "
        "reclaim, their drivers' core- and GiB-seconds and time queued, and the same in "
        "resource-seconds for each custom resource (GPUs: gpu_held_s...); per app or added up "
        "per queue, user or cluster. --by app: the apps in the books at some time between "
        "--since and --until, each counted whole (behind several clusters, with the cluster "
        "it was placed on); --by cluster: those apps added up per cluster (- : never "
        "placed); --by queue|user: the hourly rollup's hours that start in the window (from "
        "the hour --since falls in). A user sees their own apps, an admin everyone's.")
    p.add_argument("--by", choices=("queue", "user", "app", "cluster"), default="queue",
                   help="one line per queue (default), user, app or cluster")
    p.add_argument("--since", metavar="T",
                   help="from this time: 7d, 12h, 30m, epoch seconds or ISO 8601 (default: all)")
    p.add_argument("--until", metavar="T", help="up to this time, same forms (default: now)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the server's JSON list")
    out.add_argument("--csv", action="store_true", help="print CSV with a header line")
    add_connection_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    def action(client: SchedulerClient) -> int:
        lines = client.usage(args.by, args.since, args.until)
        keys = KEYS[args.by]
        if args.by == "app" and any("cluster" in line for line in lines):  # several clusters
            keys = (*keys, "cluster")
        columns = (*keys, "apps", *FIGURES, *resource_columns(lines))
        if args.json:
            print_json(lines)
        elif args.csv:
            w = csv.writer(sys.stdout, lineterminator="\n")
            w.writerow(columns)
            w.writerows([line.get(c, "") for c in columns] for line in lines)
        else:
            print_table(columns, [[str(line.get(c, "")) for c in columns] for line in lines])
        return 0

    return call(args, action)


def resource_columns(lines: list[dict]) -> tuple[str, ...]:
    """The custom resources' columns the lines have (none for a cluster without any): a
    line names a resource by its ``{name}_held_s`` figure."""
    names = sorted({k.removesuffix("_held_s") for line in lines for k in line
                    if k.endswith("_held_s") and k not in FIGURES})
    return tuple(f"{n}_{f}" for n in names for f in RESOURCE_FIGURES)


def print_table(columns: tuple[str, ...], rows: list[list[str]]) -> None:
    """Columns aligned, whole (a table this wide is read in a wide terminal or a pipe: no
    header is cut short), names left and figures right."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    left = {i for i, c in enumerate(columns) if c in ("app", "queue", "user", "state", "cluster")}

    def fmt(cells) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    print(fmt(columns))
    for r in rows:
        print(fmt(r))
