"""Run a PySpark script with the agent attached: ``bootstrap.py SCRIPT [ARGS...]``.

The service makes this file spark-submit's primary resource and the user's script its first
argument (``launch.wrap_argv``), so ``spark-submit [opts] app.py a b`` becomes
``spark-submit [opts] --name app.py .../sessionsched/agent/bootstrap.py app.py a b``. Spark's
PythonRunner starts it like any Python app (same interpreter, PYTHONPATH, ``--py-files``).

It first sends the agent's log lines to stderr, the driver's log (timed to the millisecond,
like Spark's lines beside them); then (1) makes ``sessionsched.agent`` importable -- already
installed, or shipped in a ``--py-files`` zip, or else from the source tree this file sits
in -- without leaving that tree on ``sys.path``; (2) installs the SparkContext hook
(``attach.install``); (3) runs the script as ``__main__`` with the ``sys.argv`` and
``sys.path[0]`` it would have had if run directly. Exit codes and exceptions pass through unchanged.

Why a wrapper and not ``sitecustomize``/``PYTHONSTARTUP``: PYTHONSTARTUP only runs for
interactive sessions, and a ``sitecustomize`` on PYTHONPATH would shadow the distribution's own
(Debian ships one) and reach every Python the driver starts. The wrapper touches only the
driver's main program, and ``python bootstrap.py`` is exactly how PythonRunner starts a file.
"""

from __future__ import annotations

import logging
import os
import runpy
import sys


def _import_agent():
    try:
        from sessionsched.agent import attach
        return attach
    except ImportError:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.path.insert(0, root)
        try:
            from sessionsched.agent import attach
            return attach
        finally:
            # Loaded modules stay in sys.modules; the tree must not shadow the user's imports.
            sys.path.remove(root)


def find_script(script: str) -> str:
    """``script``, or -- when it is a bare file name not in the working directory -- the
    ``sys.path`` entry with that name: on Kubernetes the scheduler ships the user's script in
    ``--py-files`` and passes its name, and PythonRunner puts each py-file on the path."""
    if os.path.exists(script) or os.sep in script:
        return script
    for entry in sys.path:
        if os.path.basename(entry) == script and os.path.isfile(entry):
            return entry
    return script


def _log_to_stderr() -> None:
    """The agent's lines (registered, each new grant, warnings) in the driver's log, timed to
    the millisecond: what the scheduler told the app, and when, read beside Spark's lines."""
    log = logging.getLogger("sessionsched.agent")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False  # once, whatever the user's program does with the root logger


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit("usage: bootstrap.py SCRIPT [ARGS...]")
    _log_to_stderr()
    script = find_script(argv[1])
    # Run as a script, sys.path[0] is this file's directory: the agent package's own modules
    # must not be importable as top-level names by the user's code.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        _import_agent().install()
    except Exception as e:  # pyspark missing, or a broken install: run the app anyway
        print(f"sessionsched agent: not attached ({e}); the app runs unmanaged", file=sys.stderr)
    sys.argv = [script, *argv[2:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv)
