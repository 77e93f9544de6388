"""``sessionsched demo``: see the scheduler work on a real Spark cluster, in a few minutes.

What it does, in order:

1. starts a local Spark standalone cluster from pyspark's own Spark (``LocalCluster``) -- or,
   with ``--backend memory``, no Spark at all: the scheduler runs on the memory cluster
   (``backends/memory``), where each app's sleeping stages become its simulated work, and the
   whole demo takes seconds -- and the scheduler (a child ``sessionsched serve`` on a free
   127.0.0.1 port) with a temporary state directory and two queues: ``root.etl`` (stateaware,
   executors by priority) and ``root.adhoc`` (fairshare), and only ``DRIVER_SLOTS`` driver
   slots so queueing is visible;
2. submits a burst of example PySpark apps (``examples/apps/sleep_tasks.py``: tasks that sleep,
   so a 2-core machine behaves like a big one) with different priorities into both queues;
3. raises the priority of the last queued ETL app: it jumps ahead in its queue;
4. shows the apps move through the queues live, then a summary: start order against
   submission order, wait and run times, exit codes;
5. cleans up everything it started — the apps (killed through the scheduler: their drivers run
   in their own sessions and would outlive it), the scheduler, the cluster — also on Ctrl-C or
   failure. ``--keep DIR`` keeps the state directory and logs there.

``--clusters 2``: the same on two clusters behind the one scheduler (``demo_clusters``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from ..cli import UserError
from ..client import App, SchedulerClient, SchedulerError
from ..model import AppState
from . import demo_clusters as two
from ._serverproc import ServerProcess, ServerStartError
from .client_cmds import app_table, plain, user_error
from .console import console
from .submit import plan_submission, wrapper_parser

APP_FILE = Path(__file__).resolve().parents[2] / "examples" / "apps" / "sleep_tasks.py"
DRIVER_SLOTS = 2
BOOST_PRIORITY = 9000
POLL_S = 0.5


@dataclass(frozen=True)
class DemoApp:
    name: str
    queue: str
    priority: int
    args: tuple[str, ...]  # sleep_tasks.py arguments
    boost: bool = False  # raised to BOOST_PRIORITY while it waits


# Submitted in this order. Tasks sleep, so the run times hardly depend on the machine; what
# costs time on a small box is starting JVMs, hence five apps. etl-urgent is submitted last
# with the lowest priority and raised while etl-daily starts: it overtakes etl-report.
BURST = (
    DemoApp("etl-daily", "root.etl", 5000, ("--startup-s", "2", "--stages", "4x2")),
    DemoApp("adhoc-query", "root.adhoc", 5000, ("--stages", "2x2")),
    DemoApp("etl-report", "root.etl", 4000, ("--stages", "2x2", "--exit-code", "3")),
    DemoApp("adhoc-explore", "root.adhoc", 7000, ("--stages", "2x2")),
    DemoApp("etl-urgent", "root.etl", 1000, ("--stages", "2x2"), boost=True),
)


# Small executors and drivers: the whole demo fits in a 2-core, few-GB machine.
DEMO_CONF = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    "spark.dynamicAllocation.maxExecutors": "2",
    "spark.ui.port": "0",  # any free port: several drivers at once, none on 4040
}


def demo_config(master: str | None, master_ui: str | None, state_dir: Path) -> dict:
    """The scheduler's config (ServerProcess picks the port); no master: the memory backend,
    a cluster like ``start_cluster``'s."""
    cluster: dict = {"backend": "standalone", "master": master, "master_ui": master_ui}
    if master is None:
        cluster = {"backend": "memory", "workers": 1, "cores": 2, "memory": "2g"}
    return {
        "server": {"state_dir": str(state_dir), "cycle_ms": 200},
        "cluster": {**cluster, "driver_slots": DRIVER_SLOTS},
        "defaults": {"queue": "root.etl", "priority": 5000},
        "queues": [{"name": "root", "queues": [
            {"name": "etl", "admission": "stateaware", "policy": "priority"},
            {"name": "adhoc", "admission": "stateaware", "policy": "fairshare"},
        ]}],
    }


def memory_conf(args: tuple[str, ...]) -> dict[str, str]:
    """sleep_tasks.py's arguments as the memory cluster's work properties (``--startup-s``,
    ``--stages``, ``--exit-code``: ``backends/memory/job.py``)."""
    from ..backends.memory import EXIT_CODE, STARTUP, WORK

    keys = {"--startup-s": STARTUP, "--stages": WORK, "--exit-code": EXIT_CODE}
    return {keys[flag]: value for flag, value in zip(args[::2], args[1::2], strict=True)}


def submit_burst(client: SchedulerClient, workdir: Path,
                 memory: bool = False) -> dict[str, DemoApp]:
    """Submit BURST through the same path as ``sessionsched submit``; id -> app."""
    ids: dict[str, DemoApp] = {}
    for app in BURST:
        wrapper = wrapper_parser().parse_args(
            ["--queue", app.queue, "--priority", str(app.priority)]
        )
        argv = ["--name", app.name]
        conf = {**DEMO_CONF, **(memory_conf(app.args) if memory else {})}
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        argv += [str(APP_FILE), *app.args]
        # The drivers and executors run this Python, which has pyspark.
        sub = plan_submission(wrapper, argv, {"PYSPARK_PYTHON": sys.executable}, str(workdir))
        ids[client.submit(sub).id] = app
    return ids


