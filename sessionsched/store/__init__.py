"""Persistence: the apps and their audit trail (SQLAlchemy; SQLite in WAL mode by default)."""

from .records import AppKind, EventRecord, StoredApp
from .store import Store
from .writer import Writer

__all__ = ["AppKind", "EventRecord", "StoredApp", "Store", "Writer"]
