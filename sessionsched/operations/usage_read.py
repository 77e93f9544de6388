"""``GET /api/v1/usage``: what apps used, per app or added up per queue or per user
(docs/usage.md).

Read straight from the store (every app, also those forgotten from memory): each app's
``usage`` column (``sessionsched.usage.AppUsage``), counted on to now from its stored levels
while it lives. The window [since, until) picks the apps that were in the books at some time in
it (submitted before ``until``, not ended before ``since``); each counts whole, not the part of
its life inside the window.

Times: ``7d``, ``12h``, ``30m``, ``90s``, ``2w`` (that long before now), epoch seconds, or ISO
8601 (``2026-11-20``, ``2026-11-20T08:00:00Z``; without a zone: UTC).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from sessionsched.service.usage_meter import live_figures
from sessionsched.store import Store

BY = ("queue", "user", "app")
_AGO = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class BadWhen(ValueError):
    """A time that does not parse; the message says which and what would."""


def parse_when(text: str, now: float, what: str) -> float:
    """``text`` as epoch seconds (module doc for the forms)."""
    t = text.strip()
    if m := _AGO.match(t):
        return now - float(m.group(1)) * _UNIT_S[m.group(2)]
    try:
        return float(t)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise BadWhen(f"{what} {text!r} is not a time (like 7d, 12h, epoch seconds or ISO 8601)")\
            from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def usage_lines(store: Store, by: str, since: float, until: float, now: float,
                user: str | None = None) -> list[dict]:
    """One dict per app (``by="app"``), queue or user, in order of first submission: its key
    columns, ``apps`` (how many were added up) and the figures. ``user``: only this user's
    apps (a non-admin caller's own)."""
    if by not in BY:
        raise ValueError(f"by {by!r}: one of {', '.join(BY)}")
    lines: dict[str, dict] = {}
    for r in store.usage_rows(since, until):
        if user is not None and r.user != user:
            continue
        figures = live_figures(r.usage, now, r.finished_at)
        if r.state == "ACCEPTED":  # still queued: its queued_s so far
            figures["queued_s"] = round(max(0.0, now - r.submitted_at), 3)
        if by == "app":
            lines[r.id] = {"app": r.id, "queue": r.queue, "user": r.user, "state": r.state,
                           "apps": 1, **figures}
            continue
        key = r.queue if by == "queue" else r.user
        line = lines.setdefault(key, {by: key, "apps": 0})
        line["apps"] += 1
        for k, v in figures.items():
            line[k] = round(line.get(k, 0) + v, 3)
    return list(lines.values())
