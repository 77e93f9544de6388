"""The decayed fair-share state in the store (``schema.DecayedRow``): written with each
cycle's commit as it changes, read back on start and on a standby's takeover, so a restart
keeps every queue's and user's decayed usage (``engine.arbitration.decay``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select, tuple_
from sqlalchemy.orm import Session

from .faults import store_faults
from .schema import DecayedRow

_TABLE = DecayedRow.__table__


@dataclass(frozen=True, slots=True)
class DecayedRecord:
    """One key's state: None fields after the key mean the key was dropped."""

    kind: str  # "queue" or "user"
    queue: str
    user: str
    past_cores: float | None = None
    since: float | None = None
    cores: float | None = None


def save_decayed(session: Session, records: Sequence[DecayedRecord]) -> None:
    """Rewrite these keys (those with no state are deleted), inside the caller's transaction."""
    if not records:
        return
    keys = [(r.kind, r.queue, r.user) for r in records]
    for i in range(0, len(keys), 500):  # bounded IN lists
        session.execute(delete(_TABLE).where(
            tuple_(_TABLE.c.kind, _TABLE.c.queue, _TABLE.c.user).in_(keys[i:i + 500])))
    rows = [{"kind": r.kind, "queue": r.queue, "user": r.user, "past_cores": r.past_cores,
             "since": r.since, "cores": r.cores} for r in records if r.past_cores is not None]
    if rows:
        session.execute(insert(_TABLE), rows)


def load_decayed(store) -> list[DecayedRecord]:
    """Every stored key, in key order."""
    with store_faults(), store.session() as s:
        rows = s.execute(select(DecayedRow).order_by(DecayedRow.kind, DecayedRow.queue,
                                                     DecayedRow.user))
        return [DecayedRecord(r.kind, r.queue, r.user, r.past_cores, r.since, r.cores)
                for r in rows.scalars()]
