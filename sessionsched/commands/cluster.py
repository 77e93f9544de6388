"""``sessionsched cluster up|down|status``: a real local Spark standalone cluster from
pyspark's bundled Spark (``backends.local.LocalCluster``), recorded in a directory.

``up`` returns once every worker is ALIVE (or fails, leaving nothing running) and prints the
master URL, the master UI and the REST URL; the processes keep running after it returns.
``down`` stops only the processes ``up`` recorded, each only if it is still that process.
``status`` exits 0 when the master answers, 1 when the recorded cluster is not reachable.
``status --server URL`` asks a scheduler instead: the clusters it serves, as it last saw
them (behind several, one line each), exit 1 when one of them is unreachable.
"""

from __future__ import annotations

import argparse
import json

from ..backends.local import DEFAULT_DIR, ClusterError, ClusterStatus, LocalCluster
from ..cli import UserError
from ..client import SERVER_ENV
from ..runtime.host_room import measure as measure_host
from .client_cmds import add_connection_options, call, print_json


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster", help="a local Spark standalone cluster (up, down, status)",
        description="A real Spark standalone cluster on 127.0.0.1 from pyspark's bundled Spark.",
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="start a master and workers; wait until they are ALIVE")
    up.add_argument("--workers", type=int, default=1, metavar="N", help="default 1")
    up.add_argument("--cores", type=int, default=2, metavar="C",
                    help="cores each worker offers (may exceed the machine's); default 2")
    up.add_argument("--memory", default="2g", metavar="M",
                    help="memory each worker offers, e.g. 512m or 4g; default 2g")
    up.add_argument("--port", type=int, default=7077, metavar="P",
                    help="master port; default 7077 (the REST server listens on P+1)")
    up.add_argument("--ui-port", type=int, default=8080, metavar="U",
                    help="master web UI port; default 8080")
    up.add_argument("--rest-port", type=int, default=None, metavar="R",
                    help="master REST submission port; default P+1 (never 6066, sessionsched's)")
    up.add_argument("--recovery", action="store_true",
                    help="the master keeps its workers, apps and drivers in DIR/recovery, so a "
                         "master started again takes back what ran (Spark's FILESYSTEM "
                         "recovery mode)")
    up.add_argument("--timeout", type=float, default=120.0, metavar="S",
                    help="seconds to wait for the workers; default 120")
    down = sub.add_parser("down", help="stop the cluster `up` started")
    status = sub.add_parser("status", help="workers, cores, memory and apps of the cluster; "
                            "with --server, the clusters a scheduler serves")
    status.add_argument("--json", action="store_true", help="print JSON")
    add_connection_options(status)
    for action in status._actions:  # only as given: without it, the local cluster's status
        if action.dest == "server":
            action.help = ("ask the scheduler at URL for the clusters it serves instead (not "
                           f"${SERVER_ENV}: without --server, the local cluster)")
    for q in (up, down, status):
        q.add_argument("--dir", default=str(DEFAULT_DIR), metavar="D",
                       help=f"where the local cluster is recorded; default {DEFAULT_DIR}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return {"up": _up, "down": _down, "status": _status}[args.action](args)
    except ClusterError as e:
        raise UserError(str(e)) from None


def _up(args: argparse.Namespace) -> int:
    cluster = LocalCluster(args.dir, workers=args.workers, cores=args.cores, memory=args.memory,
                           port=args.port, ui_port=args.ui_port, rest_port=args.rest_port,
                           start_timeout_s=args.timeout, recovery=args.recovery)
    cluster.start()
    print(f"master   {cluster.master_url}")
    print(f"web UI   {cluster.master_ui}")
    print(f"REST     {cluster.rest_url}  (cluster deploy mode submissions)")
    print(f"workers  {args.workers} x {args.cores} cores, {args.memory}   (logs in {args.dir})")
    return 0


def _down(args: argparse.Namespace) -> int:
    cluster = LocalCluster.load(args.dir)
    stopped = cluster.stop()
    print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    if args.server:
        return call(args, lambda client: _served(client.cluster(), args.json))
    status = LocalCluster.load(args.dir).status()
    host = measure_host()  # this host: where a scheduler started here runs client-mode drivers
    if args.json:
        print(json.dumps({**status.as_json(), "driver_host": {
            "cores": host.cores, "memory_mib": host.mem_mib, "source": host.source,
            "for_drivers_mib": host.for_drivers.mem_mib}}, indent=1))
    else:
        print(_text(status))
        print(f"host     {host.describe()}")
    return 0 if status.reachable else 1


def _served(row: dict, as_json: bool) -> int:
    if as_json:
        print_json(row)
    else:
        print("\n".join(served_lines(row)))
    clusters = row.get("clusters") or [row]
    return 0 if all(c["reachable"] for c in clusters) else 1


def served_lines(row: dict) -> list[str]:
    """A scheduler's ``GET /api/v1/cluster`` as ``status --server`` prints it: its one cluster,
    or each of several with its apps."""
    lines = [f"cluster  {row['cluster']}"]
    several = row.get("clusters")
    if several:
        lines.append(f"{'CLUSTER':<12} {'REACHABLE':<10} {'CORES':>6} {'MEMORY':>10} "
                     f"{'RUNNING':>8} {'QUEUED':>7}")
        lines += [f"{c['name']:<12} {'yes' if c['reachable'] else 'NO':<10} {c['cores']:>6} "
                  f"{c['memory_mib']:>7} MiB {c['running']:>8} {c['queued']:>7}"
                  for c in several]
    else:
        lines.append(f"workers  {len(row['workers'])}, {row['cores']} cores, "
                     f"{row['memory_mib']} MiB")
    return lines


def _text(s: ClusterStatus) -> str:
    lines = [f"master   {s.master_url}   web UI {s.master_ui}   REST {s.rest_url}"]
    lines.append("processes " + ", ".join(
        f"{p.role} (pid {p.pid}, {'running' if p.running else 'gone'})" for p in s.processes))
    if not s.reachable:
        lines.append(f"master not reachable: {s.error}")
        return "\n".join(lines)
    alive = [w for w in s.workers if w.alive]
    lines.append(f"workers  {len(alive)} alive of {len(s.workers)}")
    for w in s.workers:
        lines.append(f"  {w.id}  {w.state:<6} cores {w.cores_used}/{w.cores} used  "
                     f"memory {w.memory_used_mib}/{w.memory_mib} MiB used  UI {w.webui}")
    lines.append(f"apps     {len(s.apps)} running")
    for a in s.apps:
        lines.append(f"  {a.id}  {a.name}  cores {a.cores}  user {a.user}")
    running = [d for d in s.drivers if d.exit_code is None]
    if running:
        lines.append(f"drivers  {len(running)} in the cluster")
        for d in running:
            lines.append(f"  {d.id}  {d.state}  cores {d.cores}  memory {d.memory_mib} MiB")
    return "\n".join(lines)
