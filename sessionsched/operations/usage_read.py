"""``GET /api/v1/usage``: what apps used, per app or added up per queue or per user
(docs/operator/usage.md).

Read straight from the store (every app, also those forgotten from memory).

- ``by=app``: each app's ``usage`` column (``sessionsched.model.usage.AppUsage``), counted on to now
  from its stored levels while it lives. The window [since, until) picks the apps that were in
  the books at some time in it (submitted before ``until``, not ended before ``since``); each
  counts whole, not the part of its life inside the window.
- ``by=cluster``: ``by=app``'s lines added up per cluster (each app whole, on the cluster it
  was placed on; ``-``: never placed).
- ``by=queue|user``: the hourly rollup (``store/usage_hours``), which outlives the apps' rows:
  the hours that start inside the window, from the hour ``since`` falls in (a window is whole
  hours), plus what the live apps used since their last change of level (not in the rollup
  yet), split at the hours' edges the same way. ``apps``: the apps submitted in those hours.

Times: ``7d``, ``12h``, ``30m``, ``90s``, ``2w`` (that long before now), epoch seconds, or ISO
8601 (``2026-11-20``, ``2026-11-20T08:00:00Z``; without a zone: UTC).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

from sessionsched.model.usage import (
    APPS,
    HOURLY,
    QUEUED,
    RES_HOURLY,
    AppUsage,
    hour_of,
    hourly_figures,
    hourly_growth,
    hourly_resource_growth,
    hours_of,
    resource_figures,
)
from sessionsched.service.usage_meter import live_figures
from sessionsched.store import Store
from sessionsched.store.usage_hours import live_usage, load_hours

BY = ("queue", "user", "app", "cluster")
NOT_PLACED = "-"  # ``by=cluster``: the apps that never left their queue
_AGO = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class BadWhen(ValueError):
    """A time that does not parse; the message says which and what would."""


def parse_when(text: str, now: float, what: str) -> float:
    """``text`` as epoch seconds (module doc for the forms)."""
    t = text.strip()
    bad = f"{what} {text!r} is not a time (like 7d, 12h, epoch seconds or ISO 8601)"
    if m := _AGO.match(t):
        return now - float(m.group(1)) * _UNIT_S[m.group(2)]
    try:
        seconds = float(t)
    except ValueError:
        pass
    else:  # nan, inf and 1e400 parse as floats, and no time is either
        if not math.isfinite(seconds):
            raise BadWhen(bad)
        return seconds
    try:
        when = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise BadWhen(bad) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def window(since: str | None, until: str | None, now: float) -> tuple[float, float]:
    """[since, until) as epoch seconds (unset: from the start, to now). An empty or inverted
    window is refused: it would answer an empty list, as if nothing had run (``--since 1d
    --until 7d``, read as "up to 7 days", is one)."""
    start = 0.0 if not since else parse_when(since, now, "since")
    end = now if not until else parse_when(until, now, "until")
    if end <= start:
        raise BadWhen(f"until {until or 'now'!r} is not after since {since or '0'!r}: the "
                      "window [since, until) holds no time")
    return start, end


def usage_lines(store: Store, by: str, since: float, until: float, now: float,
                user: str | None = None, first_cluster: str | None = None) -> list[dict]:
    """One dict per app (``by="app"``, in order of first submission), queue, user or cluster:
    its key columns, ``apps`` (how many were added up) and the figures. ``user``: only this
    user's apps (a non-admin caller's own). ``first_cluster``: where an app launched with no
    cluster recorded ran (``by="cluster"``; the one cluster's name, or the first of several)."""
    if by not in BY:
        raise ValueError(f"by {by!r}: one of {', '.join(BY)}")
    if by in ("queue", "user"):
        return hourly_lines(store, by, since, until, now, user)
    lines: dict[str, dict] = {}
    where: dict[str, str] = {}  # app -> its cluster (``by=cluster``)
    for r in store.usage_rows(since, until):
        if user is not None and r.user != user:
            continue
        figures = live_figures(r.usage, now, r.finished_at)
        if r.state == "ACCEPTED":  # still queued: its queued_s so far
            figures["queued_s"] = round(max(0.0, now - r.submitted_at), 3)
        lines[r.id] = {"app": r.id, "queue": r.queue, "user": r.user, "state": r.state,
                       **({"cluster": r.cluster} if r.cluster is not None else {}),
                       "apps": 1, **figures}
        launched = r.started_at is not None and first_cluster is not None
        where[r.id] = r.cluster or (first_cluster if launched else NOT_PLACED)
    if by == "cluster":
        return cluster_lines(lines, where)
    return list(lines.values())


def cluster_lines(lines: dict[str, dict], where: dict[str, str]) -> list[dict]:
    """``by=app``'s ``lines`` added up per cluster (``where`` each app was placed), in the
    order of the clusters' names: each app counted whole, as ``by=app`` counts it."""
    sums: dict[str, dict] = {}
    for app_id, line in lines.items():
        total = sums.setdefault(where[app_id], {"cluster": where[app_id]})
        for k, v in line.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                total[k] = round(total.get(k, 0) + v, 3)
    return [sums[k] for k in sorted(sums)]


def hourly_lines(store: Store, by: str, since: float, until: float, now: float,
                 user: str | None = None) -> list[dict]:
    """One dict per queue or user (``by``), in the order of their names: the
    rollup's hours starting in [hour of ``since``, ``until``) and the live apps' part not in it
    yet (module doc)."""
    first = hour_of(since)
    sums: dict[str, list[float]] = {}
    res: dict[str, dict[str, list[float]]] = {}  # key -> resource -> RES_HOURLY sums

    def add(hour: float, queue: str, owner: str, row, name: str | None = None) -> None:
        if first <= hour < until and (user is None or owner == user):
            key = queue if by == "queue" else owner
            total = sums.setdefault(key, [0.0] * len(HOURLY))
            if name is not None:
                total = res.setdefault(key, {}).setdefault(name, [0.0] * len(RES_HOURLY))
            for i, v in enumerate(row):
                total[i] += v

    for h in load_hours(store, first, until):
        add(h.hour, h.queue, h.user, h.figures)
        for name, row in (h.resources or {}).items():
            add(h.hour, h.queue, h.user, row, name)
    for queue, owner, state, submitted_at, column in live_usage(store):
        u = AppUsage.from_json(column)
        for hour, row in hourly_growth(u, now):
            add(hour, queue, owner, row)
        for hour, name, row in hourly_resource_growth(u, now):
            add(hour, queue, owner, row, name)
        if state == "ACCEPTED":  # still queued: its wait so far
            for hour, dt in hours_of(submitted_at + u.queued_s, now):
                add(hour, queue, owner, only(QUEUED, dt))
        add(hour_of(submitted_at), queue, owner, only(APPS, 1.0))
    return [{by: key, **hourly_figures(row), **resource_figures(res.get(key, {}))}
            for key, row in sorted(sums.items())]


def only(i: int, value: float) -> list[float]:
    """An ``HOURLY`` row with ``value`` at ``i``, nothing else."""
    return [value if j == i else 0.0 for j in range(len(HOURLY))]
