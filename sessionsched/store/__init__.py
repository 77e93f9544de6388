"""Persistence: the apps and their audit trail (SQLAlchemy; SQLite in WAL mode by default,
PostgreSQL for teams)."""

from .faults import StoreUnavailable
from .leadership import Leadership, NotLeader
from .records import AppKind, EventRecord, StoredApp, UsageRow
from .store import Store, StoreHealth
from .writer import Writer

__all__ = ["AppKind", "EventRecord", "Leadership", "NotLeader", "StoredApp", "Store",
           "StoreHealth", "StoreUnavailable", "UsageRow", "Writer"]
