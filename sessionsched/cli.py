"""The ``sessionsched`` command. Each module named in ``COMMANDS`` lives in
``sessionsched/commands/<name>.py`` and has ``add_parser(subparsers)``, which adds one or more
subcommands (``client_cmds``: status, kill, priority, apps, queues) and sets each one's
``func(args) -> int`` with ``set_defaults``; this module only builds the parser and calls
``func``.

Errors a user can fix (a bad config file, an unreachable server, a bad argument) are printed
as one line on stderr with exit code 2; nobody sees a traceback for them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .config import ConfigError

# Order is the order in --help.
COMMANDS: list[str] = ["demo", "serve", "submit", "client_cmds", "inspect", "cluster", "simulate",
                       "token", "audit", "usage"]


class UserError(Exception):
    """A problem the user can fix; the message is printed as is, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sessionsched",
        description="A session scheduler for Apache Spark: driver queues with priorities and "
        "work-conserving admission, executors arbitrated live by fifo, priority or fairshare.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"sessionsched.commands.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ConfigError, UserError) as e:
        print(f"sessionsched {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    # Run the imported module's main: under ``python -m`` this file is also ``__main__``, and
    # commands raise ``sessionsched.cli.UserError``, not ``__main__.UserError``.
    from sessionsched.cli import main as _main

    sys.exit(_main())
