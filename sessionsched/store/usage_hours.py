"""The hourly usage rollup in the store (``schema.UsageHourRow``): per (hour, queue, user)
what the apps used (``sessionsched.model.usage.HOURLY``), added to in the same transaction as the
apps' usage columns (so a kill -9 or a takeover loses both or neither), kept when app rows
go. ``--by queue|user`` windows read it (``operations/usage_read``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from ..model import AppState
from ..model.usage import HOURLY
from .faults import store_faults
from .schema import AppRow, UsageHourRow

_TABLE = UsageHourRow.__table__
_KEY = ("hour", "queue", "user")
HourKey = tuple[float, str, str]  # (hour start, queue, user)


@dataclass(frozen=True, slots=True)
class UsageHour:
    hour: float
    queue: str
    user: str
    figures: tuple[float, ...]  # ``HOURLY``, in that order


def add_hours(session: Session, deltas: Mapping[HourKey, list[float]]) -> None:
    """Add ``deltas`` to their hours' rows (made if new), inside the caller's transaction."""
    if not deltas:
        return
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    rows = [{"hour": h, "queue": q, "user": u, **dict(zip(HOURLY, v, strict=True))}
            for (h, q, u), v in sorted(deltas.items())]  # one order: no deadlock between two
    stmt = insert(_TABLE)
    stmt = stmt.on_conflict_do_update(
        index_elements=list(_KEY),
        set_={k: _TABLE.c[k] + stmt.excluded[k] for k in HOURLY})
    session.execute(stmt, rows)


def load_hours(store, first_hour: float, until: float) -> list[UsageHour]:
    """The rows of the hours starting in [first_hour, until), in hour order."""
    q = (select(UsageHourRow).where(UsageHourRow.hour >= first_hour, UsageHourRow.hour < until)
         .order_by(*(UsageHourRow.__table__.c[k] for k in _KEY)))
    with store_faults(), store.session() as s:
        return [UsageHour(r.hour, r.queue, r.user, tuple(getattr(r, k) for k in HOURLY))
                for r in s.scalars(q)]


def live_usage(store) -> list[tuple[str, str, str, float, dict | None]]:
    """Every app not ended: (queue, user, state, submitted_at, usage column) - the part of
    their use not in the rollup yet (since their last change of level) is counted at a read."""
    live = [s.value for s in AppState if not s.terminal]
    q = select(AppRow.queue, AppRow.user, AppRow.state, AppRow.submitted_at, AppRow.usage).where(
        AppRow.state.in_(live)).order_by(AppRow.seq)  # ix_apps_state
    with store_faults(), store.session() as s:
        return [tuple(r) for r in s.execute(q)]
