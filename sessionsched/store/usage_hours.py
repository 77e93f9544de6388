"""The hourly usage rollup in the store (``schema.UsageHourRow``): per (hour, queue, user)
what the apps used (``sessionsched.model.usage.HOURLY``), added to in the same transaction as the
apps' usage columns (so a kill -9 or a takeover loses both or neither), kept when app rows
go. ``--by queue|user`` windows read it (``operations/usage_read``). Custom resources' hours
are rows of their own (``schema.UsageHourResourceRow``, one per resource name: a new name
needs no schema change), keyed (hour, queue, user, resource) in the same map of deltas. A
database from before them gains the table at its next open (``create_all`` makes missing
tables), with no rows: their hours start at the upgrade."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from ..model import AppState
from ..model.usage import HOURLY, RES_HOURLY
from .faults import store_faults
from .schema import AppRow, UsageHourResourceRow, UsageHourRow

_TABLE = UsageHourRow.__table__
_RES_TABLE = UsageHourResourceRow.__table__
_KEY = ("hour", "queue", "user")
_RES_KEY = ("hour", "queue", "user", "resource")
HourKey = tuple  # (hour start, queue, user), or with the resource's name after them


@dataclass(frozen=True, slots=True)
class UsageHour:
    hour: float
    queue: str
    user: str
    figures: tuple[float, ...]  # ``HOURLY``, in that order
    resources: dict[str, tuple[float, ...]] | None = None  # name -> ``RES_HOURLY``


def add_hours(session: Session, deltas: Mapping[HourKey, list[float]]) -> None:
    """Add ``deltas`` to their hours' rows (made if new), inside the caller's transaction:
    keys of three to ``usage_hours``, of four (a resource's name last) to
    ``usage_hour_resources``."""
    if not deltas:
        return
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    # one order: no deadlock between two
    core = sorted((k, v) for k, v in deltas.items() if len(k) == 3)
    res = sorted((k, v) for k, v in deltas.items() if len(k) == 4)
    for table, key, names, part in ((_TABLE, _KEY, HOURLY, core),
                                    (_RES_TABLE, _RES_KEY, RES_HOURLY, res)):
        if not part:
            continue
        rows = [{**dict(zip(key, k, strict=True)), **dict(zip(names, v, strict=True))}
                for k, v in part]
        stmt = insert(table)
        stmt = stmt.on_conflict_do_update(
            index_elements=list(key),
            set_={n: table.c[n] + stmt.excluded[n] for n in names})
        session.execute(stmt, rows)


def load_hours(store, first_hour: float, until: float) -> list[UsageHour]:
    """The rows of the hours starting in [first_hour, until), in hour order."""
    q = (select(UsageHourRow).where(UsageHourRow.hour >= first_hour, UsageHourRow.hour < until)
         .order_by(*(UsageHourRow.__table__.c[k] for k in _KEY)))
    rq = (select(UsageHourResourceRow).where(UsageHourResourceRow.hour >= first_hour,
                                             UsageHourResourceRow.hour < until)
          .order_by(*(_RES_TABLE.c[k] for k in _RES_KEY)))
    with store_faults(), store.session() as s:
        hours = [UsageHour(r.hour, r.queue, r.user, tuple(getattr(r, k) for k in HOURLY))
                 for r in s.scalars(q)]
        res: dict[tuple[float, str, str], dict[str, tuple[float, ...]]] = {}
        for r in s.scalars(rq):
            res.setdefault((r.hour, r.queue, r.user), {})[r.resource] = tuple(
                getattr(r, k) for k in RES_HOURLY)
    if res:  # the meter writes both in one transaction: a resource's hour has its row
        zero = (0.0,) * len(HOURLY)
        have = {(h.hour, h.queue, h.user): i for i, h in enumerate(hours)}
        for key, named in res.items():
            if key in have:
                i = have[key]
                hours[i] = UsageHour(*key, hours[i].figures, named)
            else:
                hours.append(UsageHour(*key, zero, named))
    return hours


def live_usage(store) -> list[tuple[str, str, str, float, dict | None]]:
    """Every app not ended: (queue, user, state, submitted_at, usage column) - the part of
    their use not in the rollup yet (since their last change of level) is counted at a read."""
    live = [s.value for s in AppState if not s.terminal]
    q = select(AppRow.queue, AppRow.user, AppRow.state, AppRow.submitted_at, AppRow.usage).where(
        AppRow.state.in_(live)).order_by(AppRow.seq)  # ix_apps_state
    with store_faults(), store.session() as s:
        return [tuple(r) for r in s.execute(q)]
