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

With the CPUs of the one machine the logged drivers and executors started on
(``--host-cpus``: the workload's ``host_cpus``, where starts share them,
``backends.memory.starts``), each start counts as the CPU time it had rather than its length:
its length at ``min(1, cpus / n)``, n the starts under way at each moment as the logs show
them (the drivers' and executors' spans above, which over-count the executors' at the high
end). A start in a crowd of four on 2 CPUs took twice its work.
"""

from __future__ import annotations

import bisect
import itertools
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


def driver_spans(apps: list[AppFacts]) -> list[tuple[int, int]]:
    """Per app with a launch stamp, its launch and its application's start (ms)."""
    out = []
    for f in apps:
        launched = _stamp_ms(f, LAUNCH_TIME)
        if launched is not None and launched <= f.start_ms:
            out.append((launched, f.start_ms))
    return out


def executor_spans(apps: list[AppFacts]) -> list[tuple[int, int]]:
    """Per executor added, when it could first have been asked for and when it was added
    (module doc)."""
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
            out.append((asked, e.added_ms))
    return out


def work_s(spans: list[tuple[int, int]], crowd: list[tuple[int, int]], cpus: float | None
           ) -> list[float]:
    """Each span's length in seconds; with ``cpus``, the CPU time it had instead: its length
    at ``min(1, cpus / n)``, n the spans of ``crowd`` under way at each moment (the starts
    sharing the host's CPUs, ``backends.memory.starts``)."""
    if cpus is None:
        return [(b - a) / 1000.0 for a, b in spans]
    edges = sorted({t for span in crowd for t in span})
    step = [0] * len(edges)  # how many of ``crowd`` run from edges[i] to edges[i + 1]
    for a, b in crowd:
        step[bisect.bisect_left(edges, a)] += 1
        step[bisect.bisect_left(edges, b)] -= 1
    step = list(itertools.accumulate(step))
    out = []
    for a, b in spans:
        had, i = 0.0, bisect.bisect_right(edges, a) - 1
        while a < b:
            until = min(edges[i + 1], b) if i + 1 < len(edges) else b
            had += (until - a) * min(1.0, cpus / max(step[i], 1)) if i >= 0 else until - a
            a, i = until, i + 1
        out.append(had / 1000.0)
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


def fitted_cluster(apps: list[AppFacts], cpus: float | None = None) -> tuple[dict, list[str]]:
    """The cluster keys fitted from ``apps`` and a line saying how, for each (module doc)."""
    keys: dict = {}
    said: list[str] = []
    drivers, executors = driver_spans(apps), executor_spans(apps)
    crowd = drivers + executors
    shared = f", as CPU time of {cpus:g} shared with the starts beside it" if cpus else ""
    for key, values, what in (
            ("driver_start_s", work_s(drivers, crowd, cpus),
             f"launch (sessionsched's stamp) -> application start{shared}"),
            ("executor_start_s", work_s(executors, crowd, cpus),
             f"executor asked for (as far as the logs show) -> added{shared}"),
            ("executor_idle_timeout_s", idle_timeouts_s(apps),
             "spark.dynamicAllocation.executorIdleTimeout")):
        if values:
            keys[key] = round(max(statistics.median(values), 0.0), 3)
            said.append(f"{key} {keys[key]:g}: the median of {len(values)} {what} "
                        f"({min(values):.1f}-{max(values):.1f})")
    return keys, said
