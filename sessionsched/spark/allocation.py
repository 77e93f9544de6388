"""How fast a Spark app with dynamic allocation asks for executors: its allocation manager adds
them once tasks have waited ``spark.dynamicAllocation.schedulerBacklogTimeout`` (Spark's
default 1 s), then again after each ``sustainedSchedulerBacklogTimeout`` of backlog (default:
the first), twice as many each round. The memory cluster ramps an app's requests by them; a
workload built from event logs carries each app's."""

from __future__ import annotations

from collections.abc import Mapping

from .gang_properties import parse_time_s

BACKLOG = "spark.dynamicAllocation.schedulerBacklogTimeout"
SUSTAINED_BACKLOG = "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout"
SPARK_BACKLOG_S = 1.0


def dynamic_allocation(props: Mapping[str, str]) -> bool:
    """Whether the app ran with dynamic allocation, as a log's properties say."""
    return str(props.get("spark.dynamicAllocation.enabled", "")).strip().lower() == "true"


def backlog_timeouts(props: Mapping[str, str]) -> tuple[float, float] | None:
    """The two timeouts in seconds when either is set (the other as Spark defaults it), else
    None; ValueError (one line, naming the property) for one that does not parse."""
    if BACKLOG not in props and SUSTAINED_BACKLOG not in props:
        return None
    first = parse_time_s(BACKLOG, props[BACKLOG]) if BACKLOG in props else SPARK_BACKLOG_S
    then = (parse_time_s(SUSTAINED_BACKLOG, props[SUSTAINED_BACKLOG])
            if SUSTAINED_BACKLOG in props else first)
    return first, then
