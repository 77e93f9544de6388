"""A gang as the CLI shows it (``status``: one line, ``apps``: the GANG column), from the
app object's ``gang`` (docs/user/api.md). Time left is the reservation's deadline less the client's
clock now: the server sends when, not how long, so a line is true when it is printed."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..client import parse_time


def _left(deadline: str | None, now: datetime) -> str:
    end = parse_time(deadline)
    if end is None:
        return "?"
    s = max(0, int((end - now).total_seconds()))
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    return (f"{h}h" if h else "") + (f"{m}m" if m or h else "") + f"{sec}s"


def _clock(value: str | None) -> str:
    t = parse_time(value)
    return t.astimezone().strftime("%H:%M:%S") if t else "-"


def gang_line(gang: dict[str, Any] | None, now: datetime | None = None) -> str:
    """``8 executors, soft, timeout 900s; reserved 4/9 cores, 4096/9216 MiB since 10:01:02,
    14m50s left`` ("-": not a gang)."""
    if not gang:
        return "-"
    now = now or datetime.now(timezone.utc)
    line = f"{gang['executors']} executors, {gang['style']}, timeout {gang['timeout_s']:g}s"
    res = gang.get("reservation")
    if not res:
        return line
    line = (f"{line}; reserved {res['held_cores']}/{res['needed_cores']} cores, "
            f"{res['held_memory_mib']}/{res['needed_memory_mib']} MiB")
    if not res.get("since"):
        return f"{line} (its timeout starts at the first reserved core)"
    return f"{line} since {_clock(res['since'])}, {_left(res['deadline'], now)} left"


def gang_mark(gang: dict[str, Any] | None, now: datetime | None = None) -> str:
    """The apps table's GANG cell: ``-``, ``8`` (a gang of 8 executors), or while it reserves
    ``8 4/9c 14m50s`` (cores reserved of needed, time left; none before the first core)."""
    if not gang:
        return "-"
    res = gang.get("reservation")
    if not res:
        return str(gang["executors"])
    mark = f"{gang['executors']} {res['held_cores']}/{res['needed_cores']}c"
    if not res.get("deadline"):
        return mark
    return f"{mark} {_left(res['deadline'], now or datetime.now(timezone.utc))}"
