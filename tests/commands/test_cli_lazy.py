"""``sessionsched COMMAND`` loads the module of that command only (``cli.COMMANDS``): a
``submit`` does not pay for importing the engine, the simulator and the backends before its
request leaves. ``COMMANDS`` must say truly which module adds which command."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from sessionsched.cli import COMMANDS, build_parser


@pytest.mark.parametrize("module", list(COMMANDS))
def test_each_module_adds_the_commands_listed_for_it(module):
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(f"sessionsched.commands.{module}").add_parser(sub)
    assert tuple(sub.choices) == COMMANDS[module]


def test_a_named_command_loads_its_own_module_only():
    code = ("import sys; from sessionsched.cli import build_parser; "
            "p = build_parser('submit'); "
            "print(sorted(m for m in sys.modules if m.startswith(('sessionsched.commands.', "
            "'sessionsched.engine', 'sessionsched.sim', 'sessionsched.backends', "
            "'sessionsched.config'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    loaded = eval(out)  # noqa: S307 - our own child's repr of a list of str
    assert [m for m in loaded if not m.startswith("sessionsched.commands.")] == []
    assert "sessionsched.commands.submit" in loaded and "sessionsched.commands.serve" not in loaded


@pytest.mark.parametrize("command", [None, "no-such-command"], ids=["none", "unknown"])
def test_no_command_or_an_unknown_one_gets_the_full_parser(command):
    sub = next(a for a in build_parser(command)._actions
               if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == [c for names in COMMANDS.values() for c in names]
