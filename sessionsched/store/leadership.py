"""Active/standby: one leader among the schedulers sharing a PostgreSQL store.

The leader is whoever holds a PostgreSQL session-level advisory lock (``pg_try_advisory_lock``)
on a connection of its own. The server releases the lock when that session ends — the process
exited or was killed (``kill -9`` closes its socket: the lock is free at once), or its
connection was cut (then when the server notices: TCP keepalives on the connection bound it).
Nothing has to expire on a clock, so there are no leases to tune and no clocks to trust.

The lock is only as good as its connection: a leader checks that connection every ``check_s``
(``renew``) and, the first time it fails, has lost leadership for good — it must stop writing
(``on_lost``) and may compete again as a standby with a new ``Leadership``. Between the loss
and that check, ``fence`` keeps its writes out: given as the ``Writer``'s ``before_commit``, it
checks inside each write transaction that the lock is still held by our session, and fails the
batch (``NotLeader``) if not. A standby polls
``try_acquire`` every ``check_s``, so it takes over within about ``check_s`` of the leader's
death (and within the keepalive bound when the leader's host vanished).

Who leads is written down by the leader (``announce``: its URL, host and process, and the
PostgreSQL session holding the lock) in the ``leader`` table; ``leader()`` reads it and trusts
it only while that session still holds the lock, so a dead leader's row is never believed.

Usage::

    leadership = Leadership(config.database_url(), name="sessionsched")
    leadership.acquire()              # blocks, as a standby, until leader
    leadership.announce("http://sched-a:6066", time.time())
    leadership.keep(on_lost=stop_writing)   # checks the lock's connection in the background
    writer = Writer(store, before_commit=leadership.fence)
    ...
    leadership.release()
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from .faults import StoreUnavailable, as_store_fault
from .store import CONNECT_TIMEOUT_S, database_url

log = logging.getLogger(__name__)

# The lock's connection, both ends. libpq's keepalives make the leader notice a vanished
# server (and a check never waits longer than tcp_user_timeout on unacknowledged data); the
# server's, set for this session only (``options``), make the server end the session of a
# leader whose host or network vanished -- freeing the lock -- after about idle + interval *
# count seconds, not after the operating system's default of two hours.
_KEEPALIVE = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 1,
              "keepalives_count": 3, "tcp_user_timeout": 8000,
              "options": "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=1 "
                         "-c tcp_keepalives_count=3"}


class NotLeader(StoreUnavailable):
    """A write by a scheduler that does not (or no longer) lead: the batch is not committed."""


@dataclass(frozen=True)
class LeaderInfo:
    """The live leader as it announced itself: where clients reach it, which host and process
    it runs as, since when (epoch seconds)."""

    url: str
    host: str
    pid: int
    since: float


# The advisory lock held by a given session, in pg_locks (a bigint key is classid = high half,
# objid = low half).
_HELD_BY = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND pid = :pid AND classid = CAST((CAST(:k AS bigint) >> 32) & 4294967295 AS oid) "
            "AND objid = CAST(CAST(:k AS bigint) & 4294967295 AS oid)")


def lock_key(name: str) -> int:
    """The advisory lock's 64-bit key for ``name`` (stable across processes and versions)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class Leadership:
    """Leadership of ``name`` among the processes using the PostgreSQL database ``url``."""

    def __init__(self, url: str, *, name: str = "sessionsched", check_s: float = 1.0):
        parsed = database_url(url)
        if parsed.get_backend_name() != "postgresql":
            raise ValueError("active/standby needs a PostgreSQL store "
                             "(server.db_url: postgresql://…); SQLite serves one scheduler")
        self.url = url
        self.name = name
        self.key = lock_key(name)
        self.check_s = check_s
        self._engine = create_engine(
            parsed, poolclass=NullPool, isolation_level="AUTOCOMMIT",
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S, **_KEEPALIVE})
        self._conn: Connection | None = None  # holds the lock while we lead
        self._backend_pid: int | None = None  # the server process of that session
        self._lost = threading.Event()
        self._lost_reason = ""
        self._stop = threading.Event()
        self._keeper: threading.Thread | None = None

    @property
    def is_leader(self) -> bool:
        return self._conn is not None and not self._lost.is_set()

    @property
    def lost(self) -> bool:
        """Leadership was held and is gone: this object will not lead again."""
        return self._lost.is_set()

    def try_acquire(self) -> bool:
        """Take the lock if it is free; True if we lead now. A store that cannot be reached is
        not an error here: we are not the leader, and the next try may reach it."""
        if self.is_leader:
            return True
        if self._lost.is_set():
            raise RuntimeError("leadership was lost; compete again with a new Leadership")
        try:
            conn = self._engine.connect()
        except Exception as e:
            if as_store_fault(e) is None:
                raise
            log.debug("leadership: %s", as_store_fault(e))
            return False
        try:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar()
        except Exception as e:
            conn.close()
            if as_store_fault(e) is None:
                raise
            return False
        if not got:
            conn.close()
            return False
        self._conn = conn
        self._backend_pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
        log.info("leadership of %r acquired", self.name)
        return True

    def acquire(self, timeout_s: float | None = None) -> bool:
        """Wait as a standby until we lead (True), or ``timeout_s`` passes (False)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self.try_acquire():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if self._stop.wait(self.check_s):
                return False
        return True

    def renew(self) -> bool:
        """Check that we still lead: the lock's session answers. False once it does not (and
        from then on)."""
        if self._conn is None or self._lost.is_set():
            return False
        try:
            # Only this session could have unlocked its own session-level lock: while the
            # session answers, the lock is ours.
            self._conn.execute(text("SELECT 1"))
            return True
        except Exception as e:
            fault = as_store_fault(e)
            if fault is None:
                raise
            self._lose(fault.reason)
        return False

    def fence(self, session: Session) -> None:
        """Inside a write transaction: raise ``NotLeader`` unless our session still holds the
        lock (``pg_locks``: a bigint key is classid = high half, objid = low half)."""
        if not self.is_leader:
            raise NotLeader(f"this scheduler does not lead {self.name!r}"
                            + (f" (lost: {self._lost_reason})" if self._lost_reason else ""))
        held = session.execute(text(_HELD_BY),
                               {"pid": self._backend_pid, "k": self.key}).scalar()
        if not held:
            raise NotLeader(f"this scheduler no longer leads {self.name!r}: its lock's session "
                            "has ended")

    def announce(self, url: str, now: float) -> None:
        """As the leader: write who leads (table ``leader``, created by ``Store``) on the
        lock's own connection, so standbys can send clients here."""
        if not self.is_leader:
            raise NotLeader(f"this scheduler does not lead {self.name!r}")
        self._conn.execute(text(
            "INSERT INTO leader (name, url, backend_pid, host, pid, since) "
            "VALUES (:n, :u, :b, :h, :p, :s) ON CONFLICT (name) DO UPDATE SET url = :u, "
            "backend_pid = :b, host = :h, pid = :p, since = :s"),
            {"n": self.name, "u": url, "b": self._backend_pid, "h": socket.gethostname(),
             "p": os.getpid(), "s": now})

    def announced_since(self, url: str) -> float | None:
        """As the leader: when ``url`` announced itself, if the ``leader`` row is still its
        announcement (nobody else led since), else None."""
        if not self.is_leader:
            raise NotLeader(f"this scheduler does not lead {self.name!r}")
        row = self._conn.execute(text("SELECT url, since FROM leader WHERE name = :n"),
                                 {"n": self.name}).first()
        return row.since if row is not None and row.url == url else None

    def leader(self) -> LeaderInfo | None:
        """The live leader's announcement: None when nobody holds the lock, when its holder
        has not announced itself yet, or when the store cannot be reached now. (The table is
        made by ``Store``, as every other.)"""
        try:
            with self._engine.connect() as conn:
                row = conn.execute(text(
                    "SELECT url, host, pid, since, backend_pid FROM leader WHERE name = :n"),
                    {"n": self.name}).first()
                if row is None:
                    return None
                held = conn.execute(text(_HELD_BY),
                                    {"pid": row.backend_pid, "k": self.key}).scalar()
        except Exception as e:
            fault = as_store_fault(e)
            if fault is None:
                raise
            log.debug("leadership: who leads is unknown now: %s", fault)
            return None
        return LeaderInfo(row.url, row.host, row.pid, row.since) if held else None

    def keep(self, on_lost: Callable[[str], None]) -> None:
        """Renew every ``check_s`` in a background thread; on loss call ``on_lost(reason)``
        once (the leader must stop writing at once)."""
        if self._keeper is not None:
            raise RuntimeError("already kept")

        def loop() -> None:
            while not self._stop.wait(self.check_s):
                if not self.renew():
                    if self._lost.is_set():
                        on_lost(self._lost_reason)
                    return

        self._keeper = threading.Thread(target=loop, name="leadership", daemon=True)
        self._keeper.start()

    def release(self) -> None:
        """Give leadership up (a clean shutdown: the standby takes over at its next try)."""
        self._stop.set()
        if self._keeper is not None and self._keeper is not threading.current_thread():
            self._keeper.join(self.check_s + 10)
        if self._conn is not None:
            try:
                self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
            except Exception as e:  # noqa: BLE001 - closing the session releases it anyway
                log.debug("leadership: unlock failed: %s", e)
            finally:
                self._conn.close()
                self._conn = None
        self._engine.dispose()

    def _lose(self, reason: str) -> None:
        self._lost_reason = reason
        self._lost.set()
        log.error("leadership of %r lost: %s", self.name, reason)
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.invalidate()
                conn.close()
            except Exception as e:  # noqa: BLE001 - the connection is gone already
                log.debug("leadership: closing a lost connection: %s", e)
