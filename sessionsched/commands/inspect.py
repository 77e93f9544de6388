"""``sessionsched why ID`` and ``sessionsched top``: why an app waits, and the queues live.

``why ID`` prints, for one app: its state, queue place and (behind several clusters, once
placed) cluster, its reason code (the API's ``reason_code`` when the server sends one) and
sentence, who is ahead of it in its queue and who runs there (each with executors held /
target / demand: how big they are, and its cluster), its estimated start and its
counter-offer (docs/design/estimates.md). For an app that runs: its executors held and granted
against its target and demand, and the server's notes on why it holds fewer than it wants
(``model.executor_notes``: how its queue divides, what the cluster has free while it is
granted less than its target).

``top`` is a live terminal view (rich ``Live``) refreshed every ``--interval`` seconds until
Ctrl-C: the queues, the running apps with executors / target / demand (and, behind several
clusters, each one's cluster), the waiting apps with their reasons and estimated starts. Not
on a terminal (a pipe, a test) it prints each frame in turn; the hidden ``--iterations N``
stops it after N frames.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..client import App, SchedulerClient
from ..model import AppState
from .client_cmds import add_connection_options, call, clock, estimated, plain, queue_table
from .console import console
from .resource_text import app_line, queue_lines

AHEAD_SHOWN = 10  # apps ahead listed by ``why`` (the count is always given)


def size(app: App) -> str:
    return f"{app.executors}/{app.target}/{app.demand}"


def on(app: App) -> str:
    """", on cluster b" for an app placed behind several clusters; "" else (one cluster)."""
    return f", on cluster {app.raw['cluster']}" if app.raw.get("cluster") else ""


def why_lines(app: App, queue_apps: list[App], queue: dict | None = None) -> list[str]:
    """``why``'s answer; ``queue_apps``: every app of the app's queue, queued in order first;
    ``queue``: its queue's row (for an app that asks for custom resources, their use
    there)."""
    where = f", position {app.position} in {app.queue}" if app.position else f" in {app.queue}"
    lines = [f"{app.id} ({app.name}, {app.user or 'no user'}): {app.state.value}{where}, "
             f"priority {app.priority}{on(app)}"]
    if app.state is not AppState.ACCEPTED:
        lines.append(f"not waiting: {app.reason}" if app.reason else "not waiting")
        if app.state.admitted and not app.state.terminal:
            lines += executor_lines(app)
            lines += running_lines(app, queue_apps)
        return lines
    if app.reason_code:
        lines.append(f"reason code: {app.reason_code}")
    lines.append(f"reason: {app.reason or '-'}")
    if app.raw.get("resources"):
        lines.append(f"custom resources: {app_line(app.raw['resources'])}")
        lines += queue_lines(queue)
    ahead = [a for a in queue_apps if a.state is AppState.ACCEPTED and a.position
             and app.position and a.position < app.position]
    lines.append(f"ahead of it in {app.queue}: {len(ahead)} queued"
                 + (" (executors held/target/demand):" if ahead else ""))
    lines += [f"  {a.position}. {a.id} {a.name} priority {a.priority}, {size(a)}"
              for a in ahead[:AHEAD_SHOWN]]
    if len(ahead) > AHEAD_SHOWN:
        lines.append(f"  ... and {len(ahead) - AHEAD_SHOWN} more")
    lines += running_lines(app, queue_apps)
    start = estimated(app)
    lines.append(f"estimated start: {start if start != '-' else 'not estimated yet'}")
    lines.append(f"counter-offer: {app.offer_text or 'none'}")
    return lines


SHARED = "target_below_demand"  # the note that heads the list of the queue's running apps


def running_lines(app: App, queue_apps: list[App]) -> list[str]:
    """The apps running in ``app``'s queue, each with executors held/target/demand; for an
    admitted app given less than it wants, headed by how its queue divides (the server's
    note: its policy)."""
    running = [a for a in queue_apps if a.state.admitted and not a.state.terminal]
    head = next((n["text"] for n in notes(app) if n.get("code") == SHARED),
                f"running in {app.queue}: {len(running)}")
    lines = [head + (" (executors held/target/demand):" if running else "")]
    lines += [f"  {a.id} {a.name} {a.state.value} priority {a.priority}, {size(a)}{on(a)}"
              for a in running[:AHEAD_SHOWN]]
    if len(running) > AHEAD_SHOWN:
        lines.append(f"  ... and {len(running) - AHEAD_SHOWN} more")
    return lines


def notes(app: App) -> list[dict]:
    """The server's notes on why an admitted app holds fewer executors than it wants
    (``model.executor_notes``; none from a server older than them)."""
    return list(app.raw.get("executor_notes") or ())


def executor_lines(app: App) -> list[str]:
    """An admitted app's executors: held, granted (its target placed on the workers as they
    free: what its agent lets it hold now), its target (its share now) and its demand (what it
    asks for); then the server's notes on the gaps between them (but the one that heads the
    queue's running apps)."""
    return [f"executors: {app.executors} held, {app.grant} granted, target {app.target},"
            f" demand {app.demand}",
            *(n["text"] for n in notes(app) if n.get("code") != SHARED)]


