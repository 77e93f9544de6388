"""``GET /api/v1/audit`` (admins): who did what to which app, from the events table.

The rows are the events of kind ``submitted``, ``priority``, ``kill`` and ``expired`` (a queued
app that waited its queue's ``max_wait``), with their audit columns (actor, sender, old and new
value; None on rows older than the columns) and ``who``, the user name, read from the detail
(``submit submission by alice from HOST to Q, priority P``; ``User alice updated the priority
from 5000 to 9000 (from HOST)``; ``kill requested by Admin bob from HOST``; ``expired by
scheduler: waited too long: ...``, whose ``who`` is ``scheduler``). Read straight from the
store (every app, also those forgotten from memory), oldest first, at most ``limit``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import select

from sessionsched.store.schema import EventRow

KINDS = ("submitted", "priority", "kill", "expired")
_WHO = {
    "submitted": re.compile(r"submission by (\S+) from"),
    "priority": re.compile(r"^(?:(?:User|Admin) )?(\S+) updated"),
    "kill": re.compile(r"kill requested by (?:User |Admin |Agent of )?([^\s(]+)"),
    "expired": re.compile(r"^expired by ([^\s:]+)"),
}


@dataclass(frozen=True)
class AuditRow:
    at: float
    app_id: str
    kind: str
    who: str
    detail: str
    actor: str | None  # the columns (None on rows written before they existed)
    sender: str | None
    old: str | None
    new: str | None


def who_of(kind: str, detail: str) -> str:
    m = _WHO[kind].search(detail)
    return m.group(1) if m else ""


def audit_rows(store, app_id: str | None = None, user: str | None = None,
               since: float | None = None, limit: int = 1000) -> list[AuditRow]:
    q = select(EventRow).where(EventRow.kind.in_(KINDS))
    if app_id:
        q = q.where(EventRow.app_id == app_id)
    if since is not None:
        q = q.where(EventRow.at >= since)
    out: list[AuditRow] = []
    with store.session() as s:
        for r in s.scalars(q.order_by(EventRow.id)):
            row = AuditRow(r.at, r.app_id, r.kind, who_of(r.kind, r.detail), r.detail, r.actor,
                           r.sender, r.old_value, r.new_value)
            if user and row.who != user:
                continue
            out.append(row)
    return out[-limit:]
