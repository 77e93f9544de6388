"""Run one command and write its exit code to a file: ``runner.py --exit-file F -- CMD...``.

The standalone and Kubernetes backends start every ``spark-submit`` through this runner
(``spawn.start``), as the leader of a new process session, so the driver outlives the
scheduler and its exit code is known even when the scheduler was not running when it ended: a
restarted scheduler reads the file instead of ``waitpid`` (only a parent can collect a
child's status).

Contract:
* the exit file appears only when the command has ended, written atomically (temporary file
  then rename), holding one line: the exit code. A command killed by signal N gets 128 + N,
  as a shell reports it. A command that cannot be started gets 127 and a message on stderr.
* SIGTERM and SIGINT sent to the runner are passed on to the command; the runner keeps waiting
  and records what the command returns. (A group-wide SIGTERM reaches both; the JVM takes
  the second one as part of the shutdown already under way.)

Standard library only, and run as a file, so it never depends on how sessionsched is installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def exit_code(returncode: int) -> int:
    """A Popen return code as a shell reports it (killed by signal N -> 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def write_exit_file(path: str, code: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{code}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--exit-file" or argv[2] != "--":
        print("usage: runner.py --exit-file FILE -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    exit_file, command = argv[1], argv[3:]
    child: subprocess.Popen | None = None
    early: list[int] = []  # signals that came before the command had started

    def forward(signum, _frame):
        if child is None:
            early.append(signum)
            return
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    # Before the command starts: a group-wide SIGTERM right after the launch would otherwise
    # end the runner by its default action, and the exit file would never be written.
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        child = subprocess.Popen(command)
    except OSError as e:
        print(f"sessionsched runner: cannot start {command[0]}: {e}", file=sys.stderr)
        write_exit_file(exit_file, 127)
        return 127
    for signum in early:
        forward(signum, None)
    code = exit_code(child.wait())
    write_exit_file(exit_file, code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