def _why(args: argparse.Namespace) -> int:
    def action(client: SchedulerClient) -> int:
        app = client.app(args.id)
        live = not app.state.terminal
        queue_apps = client.apps(queue=app.queue) if live else []
        queue = None
        if app.state is AppState.ACCEPTED and app.raw.get("resources"):
            queue = next((q.raw for q in client.queues() if q.name == app.queue), None)
        print("\n".join(why_lines(app, queue_apps, queue)))
        return 0

    return call(args, action)


# --- top ----------------------------------------------------------------------------------------


def _table(title: str, cols: tuple[str, ...]) -> Table:
    table = Table(title=title, title_justify="left", box=None, header_style="bold",
                  pad_edge=False)
    for col in cols:
        table.add_column(col, no_wrap=col != "REASON", overflow="fold")
    return table


def frame(client: SchedulerClient, limit: int) -> Group:
    """One screen: queues, running apps, waiting apps (each list cut at ``limit`` rows)."""
    apps = client.apps()
    # Behind several clusters a placed app names its cluster (with one, none does).
    several = any("cluster" in a.raw for a in apps)
    running = _table("Running", ("ID", "NAME", "QUEUE", *(("CLUSTER",) if several else ()),
                                 "PRIO", "STATE", "EXEC", "TARGET", "DEMAND", "STARTED",
                                 "WAITS FOR"))
    waiting = _table("Waiting", ("ID", "NAME", "QUEUE", "PRIO", "POS", "EST.START", "REASON"))
    live = [a for a in apps if a.state.admitted and not a.state.terminal]
    queued = [a for a in apps if a.state is AppState.ACCEPTED]
    for a in live[:limit]:
        running.add_row(*plain(a.id, a.name, a.queue,
                               *((a.raw.get("cluster") or "-",) if several else ()),
                               a.priority, a.state.value, a.executors, a.target, a.demand,
                               clock(a.started_at), a.executor_wait or "-"))
    for a in queued[:limit]:
        reason = a.reason or ""
        if a.reason_code:
            reason = f"[{a.reason_code}] {reason}"
        if a.offer_text:
            reason = f"{reason}; offer: {a.offer_text}"
        waiting.add_row(*plain(a.id, a.name, a.queue, a.priority,
                               "-" if a.position is None else a.position, estimated(a),
                               reason))
    header = Text(f"sessionsched top - {time.strftime('%H:%M:%S')} - {len(live)} running, "
                  f"{len(queued)} waiting (Ctrl-C to quit)")
    return Group(header, queue_table(client.queues()), running, waiting)


def _top(args: argparse.Namespace) -> int:
    out = console()

    def action(client: SchedulerClient) -> int:
        shown = 0
        try:
            if out.is_terminal:
                with Live(frame(client, args.limit), console=out, auto_refresh=False,
                          screen=False) as live:
                    shown = 1
                    while args.iterations is None or shown < args.iterations:
                        time.sleep(args.interval)
                        live.update(frame(client, args.limit), refresh=True)
                        shown += 1
            else:
                while args.iterations is None or shown < args.iterations:
                    if shown:
                        time.sleep(args.interval)
                    out.print(frame(client, args.limit))
                    out.print()
                    shown += 1
        except KeyboardInterrupt:
            pass
        return 0

    return call(args, action)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "why", help="why an application waits, and when it will start",
        description="Why an application waits: its reason (code and sentence), who is ahead "
        "of it and who runs in its queue (executors held/target/demand), its estimated start "
        "and its counter-offer; behind several clusters, the cluster each placed app is on. "
        "For a running app: its executors held and granted against its target and demand, "
        "how its queue divides, and, while it is granted less than its target, what the "
        "cluster has free (per custom resource: on one worker).")
    p.add_argument("id", metavar="ID", help="submission id")
    add_connection_options(p)
    p.set_defaults(func=_why)

    p = subparsers.add_parser(
        "top", help="a live view of queues and applications",
        description="A live view of the queues, the running apps (executors/target/demand; "
        "behind several clusters, each one's cluster) and the waiting apps (reasons, "
        "estimated starts), refreshed in place until Ctrl-C.")
    p.add_argument("--interval", type=float, default=2.0, metavar="S",
                   help="seconds between refreshes (default 2)")
    p.add_argument("--limit", type=int, default=30, metavar="N",
                   help="rows shown of each list (default 30)")
    p.add_argument("--iterations", type=int, default=None, help=argparse.SUPPRESS)
    add_connection_options(p)
    p.set_defaults(func=_top)
