"""The ``sessionsched`` command. Each module named in ``COMMANDS`` lives in
``sessionsched/commands/<name>.py`` and has ``add_parser(subparsers)``, which adds the
subcommands ``COMMANDS`` lists for it (``client_cmds``: status, kill, priority, apps, queues)
and sets each one's ``func(args) -> int`` with ``set_defaults``; this module only builds the
parser and calls ``func``. A command given by name loads its own module only: loading them all
(the engine, the simulator, the backends) cost ``submit`` 1-3 s on a loaded 2-core machine
before its request left (benchmarks/solo_overhead.py). ``sessionsched --help``, or a name that
is no command, loads them all (the full list, or argparse's error naming the choices).

Errors a user can fix (a bad config file, an unreachable server, a bad argument) are printed
as one line on stderr with exit code 2; nobody sees a traceback for them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# module -> the commands it adds; the order is the order in --help (tests/commands/test_cli_lazy.py
# checks that each module adds exactly these).
COMMANDS: dict[str, tuple[str, ...]] = {
    "demo": ("demo",), "serve": ("serve",), "submit": ("submit",),
    "client_cmds": ("status", "kill", "priority", "apps", "queues"), "inspect": ("why", "top"),
    "cluster": ("cluster",), "simulate": ("simulate",), "workload": ("workload",),
    "token": ("token",),
    "audit": ("audit",), "usage": ("usage",),
}


class UserError(Exception):
    """A problem the user can fix; the message is printed as is, exit code 2."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or with ``command`` alone when it is one."""
    modules = [m for m, names in COMMANDS.items() if command in names] or list(COMMANDS)
    parser = argparse.ArgumentParser(
        prog="sessionsched",
        description="A session scheduler for Apache Spark: driver queues with priorities and "
        "work-conserving admission, executors arbitrated live by fifo, priority or fairshare.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in modules:
        importlib.import_module(f"sessionsched.commands.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The top-level parser has no option but -h: the command, if any, comes first.
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        # A ConfigError can come only from a command that loaded the config package; looked
        # up here, the package (pydantic models, the cron parser) is not loaded for commands
        # that need none of it (``submit``: ~0.1 s of CPU at its start).
        config = sys.modules.get("sessionsched.config")
        if not isinstance(e, UserError) and not (config and isinstance(e, config.ConfigError)):
            raise
        print(f"sessionsched {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    # Run the imported module's main: under ``python -m`` this file is also ``__main__``, and
    # commands raise ``sessionsched.cli.UserError``, not ``__main__.UserError``.
    from sessionsched.cli import main as _main

    sys.exit(_main())
