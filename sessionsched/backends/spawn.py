"""spark-submit started under the runner, and stopped with a grace: what the standalone and
Kubernetes backends share about the processes they start on this host.

``start``: ``runner.py --exit-file F -- spark-submit ...`` as the leader of a new process
session (``procs``: it outlives the scheduler; its group holds what it started), its output
appended to the app's log after one line naming the (redacted) command. ``GraceStops``: groups
sent SIGTERM, sent SIGKILL once ``grace_s`` has passed on the backend's clock.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from . import procs
from .base import BackendError
from .commands import redacted
from .procs import ProcessId

RUNNER = str(Path(__file__).with_name("runner.py"))


def start(app_id: str, cmd: list[str], log_path: Path, exit_path: Path, cwd: str | None,
          env: dict[str, str]) -> tuple[subprocess.Popen, ProcessId]:
    """The runner started on ``cmd``; BackendError (one line) when it cannot be."""
    try:
        with open(log_path, "ab") as out:
            out.write(f"sessionsched: launching {app_id}: {' '.join(redacted(cmd))}\n".encode())
            out.flush()
            popen = subprocess.Popen(
                [sys.executable, RUNNER, "--exit-file", str(exit_path), "--", *cmd],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=cwd, env=env, start_new_session=True)
    except OSError as e:
        raise BackendError(f"{app_id}: cannot start spark-submit: {e}") from None
    try:
        proc = procs.identify(popen.pid)
    except ProcessLookupError:  # ended at once; its exit file says how
        proc = ProcessId(popen.pid, 0)
    return popen, proc


def reap(popen: subprocess.Popen | None) -> None:
    """Collect the exit status of a child of ours that ended (no zombie left)."""
    if popen is not None:
        popen.poll()


class GraceStops:
    """Process groups sent SIGTERM, by app id, each with the time its grace ends."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self._pending: dict[str, tuple[ProcessId, subprocess.Popen | None, float]] = {}

    def begin(self, app_id: str, proc: ProcessId, popen: subprocess.Popen | None,
              now: float) -> None:
        """SIGTERM to the group; SIGKILL at ``escalate`` after the grace, if any is left."""
        if procs.signal_group(proc, signal.SIGTERM):
            self._pending[app_id] = (proc, popen, now + self.grace_s)

    def forget(self, app_id: str) -> None:
        self._pending.pop(app_id, None)

    def escalate(self, now: float) -> None:
        """Drop the groups that emptied; SIGKILL those whose grace has ended."""
        for app_id, (proc, popen, deadline) in list(self._pending.items()):
            reap(popen)
            if not procs.group_alive(proc.pid):
                del self._pending[app_id]
            elif now >= deadline:
                procs.signal_group(proc, signal.SIGKILL)
                del self._pending[app_id]

    def finish(self, clock: Callable[[], float]) -> None:
        """Wait out every pending stop (bounded by its grace), SIGKILL what is left."""
        for proc, popen, deadline in self._pending.values():
            procs.finish_stop(proc, max(deadline - clock(), 0.0))
            reap(popen)
        self._pending.clear()
