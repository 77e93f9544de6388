"""The commands that read and steer a running scheduler: ``status``, ``kill``, ``priority``,
``apps``, ``queues`` — thin wrappers over ``sessionsched.client``.

Every one takes ``--server URL`` (default ``$SESSIONSCHED_SERVER``, else
http://127.0.0.1:6066), ``--token T`` (default ``$SESSIONSCHED_TOKEN``, else the user's client
file, mode 0600) and ``--ca PEM`` (an https server's CA). ``--json`` prints the
server's JSON unchanged (the app object of docs/user/api.md); without it, a table. A refusal from
the server (4xx) is its ``detail`` on one line and exit code 2. ``submit`` and ``demo`` reuse the
helpers and renderers here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from datetime import datetime

from rich.table import Table
from rich.text import Text

from ..cli import UserError
from ..client import (
    CA_ENV,
    SERVER_ENV,
    TOKEN_ENV,
    App,
    QueueInfo,
    SchedulerClient,
    SchedulerError,
    Unreachable,
    default_ca,
    default_server,
    default_token,
)
from ..model import AppState, parse_priority
from .console import console
from .gang_text import gang_line, gang_mark
from .resource_text import app_line, queue_cell, resource_names


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        metavar="URL",
        help=f"scheduler address (default: ${SERVER_ENV}, else http://127.0.0.1:6066); "
        "several, comma-separated (a leader and its standbys), are tried in turn while one "
        "cannot be reached",
    )
    parser.add_argument(
        "--token", metavar="T", help=f"bearer token for the scheduler (default: ${TOKEN_ENV}, "
        "else 'token:' in ~/.config/sessionsched/client.yaml, which must be mode 600)"
    )
    parser.add_argument(
        "--ca", metavar="PEM", help=f"CA certificate to verify an https server with (default: "
        f"${CA_ENV}, else 'ca:' in the client file, else the system's)"
    )


def connect(args: argparse.Namespace) -> SchedulerClient:
    return SchedulerClient(args.server or default_server(), args.token or default_token(),
                           ca=getattr(args, "ca", None) or default_ca())


def user_error(e: SchedulerError) -> UserError:
    """A client failure as the CLI's one-line error, with a hint where there is one."""
    if isinstance(e, Unreachable):
        return UserError(f"{e}; start it with 'sessionsched serve' or set --server / {SERVER_ENV}")
    return UserError(str(e))


def call(args: argparse.Namespace, action: Callable[[SchedulerClient], int]) -> int:
    """Run ``action`` with a connected client; scheduler failures become one-line UserErrors."""
    try:
        with connect(args) as client:
            return action(client)
    except SchedulerError as e:
        raise user_error(e) from None


def print_json(data: object) -> None:
    print(json.dumps(data, indent=2))


# --- renderers, also used by `submit --wait` and `demo` ----------------------------------------


def plain(*values: object) -> list[Text]:
    """Table cells shown as given: an app name like ``etl[1]`` is not rich markup."""
    return [Text(str(v)) for v in values]


def clock(t: datetime | None) -> str:
    return t.astimezone().strftime("%H:%M:%S") if t else "-"


def estimated(app: App) -> str:
    """A queued app's estimated start, ``≈ 14:20:05`` (``-``: none, or not queued)."""
    return f"≈ {clock(app.estimated_start)}" if app.estimated_start else "-"


def app_table(apps: Iterable[App], title: str | None = None) -> Table:
    table = Table(title=title, box=None, header_style="bold", pad_edge=False)
    apps = list(apps)
    # Behind several clusters an app placed names its cluster (with one, none does).
    several = any("cluster" in a.raw for a in apps)
    for col in ("ID", "NAME", "QUEUE", *(("CLUSTER",) if several else ()), "PRIO", "STATE",
                "POS", "EXEC", "GANG", "SUBMITTED", "EXIT", "EST.START"):
        table.add_column(col, no_wrap=True)
    table.add_column("CODE", no_wrap=True)
    table.add_column("REASON", overflow="fold")
    for a in apps:
        reason = a.reason or ""
        if a.offer_text:
            reason = f"{reason}; offer: {a.offer_text}" if reason else f"offer: {a.offer_text}"
        table.add_row(
            *plain(
                a.id,
                a.name,
                a.queue,
                *((a.raw.get("cluster") or "-",) if several else ()),
                str(a.priority),
                a.state.value,
                "-" if a.position is None else str(a.position),
                f"{a.executors}/{a.target}",
                gang_mark(a.gang),
                clock(a.submitted_at),
                "-" if a.exit_code is None else str(a.exit_code),
                estimated(a),
                a.reason_code or a.executor_wait or "-",
                reason,
            )
        )
    return table


