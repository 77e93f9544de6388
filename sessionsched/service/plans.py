"""Time-of-day queue plans (config ``plans``): cron entries that change queue settings.

Each plan fires by its own ``CronTrigger``; from then on the queues run with the configured
settings plus that plan's overrides, until another plan fires. Plans do not stack: the queues
are always "the config + the plan that fired last". A server started between two firings runs
the plan that fired last before it started (so a restart at 10:00 keeps the 08:00 plan).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from apscheduler.triggers.cron import CronTrigger

from sessionsched.config import PlanConfig
from sessionsched.cron import cron_trigger

# How far back to look for a plan's last firing, smallest window first so that a
# minute-by-minute cron costs a few steps, not half a million.
_LOOKBACK = (timedelta(hours=1), timedelta(days=1), timedelta(days=8), timedelta(days=366))
_MAX_STEPS = 20000


def trigger(plan: PlanConfig) -> CronTrigger:
    return cron_trigger(plan.cron, plan.timezone)


def last_fire_time(plan: PlanConfig, now: datetime) -> datetime | None:
    """When the plan last fired at or before ``now`` (aware datetime), None if not in a year."""
    trig = trigger(plan)
    for window in _LOOKBACK:
        previous = None
        at = trig.get_next_fire_time(None, now - window)
        steps = 0
        while at is not None and at <= now and steps < _MAX_STEPS:
            previous = at
            at = trig.get_next_fire_time(at, at + timedelta(seconds=1))
            steps += 1
        if previous is not None:
            return previous
    return None


def current_plan(plans: list[PlanConfig], now: datetime) -> int | None:
    """Index of the plan that fired last at or before ``now``; None if none did."""
    best: tuple[datetime, int] | None = None
    for i, plan in enumerate(plans):
        at = last_fire_time(plan, now)
        if at is not None and (best is None or at >= best[0]):
            best = (at, i)
    return best[1] if best else None


def describe(plan: PlanConfig) -> str:
    changes = "; ".join(
        f"{name} " + ", ".join(f"{k}={v.value if hasattr(v, 'value') else v}"
                               for k, v in override.changes().items())
        for name, override in plan.queues.items()
    )
    return f"plan '{plan.cron}'" + (f": {changes}" if changes else "")
