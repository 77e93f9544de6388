"""An app's figures as they are read and logged: counted on from a stored column to now
(``live_figures``), its end's ``SESSIONSCHED_APP_SUMMARY`` line, its custom resources'
totals for the Prometheus counters (``resource_counted``)."""

from __future__ import annotations

from sessionsched.model import AppSpec, AppState
from sessionsched.model.usage import AppUsage

SUMMARY = "SESSIONSCHED_APP_SUMMARY"


def resource_counted(u: AppUsage) -> dict[str, list[float]]:
    """name -> the ``RES_COUNTED`` figures of ``u``'s custom resources, unrounded."""
    return {name: [held, busy, held - busy, reclaimed, driver]
            for name, (held, busy, reclaimed, driver) in u.res_s.items()}


def never_down(sums: dict, reported: dict) -> dict:
    """``sums`` (key -> figures), each figure raised to what the last scrape reported if it
    is below (a scrape reads while the cycle counts: a counter never goes down); ``reported``
    becomes them."""
    for key, total in sums.items():
        last = reported.get(key)
        if last is not None:
            total[:] = [max(a, b) for a, b in zip(total, last, strict=True)]
        reported[key] = total
    return sums


def live_figures(stored: dict | None, now: float, finished_at: float | None) -> dict:
    """An app's figures from its stored column, counted on from the levels stored (they hold
    until the next report) to ``now``, or to its end. An app the meter ended has no level
    left; one a restart found gone (``restore``: its driver did not survive) is counted to
    that end, an upper bound of what it held meanwhile."""
    u = AppUsage.from_json(stored)
    return u.at(now if finished_at is None else max(finished_at, u.since)).figures()


def summary_line(app_id: str, spec: AppSpec, state: AppState, end: float, u: AppUsage) -> str:
    f = u.figures()
    fields = [f"{SUMMARY} appId={app_id}", f"queue={spec.queue}", f"user={spec.user or '-'}",
              f"state={state.value}", f"submitted={spec.submitted_at:.3f}", f"ended={end:.3f}"]
    fields += [f"{k}={v}" for k, v in f.items()]
    return " ".join(fields)
