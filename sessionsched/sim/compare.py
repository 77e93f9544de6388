"""Two runs side by side (``sessionsched simulate --compare A B``): the figures that say which
did better, and for whom.

- ``summary``: each run's makespan, completed/failed/stuck, completion mean and p95,
  utilisation and Jain's index (``result``'s definitions).
- ``queues``: per leaf queue of either run, its apps, the mean and p95 (nearest rank) of their
  queue wait (``usage.queued_s``: submission to launch, or to the run's end for an app never
  launched) and of their completion (``finished - submitted``, apps that FINISHED).
- ``usage``: the runs' usage summed over the apps (core-seconds held, busy and idle,
  reclaimed, the drivers'; seconds queued).
- ``gains`` / ``losses``: the apps of both runs whose completion changed most, B against A
  (``delta_s`` = B - A; negative: B finished it sooner). An app that finished in one run only
  comes first, with a null ``delta_s``: gained if it finished in B, lost if in A.
"""

from __future__ import annotations

import math
from typing import Any

from .result import AppResult, SimResult

SUMMARY = ("makespan", "completed", "failed", "stuck", "mean_completion", "p95_completion",
           "utilization", "fairness_jain")
USAGE = ("held_core_s", "busy_core_s", "idle_core_s", "reclaimed_core_s", "driver_core_s",
         "queued_s")
TOP = 5


def completion(a: AppResult) -> float | None:
    if a.state != "FINISHED" or a.finished is None:
        return None
    return round(a.finished - a.submitted, 3)


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def _p95(xs: list[float]) -> float | None:
    if not xs:
        return None
    ordered = sorted(xs)
    return round(ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)], 3)


def queue_figures(result: SimResult, queue: str) -> dict[str, Any]:
    apps = [a for a in result.apps if a.queue == queue]
    waits = [float(a.usage["queued_s"]) for a in apps]
    done = [c for a in apps if (c := completion(a)) is not None]
    return {"apps": len(apps), "mean_wait": _mean(waits), "p95_wait": _p95(waits),
            "mean_completion": _mean(done), "p95_completion": _p95(done)}


def usage_totals(result: SimResult) -> dict[str, float]:
    return {k: round(sum(float(a.usage.get(k, 0.0)) for a in result.apps), 3) for k in USAGE}


def app_changes(a: SimResult, b: SimResult, top: int = TOP) -> tuple[list[dict], list[dict]]:
    """The ``top`` apps that gained most and lost most, B against A (module doc)."""
    in_b = {x.name: x for x in b.apps}
    rows = []
    for x in a.apps:
        y = in_b.get(x.name)
        if y is None:
            continue
        ca, cb = completion(x), completion(y)
        if ca is None and cb is None:
            continue
        delta = None if ca is None or cb is None else round(cb - ca, 3)
        rows.append({"name": x.name, "queue_a": x.queue, "queue_b": y.queue, "state_a": x.state,
                     "state_b": y.state, "completion_a": ca, "completion_b": cb,
                     "delta_s": delta})

    def gained(r: dict) -> bool:
        return r["completion_a"] is None if r["delta_s"] is None else r["delta_s"] < 0

    def lost(r: dict) -> bool:
        return r["completion_b"] is None if r["delta_s"] is None else r["delta_s"] > 0

    def order(r: dict) -> float:
        return math.inf if r["delta_s"] is None else abs(r["delta_s"])

    gains = sorted((r for r in rows if gained(r)), key=order, reverse=True)[:top]
    losses = sorted((r for r in rows if lost(r)), key=order, reverse=True)[:top]
    return gains, losses


def compare(a: SimResult, b: SimResult, top: int = TOP) -> dict[str, Any]:
    queues = list(dict.fromkeys([*a.queues, *b.queues]))
    gains, losses = app_changes(a, b, top)
    return {
        "summary": {k: {"a": a.summary[k], "b": b.summary[k]} for k in SUMMARY},
        "queues": {q: {"a": queue_figures(a, q), "b": queue_figures(b, q)} for q in queues},
        "usage": {"a": usage_totals(a), "b": usage_totals(b)},
        "gains": gains,
        "losses": losses,
    }