def queue_table(queues: Iterable[QueueInfo]) -> Table:
    """The queue tree (the server's order: parents before their children) as a table whose
    first column draws the tree; a limit a leaf does not have is "-", a setting that acts on
    leaves only is blank on a parent's row."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    queues = list(queues)
    # A column per custom resource (used/cap), only where the cluster has any.
    names = resource_names(q.raw for q in queues)
    cols = ("QUEUE", "ADMISSION", "POLICY", "WEIGHT", "MAX CORES", "MAX RUNNING", "MAX WAIT",
            "MAX QUEUED", "PER USER", "PENDING", "STARTING", "RUNNING", "CORES", "DEMAND",
            *(name.upper() for name in names))
    for col in cols:
        table.add_column(col, no_wrap=True)
    table.add_column("CODE", no_wrap=True)
    table.add_column("WAITING", overflow="fold")
    for q, drawn in zip(queues, tree_names([q.name for q in queues]), strict=True):
        leaf_only = (q.admission, q.policy, _limit(q.max_wait, _duration),
                     _limit(q.max_queued_apps), _limit(q.max_queued_apps_per_user))
        if not q.leaf:
            leaf_only = ("",) * len(leaf_only)
        admission, policy, max_wait, max_queued, per_user = leaf_only
        table.add_row(
            *plain(drawn, admission, policy, f"{q.weight:g}", _limit(q.max_cores),
                   _limit(q.max_running_apps), max_wait, max_queued, per_user, q.pending,
                   q.starting, q.running, q.executor_cores, q.demand_cores,
                   *(queue_cell((q.raw.get("resources") or {}).get(n)) for n in names),
                   q.waiting_reason_code or "-", q.waiting_reason or "")
        )
    return table


def tree_names(names: list[str]) -> list[str]:
    """Dotted queue names, parents before their children, as the lines of a tree: each
    queue's last name part behind guides (``├── etl``, ``│   └── nb``)."""
    out = []
    for i, name in enumerate(names):
        parts = name.split(".")
        guides = []
        for depth in range(1, len(parts)):
            # The ancestor at this depth (or the queue itself) is its parent's last child if no
            # sibling of it comes later.
            parent = ".".join(parts[:depth]) + "."
            last = not any(n.startswith(parent) and n.count(".") == depth
                           for n in names[i + 1:])
            if depth == len(parts) - 1:
                guides.append("└── " if last else "├── ")
            else:
                guides.append("    " if last else "│   ")
        out.append("".join(guides) + parts[-1])
    return out


def _limit(value: float | None, show: Callable[[float], str] = lambda v: f"{v:g}") -> str:
    return "-" if value is None else show(value)


def _duration(seconds: float) -> str:
    """``90`` -> ``1m30s``, ``3600`` -> ``1h``, ``45`` -> ``45s``."""
    s = int(round(seconds))
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    text = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec else "")
    return text or f"{seconds:g}s"


def describe(app: App) -> str:
    """One line on where an app stands, e.g. ``ACCEPTED, position 2 in root.etl (reason)``."""
    where = f"position {app.position} in {app.queue}" if app.position else app.queue
    parts = [f"{app.id}: {app.state.value}", where, f"priority {app.priority}"]
    if app.raw.get("cluster"):
        parts.insert(2, f"on cluster {app.raw['cluster']}")
    if app.state.admitted:
        parts.append(f"executors {app.executors}/{app.target}")
    if app.exit_code is not None:
        parts.append(f"exit code {app.exit_code}")
    if app.estimated_start is not None:
        parts.append(f"estimated start {estimated(app)}")
    line = ", ".join(parts)
    return f"{line} ({app.reason})" if app.reason else line


# --- commands ----------------------------------------------------------------------------------


