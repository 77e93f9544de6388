"""``--calibrate``: the executor start that makes the simulated day end as the logged one did.

A log shows when an executor was added, not when it was asked for, so ``fitted``'s
``executor_start_s`` is an estimate; on a loaded machine an executor's start also grows with
the JVMs starting beside it, which the median of a day does not follow. The logs do show the
outcome: each app's completion, from its submission (``app_entry.submit_ms``) to its
application's end. So the workload is simulated with ``executor_start_s`` at each of
``FACTORS`` times the fitted one, and the value whose apps' completions come closest to the
logs' (the median of ``|simulated - logged| / logged``; ties: the makespan's error) is kept.
The rest of the workload is as built. One simulation per candidate: for a day of a few
hundred apps, seconds each.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

import yaml

from ..config import parse_model
from ..sim.simulator import simulate
from ..sim.workload import WorkloadConfig, to_workload

FACTORS = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)


def errors(data: dict, completions: Mapping[str, float]) -> tuple[float, float]:
    """(median relative completion error, relative makespan error) of simulating ``data``."""
    result = simulate(to_workload(parse_model(WorkloadConfig, data, "the workload")))
    rel, ends = [], []
    for app in result.apps:
        logged = completions.get(app.name)
        if logged is None or logged <= 0:
            continue
        took = None if app.finished is None else app.finished - app.submitted
        rel.append(1.0 if took is None else abs(took - logged) / logged)
        ends.append(app.finished if app.finished is not None else float("inf"))
    if not rel:
        return float("inf"), float("inf")
    real_end = max(app.submitted + completions[app.name] for app in result.apps
                   if app.name in completions)
    return statistics.median(rel), abs(max(ends) - real_end) / max(real_end, 1e-9)


def calibrated_executor_start(text: str, completions: Mapping[str, float]) -> tuple[float, str]:
    """The workload ``text``'s best ``executor_start_s`` (module doc) and a line saying so."""
    data = yaml.safe_load(text)
    fitted = float(data["cluster"].get("executor_start_s", 3.0)) or 1.0
    scored = []
    for factor in FACTORS:
        value = round(fitted * factor, 3)
        data["cluster"]["executor_start_s"] = value
        scored.append((errors(data, completions), value))
    (median, makespan), best = min(scored)
    return best, (f"executor_start_s {best:g}: calibrated, of {len(FACTORS)} values "
                  f"{fitted * FACTORS[0]:g}-{fitted * FACTORS[-1]:g}, the one whose apps' "
                  f"completions come closest to the logs' (median error {median:.0%}, "
                  f"makespan {makespan:.0%})")