# --- following the apps ----------------------------------------------------------------------


def snapshot(client: SchedulerClient, ids: dict[str, DemoApp]) -> list[App]:
    by_id = {a.id: a for a in client.apps() if a.id in ids}
    return [by_id[i] for i in ids if i in by_id]


def boost(client: SchedulerClient, ids: dict[str, DemoApp], say) -> str | None:
    """Raise the boosted app's priority if it is still queued; says (and returns) what moved."""
    for app_id, demo in ids.items():
        if not demo.boost:
            continue
        before = client.app(app_id)
        if before.state is not AppState.ACCEPTED:
            say(f"{demo.name} had already left the queue; no priority change")
            return None
        after = client.set_priority(app_id, BOOST_PRIORITY)
        line = (
            f"raised {demo.name} from priority {before.priority} to {after.priority}: "
            f"position {before.position} -> {after.position} in {after.queue}"
        )
        say(line)
        return line
    return None


def follow(client: SchedulerClient, ids: dict[str, DemoApp], out: Console, timeout_s: float):
    """Show the apps until all have ended (or timeout_s); returns their last snapshot."""
    deadline = time.monotonic() + timeout_s
    started = time.monotonic()
    boosted = False
    seen: dict[str, AppState] = {}
    apps: list[App] = []

    def say(line: str) -> None:
        out.print(f"[{time.monotonic() - started:6.1f}s] {line}", markup=False)

    live = Live(console=out, refresh_per_second=4, transient=True) if out.is_terminal else None
    if live:
        live.start()
    try:
        while time.monotonic() < deadline:
            apps = snapshot(client, ids)
            for a in apps:
                if seen.get(a.id) is not a.state:
                    exit_note = f" (exit code {a.exit_code})" if a.state.terminal else ""
                    on = f" on {a.raw['cluster']}" if a.raw.get("cluster") else ""
                    say(f"{a.name:<14} {a.state.value}{on}{exit_note}")
                    seen[a.id] = a.state
            if not boosted and _boost_is_visible(apps, ids):
                boosted = True
                boost(client, ids, say)
                apps = snapshot(client, ids)
            if live:
                live.update(app_table(apps, title="sessionsched demo — apps"))
            if apps and all(a.state.terminal for a in apps):
                return apps
            time.sleep(POLL_S)
    finally:
        if live:
            live.stop()
    raise UserError(f"the demo apps did not all finish within {timeout_s:g}s")


def _boost_is_visible(apps: list[App], ids: dict[str, DemoApp]) -> bool:
    """Raise the priority only once the boosted app visibly waits: its queue has an app
    started ahead of it and it has a place in line (the first cycle has placed it)."""
    boosted = [a for a in apps if ids[a.id].boost]
    if len(apps) < len(ids) or not boosted:
        return False
    b = boosted[0]
    if b.state is not AppState.ACCEPTED:
        return True  # too late to show a jump; boost() says so
    started = any(a.queue == b.queue and a.state is not AppState.ACCEPTED for a in apps)
    return started and b.position is not None


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _seconds(a, b) -> str:
    return f"{(b - a).total_seconds():.1f}" if a and b else "-"


def summary_table(apps: list[App], ids: dict[str, DemoApp]) -> Table:
    submitted = {app_id: n for n, app_id in enumerate(ids, 1)}  # ids is in submission order
    order = sorted(apps, key=lambda a: (a.started_at is None, a.started_at or a.submitted_at))
    table = Table(title="summary (in start order)", box=None, header_style="bold")
    several = any("cluster" in a.raw for a in apps)  # as app_table: named behind several
    for col in ("STARTED", "SUBMITTED", "NAME", "QUEUE", *(("CLUSTER",) if several else ()),
                "PRIO", "WAIT s", "RUN s", "STATE", "EXIT"):
        table.add_column(col, no_wrap=True)
    for n, a in enumerate(order, 1):
        table.add_row(
            *plain(
                str(n) if a.started_at else "-",
                str(submitted[a.id]),
                a.name,
                a.queue,
                *((a.raw.get("cluster") or "-",) if several else ()),
                str(a.priority),
                _seconds(a.submitted_at, a.started_at),
                _seconds(a.started_at, a.finished_at),
                a.state.value,
                "-" if a.exit_code is None else str(a.exit_code),
            )
        )
    return table


# --- setup and teardown ----------------------------------------------------------------------


def start_cluster(workdir: Path):
    """A LocalCluster from pyspark's Spark (sessionsched.backends.local), started."""
    from ..backends.local import LocalCluster

    cluster = LocalCluster(workdir / "cluster", workers=1, cores=2, memory="2g")
    cluster.start()
    return cluster