def _status(args: argparse.Namespace) -> int:
    def action(client: SchedulerClient) -> int:
        app = client.app(args.id)
        if args.json:
            print_json(app.raw)
            return 0
        width = max(len(key) for key in app.raw)
        for key, value in app.raw.items():
            if isinstance(value, list):
                value = "; ".join(str(v) for v in value)
            elif key == "gang":  # what it asked for and, while it reserves, held / needed
                value = gang_line(value)
            elif key == "resources":  # its custom resources: asked and held
                value = app_line(value)
            elif isinstance(value, dict):  # the counter-offer: its one line
                value = value.get("text", value)
            print(f"{key:<{width}}  {'-' if value in (None, '') else value}")
        return 0

    return call(args, action)


def _kill(args: argparse.Namespace) -> int:
    def action(client: SchedulerClient) -> int:
        print(describe(client.kill(args.id)))
        return 0

    return call(args, action)


def _priority(args: argparse.Namespace) -> int:
    try:
        priority = parse_priority(args.priority)
    except ValueError as e:
        raise UserError(str(e)) from None

    def action(client: SchedulerClient) -> int:
        print(describe(client.set_priority(args.id, priority)))
        return 0

    return call(args, action)


def parse_state(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return AppState(text.strip().upper()).value
    except ValueError:
        known = ", ".join(s.value for s in AppState)
        raise UserError(f"unknown state {text!r}; one of {known}") from None


def _apps(args: argparse.Namespace) -> int:
    state = parse_state(args.state)

    def action(client: SchedulerClient) -> int:
        apps = client.apps(queue=args.queue, state=state)
        if args.json:
            print_json([a.raw for a in apps])
        elif apps:
            console().print(app_table(apps))
        else:
            print("no applications", file=sys.stderr)
        return 0

    return call(args, action)


def _queues(args: argparse.Namespace) -> int:
    def action(client: SchedulerClient) -> int:
        queues = client.queues()
        if args.json:
            print_json([q.raw for q in queues])
            return 0
        out = console()
        out.print(queue_table(queues))
        health = client.health()  # the time-of-day plan the settings above are under
        for label, key in (("plan in force", "plan"), ("next", "next_plan")):
            if health.get(key):
                out.print(f"{label}: {health[key]}", highlight=False, soft_wrap=True)
        return 0

    return call(args, action)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "status", help="show one application", description="Show one application."
    )
    p.add_argument("id", metavar="ID", help="submission id (driver-YYYYMMDDHHMMSS-NNNN)")
    p.add_argument("--json", action="store_true", help="print the app JSON of docs/user/api.md")
    add_connection_options(p)
    p.set_defaults(func=_status)

    p = subparsers.add_parser(
        "kill",
        help="kill an application",
        description="Kill an application: a queued one never starts, a running one is stopped.",
    )
    p.add_argument("id", metavar="ID", help="submission id")
    add_connection_options(p)
    p.set_defaults(func=_kill)

    p = subparsers.add_parser(
        "priority",
        help="change an application's priority",
        description="Change an application's priority (1..10000, higher first). A queued app "
        "moves in its queue at once; a running app keeps its driver and gets executors by the "
        "new priority.",
    )
    p.add_argument("id", metavar="ID", help="submission id")
    p.add_argument("priority", metavar="N", help="new priority, 1..10000")
    add_connection_options(p)
    p.set_defaults(func=_priority)

    p = subparsers.add_parser(
        "apps",
        help="list applications",
        description="List applications: queued ones in queue order first, then the rest "
        "by submission. CODE: why a queued app waits (docs/user/reasons.md), or what a "
        "running app's executors wait for (resource_short(gpu), room_short, "
        "target_below_demand, executors_starting).",
    )
    p.add_argument("--queue", metavar="Q", help="only this queue")
    p.add_argument("--state", metavar="S", help="only this state (ACCEPTED, RUNNING, ...)")
    p.add_argument("--json", action="store_true", help="print a JSON list of app objects")
    add_connection_options(p)
    p.set_defaults(func=_apps)

    p = subparsers.add_parser(
        "queues",
        help="show the queue tree: each queue's caps and load",
        description="List every queue as a tree (parents too) with its settings as they are "
        "now, the time-of-day plan in force applied (admission, policy, weight, max_cores, "
        "max_running_apps, max_wait, max_queued_apps, max_queued_apps_per_user: '-' for no "
        "limit; settings that act on leaf queues only are blank on a parent) and its load; "
        "then the plan in force and the next one that will change the queues, if any.",
    )
    p.add_argument("--json", action="store_true", help="print the server's JSON list")
    add_connection_options(p)
    p.set_defaults(func=_queues)
