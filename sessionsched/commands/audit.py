"""``sessionsched audit [--app ID] [--user U] [--since T]``: the audit trail (admins):
submissions, priority changes, kills and expiries, one per line, oldest first
(``GET /api/v1/audit``)."""

from __future__ import annotations

import argparse

from ..client import SchedulerClient
from .client_cmds import add_connection_options, call, print_json


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "audit", help="who submitted, re-prioritised and killed what (admins)",
        description="Show the audit trail: submissions, priority changes, kills, and the "
        "queued apps the scheduler ended for waiting their queue's max_wait.")
    p.add_argument("--app", metavar="ID", help="only this app")
    p.add_argument("--user", metavar="U", help="only what this user did")
    p.add_argument("--since", metavar="T", help="only from this time (ISO 8601 or epoch s)")
    p.add_argument("--json", action="store_true", help="print the server's JSON list")
    add_connection_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    def action(client: SchedulerClient) -> int:
        rows = client.audit(args.app, args.user, args.since)
        if args.json:
            print_json(rows)
            return 0
        for r in rows:
            print(f"{r['at']}  {r['app_id']}  {r['kind']:<9}  {r['who']:<12}  {r['detail']}")
        return 0

    return call(args, action)
