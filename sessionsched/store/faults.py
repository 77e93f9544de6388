"""Store faults: the database cannot take a write (or a read) right now.

A full disk, a database file that cannot be opened, a PostgreSQL server that is down or was
restarted: these are not the caller's mistake and pass by themselves, so they are told apart
from a job's own error (a duplicate key, a bug) and raised as one exception type,
``StoreUnavailable``, whose message is one line — what the HTTP layer answers with its 503 —
instead of SQLAlchemy's several lines of SQL, parameters and links.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from sqlalchemy import exc as sa_exc


class StoreUnavailable(Exception):
    """The state store cannot be used now; ``reason`` says why in a few words
    (``disk full``). ``str()``: ``state store unavailable: <reason>``."""

    def __init__(self, reason: str):
        super().__init__(f"state store unavailable: {reason}")
        self.reason = reason


# SQLite reports everything as OperationalError, its own syntax errors too: only these
# messages (from sqlite3's result codes) mean the database, not the statement, is at fault.
_SQLITE_CAUSES = (
    ("database or disk is full", "disk full"),
    ("disk i/o error", "disk I/O error"),
    ("unable to open database file", "cannot open the database file"),
    ("readonly database", "the database is read-only"),
    ("database is locked", "the database is locked"),
    ("no space left", "disk full"),
    ("file is not a database", "the database file is not an SQLite database"),
    ("database disk image is malformed", "the database file is damaged"),
)


def as_store_fault(error: BaseException) -> StoreUnavailable | None:
    """The ``StoreUnavailable`` that ``error`` means, or None when it is not a store fault."""
    if isinstance(error, StoreUnavailable):
        return error
    if isinstance(error, OSError):
        return StoreUnavailable(_first_line(error.strerror or str(error)))
    if isinstance(error, sa_exc.TimeoutError):  # no pooled connection came free in time
        return StoreUnavailable("no database connection came free in time")
    if not isinstance(error, sa_exc.DBAPIError):
        return None
    orig = error.orig
    text = _first_line(str(orig)) if orig is not None else ""
    lowered = text.lower()
    module = type(orig).__module__ if orig is not None else ""
    if module.startswith("sqlite3"):
        for needle, cause in _SQLITE_CAUSES:
            if needle in lowered:
                return StoreUnavailable(cause)
        return None
    if "no space left" in lowered or getattr(orig, "sqlstate", None) == "53100":
        return StoreUnavailable("disk full")
    # PostgreSQL (psycopg): OperationalError covers a server that is down, restarting or out
    # of resources (SQLSTATE classes 08, 53, 57); a lost connection SQLAlchemy marks invalid.
    if (error.connection_invalidated
            or isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError)):
        connect = _PG_CONNECT.match(text)
        if connect:
            host, port, why = connect.groups()
            return StoreUnavailable(f"cannot connect to PostgreSQL at {host}:{port}: {why}")
        return StoreUnavailable(text or type(orig).__name__)
    return None


# psycopg's "connection failed: connection to server at "HOST", port PORT failed: FATAL:  WHY"
_PG_CONNECT = re.compile(
    r'connection failed: connection to server at "([^"]*)"(?: \([^)]*\))?, port (\d+) '
    r"failed: (?:FATAL:\s+)?(.*)")


@contextlib.contextmanager
def store_faults() -> Iterator[None]:
    """Raise store faults inside the block as ``StoreUnavailable``; other errors unchanged."""
    try:
        yield
    except Exception as e:
        fault = as_store_fault(e)
        if fault is None or fault is e:
            raise
        raise fault from e


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
