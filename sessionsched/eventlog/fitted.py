"""The cluster's latencies, fitted from the logs themselves (the workload's ``cluster`` keys
the memory cluster replays; docs/operator/simulator.md says where each comes from).

- ``driver_start_s``: the median, over the apps sessionsched launched, of its launch
  (``spark.sessionsched.launchTime``, stamped at launch) to its application's start: the
  driver's JVM, the SparkContext, its registration with the master. A log of an app launched
  otherwise holds no launch: without a stamp, no fit (the workload's default stays).
- ``executor_start_s``: the median, over every executor added, of the time from when it was
  asked for to when it was added (``SparkListenerExecutorAdded``). A log holds no request:
  it is taken as the later of the submission of the app's stage then running (its tasks made
  the demand) and the last moment before the add a core was freed anywhere in the logs (an
  executor removed, an app's executors gone at its end): the earliest the executor could have
  been started. Under contention the scheduler's own wait is in it too, so it is an upper
  bound at the high end and the median is taken.
- ``executor_idle_timeout_s``: the median of the apps' ``spark.dynamicAllocation.
  executorIdleTimeout`` (Spark's 60 s where an app with dynamic allocation set none).
"""

from __future__ import annotations

import bisect
import statistics

from ..spark.allocation import dynamic_allocation
from ..spark.gang_properties import parse_time_s
from .events import AppFacts

LAUNCH_TIME = "spark.sessionsched.launchTime"  # stamped by every sessionsched launch (epoch ms)
IDLE_TIMEOUT = "spark.dynamicAllocation.executorIdleTimeout"
SPARK_IDLE_TIMEOUT_S = 60.0


def _stamp_ms(facts: AppFacts, key: str) -> int | None:
    text = str(facts.properties.get(key, "")).strip()
    return int(text) if text.isdigit() else None


def driver_starts_s(apps: list[AppFacts]) -> list[float]:
    """Per app with a launch stamp, its launch to its application's start, in seconds."""
    out = []
    for f in apps:
        launched = _stamp_ms(f, LAUNCH_TIME)
        if launched is not None and launched <= f.start_ms:
            out.append((f.start_ms - launched) / 1000.0)
    return out


def executor_starts_s(apps: list[AppFacts]) -> list[float]:
    """Per executor added, the time since it could first have been asked for (module doc)."""
    frees = sorted(e.removed_ms if e.removed_ms is not None else f.end_ms
                   for f in apps for e in f.executors)
    out = []
    for f in apps:
        submitted = sorted(s.submitted_ms for s in f.stages if s.submitted_ms is not None)
        for e in f.executors:
            at = bisect.bisect_right(submitted, e.added_ms)
            if at == 0:
                continue  # added before any stage: asked for at the start (minExecutors)
            freed = bisect.bisect_right(frees, e.added_ms)
            asked = max(submitted[at - 1], frees[freed - 1] if freed else 0)
            out.append((e.added_ms - asked) / 1000.0)
    return out


def idle_timeouts_s(apps: list[AppFacts]) -> list[float]:
    out = []
    for f in apps:
        props = f.properties
        if not dynamic_allocation(props):
            continue
        try:
            out.append(parse_time_s(IDLE_TIMEOUT, str(props[IDLE_TIMEOUT]))
                       if IDLE_TIMEOUT in props else SPARK_IDLE_TIMEOUT_S)
        except ValueError:
            continue
    return out


def fitted_cluster(apps: list[AppFacts]) -> tuple[dict, list[str]]:
    """The cluster keys fitted from ``apps`` and a line saying how, for each (module doc)."""
    keys: dict = {}
    said: list[str] = []
    for key, values, what in (
            ("driver_start_s", driver_starts_s(apps),
             "launch (sessionsched's stamp) -> application start"),
            ("executor_start_s", executor_starts_s(apps),
             "executor asked for (as far as the logs show) -> added"),
            ("executor_idle_timeout_s", idle_timeouts_s(apps),
             "spark.dynamicAllocation.executorIdleTimeout")):
        if values:
            keys[key] = round(max(statistics.median(values), 0.0), 3)
            said.append(f"{key} {keys[key]:g}: the median of {len(values)} {what} "
                        f"({min(values):.1f}-{max(values):.1f})")
    return keys, said