def stop_apps(client: SchedulerClient, ids: dict[str, DemoApp], timeout_s: float = 60) -> None:
    """Kill every demo app that has not ended and wait until the scheduler has seen them go:
    their drivers run in their own process sessions and would outlive the scheduler."""
    deadline = time.monotonic() + timeout_s
    try:
        for app_id in ids:
            try:
                if not client.app(app_id).state.terminal:
                    client.kill(app_id)
            except SchedulerError:
                pass  # ended meanwhile (409) — nothing to kill
        while time.monotonic() < deadline:
            if all(client.app(i).state.terminal for i in ids):
                return
            time.sleep(POLL_S)
    except SchedulerError as e:
        print(f"sessionsched demo: could not stop the demo apps: {e}", file=sys.stderr)


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    out = console()
    if not APP_FILE.is_file():
        raise UserError(f"the demo app {APP_FILE} is missing (run the demo from a source checkout)")
    workdir = (
        Path(args.keep).resolve()
        if args.keep
        else Path(tempfile.mkdtemp(prefix="sessionsched-demo-"))
    )
    workdir.mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    server = None
    clusters: list = []  # every LocalCluster that may run: each stopped at the end
    succeeded = False
    ids: dict[str, DemoApp] = {}
    client: SchedulerClient | None = None
    try:
        out.print(f"sessionsched demo — working in {workdir}", style="bold", markup=False)
        state_dir = workdir / "state"
        say = partial(out.print, markup=False)
        slots = f"{DRIVER_SLOTS} driver slots"
        if args.clusters == 2:
            config, slots = two.setup(args.backend, demo_config(None, None, state_dir),
                                      workdir, clusters, say)
        elif args.backend == "memory":
            say("cluster: in memory (no Spark): 1 worker, 2 cores, 2g")
            config = demo_config(None, None, state_dir)
        else:
            clusters.append(cluster := start_cluster(workdir))
            say(f"cluster: {cluster.master_url} (UI {cluster.master_ui})")
            config = demo_config(cluster.master_url, cluster.master_ui, state_dir)
        try:
            server = ServerProcess.start(config, workdir / "server")
        except ServerStartError as e:
            raise UserError(str(e)) from None
        out.print(f"scheduler: {server.url} (log {server.log_path})", markup=False)
        client = SchedulerClient(server.url)
        ids = submit_burst(client, workdir, memory=args.backend == "memory")
        out.print(
            f"submitted {len(ids)} apps; {slots}, queues root.etl "
            "(stateaware, priority) and root.adhoc (stateaware, fairshare)"
        )
        apps = follow(client, ids, out, args.timeout)
        out.print(summary_table(apps, ids))
        out.print(_verdict(apps, ids), markup=False)
        if args.clusters == 2:  # on real clusters the masters are asked too
            masters = two.master_apps(clusters) if clusters else None
            succeeded, line = two.cluster_verdict(apps, two.placements(client, ids), masters)
            say(line)
        else:
            succeeded = True
        return 0 if succeeded else 1
    except SchedulerError as e:
        raise user_error(e) from None
    except KeyboardInterrupt:
        print("sessionsched demo: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        if client is not None:
            if ids:
                stop_apps(client, ids)
            client.close()
        if server is not None:
            server.stop()
        for cluster in clusters:
            cluster.stop()
        signal.signal(signal.SIGTERM, previous)
        if args.keep or not succeeded:
            print(f"sessionsched demo: logs and state kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _verdict(apps: list[App], ids: dict[str, DemoApp]) -> str:
    boosted = [a for a in apps if ids[a.id].boost]
    etl = sorted(
        (a for a in apps if a.queue == "root.etl" and a.started_at), key=lambda a: a.started_at
    )
    if not boosted or boosted[0].id not in [a.id for a in etl]:
        return ""
    b = boosted[0]
    submitted_n = list(ids).index(b.id) + 1
    return (
        f"{b.name} was submitted {_ordinal(submitted_n)} overall with priority "
        f"{ids[b.id].priority}, raised to {b.priority}, and started "
        f"{_ordinal([a.id for a in etl].index(b.id) + 1)} in root.etl."
    )


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the scheduler on a local Spark cluster with a burst of example apps",
        description="Start a local Spark standalone cluster and the scheduler, submit a burst of "
        "example PySpark apps into two queues, raise one queued app's priority, show the "
        "queues live, print a summary, and clean up everything it started.",
    )
    p.add_argument("--keep", metavar="DIR", help="work in DIR and keep state and logs there")
    p.add_argument(
        "--backend",
        choices=("local", "memory"),
        default="local",
        help="local: a real Spark cluster from pyspark's Spark (default); memory: no Spark, "
        "the memory cluster, done in seconds",
    )
    p.add_argument(
        "--clusters", type=int, choices=(1, 2), default=1,
        help="2: two clusters, a and b, behind the one scheduler (placement spill, one driver "
        "slot each): apps spill over from a to b; a CLUSTER column and a verdict that each app "
        "ran on exactly one cluster and both were used (default 1)")
    p.add_argument(
        "--timeout",
        type=float,
        default=600,
        metavar="S",
        help="give up if the apps have not all ended after S seconds (default 600)",
    )
    p.set_defaults(func=run)
