"""Processes we started, found again safely: a PID plus its start time.

A PID alone is not an identity: after the process ends the kernel may give the number to an
unrelated process, and a ``kill`` by PID would then hit a stranger. So every process we start
is recorded as ``ProcessId(pid, start_ticks)`` -- the start time in clock ticks since boot
(field 22 of ``/proc/PID/stat``), which never changes for a process (not even across ``exec``)
and differs for any later process with the same number. Linux only (``/proc``).

Every process we start leads its own session (``start_new_session=True``), so its process
group id is its PID and the group holds everything it started (a spark-submit JVM and its
Python driver; a Worker and its executors). Stopping it means signalling the group.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessId:
    pid: int
    start_ticks: int

    def __str__(self) -> str:
        return f"{self.pid}:{self.start_ticks}"

    @classmethod
    def parse(cls, text: str) -> ProcessId:
        """From ``str()``: ``"PID:START_TICKS"``. Raises ValueError if malformed."""
        pid, sep, ticks = text.partition(":")
        if not sep:
            raise ValueError(f"not a process reference (PID:START_TICKS): {text!r}")
        return cls(int(pid), int(ticks))


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may itself contain spaces and ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has ended; only its exit status is left to collect
        return None
    return int(fields[19])  # field 22 overall; fields[0] is field 3


def identify(pid: int) -> ProcessId:
    """The identity of a process we just started. Raises ProcessLookupError if it is gone."""
    ticks = start_ticks(pid)
    if ticks is None:
        raise ProcessLookupError(f"process {pid} has already ended")
    return ProcessId(pid, ticks)


def is_running(proc: ProcessId) -> bool:
    """True if this very process (same PID and start time) is still running."""
    return start_ticks(proc.pid) == proc.start_ticks


def group_alive(pgid: int) -> bool:
    """True if any process is left in the process group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(proc: ProcessId, sig: int) -> bool:
    """Send ``sig`` to the process group led by ``proc``. Returns False if nothing was signalled.

    The group is signalled if its leader is still ``proc``, or if the leader is gone and
    members are left (orphans of ours: the kernel does not reuse a group id while the group has
    members). A live process with the same PID but another start time is a stranger: left alone.
    """
    ticks = start_ticks(proc.pid)
    if ticks is not None and ticks != proc.start_ticks:
        return False
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def stop_group(proc: ProcessId, grace_s: float, poll_s: float = 0.1) -> None:
    """SIGTERM the group, wait up to ``grace_s`` for it to empty, then SIGKILL what is left.
    Returns once the group is empty or, after SIGKILL, after at most 5 more seconds."""
    if signal_group(proc, signal.SIGTERM):
        finish_stop(proc, grace_s, poll_s)


def finish_stop(proc: ProcessId, grace_s: float, poll_s: float = 0.1) -> None:
    """A group already sent SIGTERM: wait up to ``grace_s`` for it to empty, then SIGKILL what
    is left (and wait at most 5 more seconds)."""
    if wait_group_gone(proc.pid, grace_s, poll_s):
        return
    signal_group(proc, signal.SIGKILL)
    wait_group_gone(proc.pid, 5.0, poll_s)


def wait_group_gone(pgid: int, timeout_s: float, poll_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid):
        _reap(pgid)
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


def _reap(pid: int) -> None:
    """Collect the exit status if ``pid`` is our own child, so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
