"""A fault hook for the crash tests: the scheduler killed at a named point, on purpose.

Off (``from_env`` gives None, and nothing is called) unless the environment asks for it;
``sessionsched serve`` has no option for it. The named points are where a crash is worst:

- ``submit-committed``: a submission is on disk, its caller not yet answered;
- ``cycle-committed``: a cycle that launches drivers is on disk, none of them launched yet;
- ``launched``: drivers were launched, their handles not yet on disk;
- ``launch-waiting``: launches that failed for a transient reason wait on disk to be tried
  again (``LATER_POINTS``: a submission burst without launch failures never passes there).

``SESSIONSCHED_FAULT_KILL=POINT:N``: the process SIGKILLs itself at its N-th pass through
POINT (no cleanup, no flush: as ``kill -9``). ``SESSIONSCHED_FAULT_LOG=PATH``: every pass is
appended to PATH first, as a line ``POINT ID...`` (the apps it is about), so a test can count
launches across crashes.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass

POINTS = ("submit-committed", "cycle-committed", "launched")  # the crash loop's
LATER_POINTS = ("launch-waiting",)


@dataclass
class FaultHook:
    kill_point: str | None = None
    kill_at: int = 0  # the pass (1-based) that kills
    log_path: str | None = None

    def __post_init__(self) -> None:
        self._passes = 0
        self._lock = threading.Lock()

    def __call__(self, point: str, *ids: str) -> None:
        with self._lock:
            if self.log_path:
                fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, (" ".join((point, *ids)) + "\n").encode())
                finally:
                    os.close(fd)
            if point != self.kill_point:
                return
            self._passes += 1
            if self._passes == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)


def from_env(env: dict[str, str] | None = None) -> FaultHook | None:
    """The hook the environment asks for, or None. A malformed setting is a ValueError
    naming it (the server does not start)."""
    env = os.environ if env is None else env
    kill = env.get("SESSIONSCHED_FAULT_KILL", "")
    log_path = env.get("SESSIONSCHED_FAULT_LOG", "") or None
    if not kill and not log_path:
        return None
    point, at = None, 0
    if kill:
        point, _, n = kill.partition(":")
        if point not in POINTS + LATER_POINTS or not n.isdigit() or int(n) < 1:
            raise ValueError(f"SESSIONSCHED_FAULT_KILL={kill!r}: expected POINT:N with POINT "
                             f"one of {', '.join(POINTS + LATER_POINTS)} and N >= 1")
        at = int(n)
    return FaultHook(point, at, log_path)
