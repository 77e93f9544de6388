"""``sessionsched token create|list|revoke --file PATH``: the tokens file of ``auth.mode:
tokens`` (``config.tokens_file``). ``create`` prints the new token, and nothing else, on
stdout once; only its hash is kept. The server re-reads the file when it changes: a revoked
token stops working at its next request.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from ..cli import UserError
from ..config.tokens_file import ROLES, TokenFileError, create, read_entries, revoke


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "token", help="create, list and revoke API tokens (auth mode tokens)",
        description="Manage the tokens file named by auth.tokens_file.")
    sub = p.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="make a token; prints it once")
    c.add_argument("--file", required=True, metavar="PATH", help="the tokens file")
    c.add_argument("--user", required=True, metavar="NAME", help="who the token is for")
    c.add_argument("--role", choices=ROLES, default="user", help="default: user")
    c.set_defaults(func=_create)
    ls = sub.add_parser("list", help="list tokens (ids, users, roles; never the tokens)")
    ls.add_argument("--file", required=True, metavar="PATH", help="the tokens file")
    ls.set_defaults(func=_list)
    r = sub.add_parser("revoke", help="remove a token by id, or every token of a user")
    r.add_argument("--file", required=True, metavar="PATH", help="the tokens file")
    who = r.add_mutually_exclusive_group(required=True)
    who.add_argument("--id", metavar="ID", help="the token's id (from 'token list')")
    who.add_argument("--user", metavar="NAME", help="every token of this user")
    r.set_defaults(func=_revoke)


def _create(args: argparse.Namespace) -> int:
    try:
        print(create(args.file, args.user, args.role))
    except (TokenFileError, OSError) as e:
        raise UserError(str(e)) from None
    return 0


def _list(args: argparse.Namespace) -> int:
    try:
        entries = read_entries(args.file)
    except TokenFileError as e:
        raise UserError(str(e)) from None
    print(f"{'ID':<12}  {'USER':<16}  {'ROLE':<5}  CREATED")
    for e in entries:
        made = datetime.fromtimestamp(e.created).astimezone().strftime("%Y-%m-%d %H:%M")
        print(f"{e.id:<12}  {e.user:<16}  {e.role:<5}  {made}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    try:
        n = revoke(args.file, token_id=args.id, user=args.user)
    except (TokenFileError, OSError) as e:
        raise UserError(str(e)) from None
    if n == 0:
        # --id "" is given, yet falsy: test for None, not truth
        raise UserError(f"no token with id {args.id!r}" if args.id is not None
                        else f"no token of {args.user!r}")
    print(f"revoked {n} token{'s' if n > 1 else ''}")
    return 0
