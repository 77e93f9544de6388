"""A time-of-day plan's times as APScheduler triggers: a crontab expression (fires at each
matching minute) or a one-shot date and time (fires once, to the second). One parser for the
config's validation and the server's plans (``service/plans.py``)."""

from __future__ import annotations

from datetime import date, datetime

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger


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


def at_trigger(at: datetime, timezone: str | None = None) -> DateTrigger:
    """A one-shot trigger at ``at``; a time without an offset is in ``timezone`` (default the
    local zone). ValueError (or a zone error) names the problem."""
    return DateTrigger(run_date=at, timezone=timezone)
