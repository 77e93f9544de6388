"""Time-of-day queue plans (config ``plans``): entries that change queue settings, each fired
by its ``cron`` (every matching minute) or once at its ``at`` (to the second).

Each plan fires by its own APScheduler trigger; from then on the queues run with the configured
settings plus that plan's overrides, until another plan fires. Plans do not stack: the queues
are always "the config + the plan that fired last". A server started between two firings runs
the plan that fired last before it started (so a restart at 10:00 keeps the 08:00 plan, and a
one-shot plan whose time has passed applies until a later firing); a one-shot plan is
scheduled only when its time is still ahead.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger

from sessionsched.config import PlanConfig
from sessionsched.config.plan_times import at_trigger, cron_trigger

# How far back to look for a cron plan's last firing, smallest window first so that a
# minute-by-minute cron costs a few steps, not half a million.
_LOOKBACK = (timedelta(hours=1), timedelta(days=1), timedelta(days=8), timedelta(days=366))
_MAX_STEPS = 20000


Trigger = CronTrigger | DateTrigger


def trigger(plan: PlanConfig) -> Trigger:
    if plan.at is not None:
        return at_trigger(plan.at, plan.timezone)
    return cron_trigger(plan.cron, plan.timezone)


def last_fire_time(plan: PlanConfig, now: datetime) -> datetime | None:
    """When the plan last fired at or before ``now`` (aware datetime); None if it has not yet
    (a one-shot plan) or not in a year (a cron plan)."""
    trig = trigger(plan)
    if isinstance(trig, DateTrigger):
        return trig.run_date if trig.run_date <= now else None
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


def still_to_fire(plans: list[PlanConfig], now: datetime) -> list[tuple[int, Trigger]]:
    """The plans that will fire after ``now``, by index, with their triggers: every cron plan,
    and the one-shot plans whose time is ahead (one already past is ``current_plan``'s business:
    scheduled, it would run at once, late, over a plan that fired after it)."""
    triggers = [(i, trigger(plan)) for i, plan in enumerate(plans)]
    return [(i, t) for i, t in triggers if not isinstance(t, DateTrigger) or t.run_date > now]


def describe(plan: PlanConfig) -> str:
    changes = "; ".join(
        f"{name} " + ", ".join(f"{k}={v.value if hasattr(v, 'value') else v}"
                               for k, v in override.changes().items())
        for name, override in plan.queues.items()
    )
    when = plan.cron if plan.at is None else f"at {trigger(plan).run_date.isoformat()}"
    return f"plan '{when}'" + (f": {changes}" if changes else "")
