"""Time-of-day queue plans (config ``plans``): when each fires, by its ``cron`` (every matching
minute) or once at its ``at`` (to the second), as APScheduler triggers. One reading for the
config's validation, the server (``service.plans``, which fires each by its trigger) and the
simulator (``sim.queue_trees``, which fires them on its clock).

From a plan's firing on, the queues run with the configured settings plus that plan's
overrides, until another plan fires. Plans do not stack: the queues are always "the config +
the plan that fired last". A server started between two firings runs the plan that fired last
before it started (so a restart at 10:00 keeps the 08:00 plan, and a one-shot plan whose time
has passed applies until a later firing); a one-shot plan is scheduled only when its time is
still ahead.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger

if TYPE_CHECKING:  # queues.PlanConfig reads its times here: imported for the types only
    from .queues import PlanConfig


def _dow_to_apscheduler(field: str) -> str:
    """A crontab day-of-week field (0 or 7 = Sunday, 1 = Monday) in APScheduler 3's numbering
    (0 = Monday). ``CronTrigger.from_crontab`` does not convert, so "1-5" would mean Tuesday to
    Saturday there. Names (mon-fri) mean the same in both and pass through."""
    if field in ("*", "?"):
        return "*"
    names: list[str] = []
    days: set[int] = set()
    for part in field.split(","):
        if any(c.isalpha() for c in part):
            names.append(part)
            continue
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            lo, hi = 0, 6
        elif "-" in base:
            lo_text, hi_text = base.split("-", 1)
            lo, hi = int(lo_text), int(hi_text)
        else:
            lo = int(base)
            hi = 6 if step_text else lo
        if not (0 <= lo <= 7 and 0 <= hi <= 7 and lo <= hi and step >= 1):
            raise ValueError(f"day of week {part!r} is not within 0-7")
        days.update(d % 7 for d in range(lo, hi + 1, step))
    converted = [str((d - 1) % 7) for d in sorted(days)]
    return ",".join(converted + names)


def cron_trigger(expr: str, timezone: str | None = None) -> CronTrigger:
    """A 5-field crontab expression (minute hour day month day-of-week, crontab's numbering)
    as an APScheduler trigger. ValueError names the problem."""
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError(
            f"expected 5 fields (minute hour day month day-of-week), got {len(fields)}"
        )
    minute, hour, day, month, dow = fields
    return CronTrigger(
        minute=minute, hour=hour, day=day, month=month,
        day_of_week=_dow_to_apscheduler(dow), timezone=timezone,
    )


def date_time(value: object) -> datetime:
    """A one-shot time as written in YAML: ISO 8601 text (``2026-12-24T14:00:00``, an offset or
    ``Z`` optional; a date alone is its midnight) or what YAML already read as a date/time.
    A number is refused, not taken as seconds since 1970. ValueError names the problem."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{value!r} is not a date and time like 2026-12-24T14:00:00 (an offset "
                     "such as +01:00 or Z optional)")


def aware(at: datetime) -> datetime:
    """``at`` with its offset; one without is in the local zone (as a plan's ``at`` with no
    ``timezone``). ValueError for a time the local zone cannot hold (the year 1)."""
    if at.tzinfo is not None:
        return at
    try:
        return at.astimezone()
    except (ValueError, OverflowError) as e:
        raise ValueError(f"{at.isoformat()}: {e} in the local time zone") from None


def at_trigger(at: datetime, timezone: str | None = None) -> DateTrigger:
    """A one-shot trigger at ``at``; a time without an offset is in ``timezone`` (default the
    local zone). ValueError (or a zone error) names the problem."""
    return DateTrigger(run_date=at, timezone=timezone)


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
            at = _after(trig, at)
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


def firings(plans: list[PlanConfig], start: datetime, end: datetime,
            most: int = 100_000) -> list[tuple[datetime, int]]:
    """Every firing of ``plans`` after ``start`` up to ``end`` (aware datetimes), in time order,
    by index; at one time the later plan last, as the one that runs (``current_plan``).
    ValueError past ``most`` firings (a cron of every minute over a long span)."""
    out: list[tuple[datetime, int]] = []
    for i, trig in still_to_fire(plans, start):
        at = _after(trig, start)
        while at is not None and at <= end:
            out.append((at, i))
            if len(out) > most:
                raise ValueError(f"the plans fire more than {most:,} times between "
                                 f"{start.isoformat()} and {end.isoformat()}")
            at = _after(trig, at)
    return sorted(out)


def next_change(plans: list[PlanConfig], now: datetime, current: int | None,
                most: int = 1000) -> tuple[datetime, int] | None:
    """When the queues next change after ``now``, and by which plan: the next firing of a plan
    other than ``current`` (the one in force), unless ``current`` fires at that time too and
    wins it (at one time the later plan runs, as in ``current_plan``). None if no other plan
    will fire (or every one of its next ``most`` firings is such a tie)."""
    triggers = dict(still_to_fire(plans, now))
    mine = None if current is None else triggers.pop(current, None)
    after = now
    for _ in range(most):
        times = {i: at for i, trig in triggers.items() if (at := _after(trig, after)) is not None}
        if not times:
            return None
        first = min(times.values())
        runs = max(i for i, at in times.items() if at == first)
        if mine is None or runs > current or _after(mine, first - timedelta(seconds=1)) != first:
            return first, runs
        after = first
    return None


def _after(trig: Trigger, after: datetime) -> datetime | None:
    """The trigger's next firing after ``after``: a one-shot's time if still ahead, a cron's
    next (None past the calendar's end, the year 9999). A cron looks from the next whole
    second after ``after`` (APScheduler rounds up to the second): from a second and a bit it
    would skip a firing at the next whole second."""
    if isinstance(trig, DateTrigger):
        return trig.run_date if trig.run_date > after else None
    try:
        return trig.get_next_fire_time(None, after + timedelta(microseconds=1))
    except OverflowError:
        return None


def describe(plan: PlanConfig) -> str:
    changes = "; ".join(
        f"{name} " + ", ".join(f"{k}={v.value if hasattr(v, 'value') else v}"
                               for k, v in override.changes().items())
        for name, override in plan.queues.items()
    )
    when = plan.cron if plan.at is None else f"at {trigger(plan).run_date.isoformat()}"
    return f"plan '{when}'" + (f": {changes}" if changes else "")
