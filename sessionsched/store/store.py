"""The store: apps and their audit trail in a SQL database (SQLAlchemy 2).

SQLite is the default: one file in the state directory, WAL journal (readers never wait for the
writer) and ``synchronous=FULL`` (a commit is on disk when it returns — an acknowledged
submission survives a power cut, not only a crash of the process). Any SQLAlchemy URL works;
PostgreSQL is the way to an HA pair later.

Writes go through ``Writer`` (one thread, group commit); this class offers the reads and the
row-level helpers the writer's jobs use inside its transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import create_engine, event, func, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from ..model import AppState
from .records import EventRecord, StoredApp, spec_from_json, spec_to_json
from .schema import AppRow, Base, EventRow

_COLUMNS = (
    "id seq kind name user queue priority reason submitted_at started_at first_executor_at "
    "finished_at exit_code spark_app_id argv conf env cwd rest_request handle log_path sender "
    "warnings"
).split()


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def open_engine(url: str) -> Engine:
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, future=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


class Store:
    def __init__(self, url: str):
        self.url = url
        self.engine = open_engine(url)
        Base.metadata.create_all(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> Session:
        return self._sessions()

    def close(self) -> None:
        self.engine.dispose()

    # --- reads ------------------------------------------------------------------------------

    def max_seq(self) -> int:
        with self.session() as s:
            return s.scalar(select(func.max(AppRow.seq))) or 0

    def load_apps(self, states: Iterable[AppState] | None = None) -> list[StoredApp]:
        """Apps in submission order, all or only those in ``states``."""
        q = select(AppRow).order_by(AppRow.seq)
        if states is not None:
            q = q.where(AppRow.state.in_([s.value for s in states]))
        with self.session() as s:
            return [_from_row(r) for r in s.scalars(q)]

    def load_last_ended(self, limit: int) -> list[StoredApp]:
        """The ``limit`` most recently ended apps (FINISHED/FAILED/KILLED), oldest-ended first:
        what a restarted server keeps in memory (``server.retained_ended_apps``)."""
        if limit <= 0:
            return []
        ended = [s.value for s in AppState if s.terminal]
        when = func.coalesce(AppRow.finished_at, AppRow.submitted_at)
        q = (select(AppRow).where(AppRow.state.in_(ended))
             .order_by(when.desc(), AppRow.seq.desc()).limit(limit))
        with self.session() as s:
            return [_from_row(r) for r in reversed(s.scalars(q).all())]

    def app_id_of_spark_app(self, spark_app_id: str) -> str | None:
        """Our app id for a Spark application id (indexed), or None."""
        q = select(AppRow.id).where(AppRow.spark_app_id == spark_app_id).limit(1)
        with self.session() as s:
            return s.scalar(q)

    def live_queues(self) -> dict[str, int]:
        """Queue -> how many apps in it have not ended (queued or running)."""
        live = [s.value for s in AppState if not s.terminal]
        q = (select(AppRow.queue, func.count()).where(AppRow.state.in_(live))
             .group_by(AppRow.queue))
        with self.session() as s:
            return {queue: n for queue, n in s.execute(q)}

    def get_app(self, app_id: str, session: Session | None = None) -> StoredApp | None:
        """The app's row; inside a writer job pass its ``session`` to read what the job's
        transaction sees."""
        if session is not None:
            Store.flush(session)
            row = session.get(AppRow, app_id)
            return _from_row(row) if row is not None else None
        with self.session() as s:
            row = s.get(AppRow, app_id)
            return _from_row(row) if row is not None else None

    def events(self, app_id: str) -> list[EventRecord]:
        q = select(EventRow).where(EventRow.app_id == app_id).order_by(EventRow.id)
        with self.session() as s:
            return [EventRecord(r.app_id, r.at, r.kind, r.detail) for r in s.scalars(q)]

    # --- writes, inside a writer job's transaction ------------------------------------------

    # Inserts are buffered in the session and written by ``flush`` as one executemany per
    # table: a group commit of 500 submissions is two INSERT statements, not a thousand.

    @staticmethod
    def add_apps(session: Session, apps: list[StoredApp]) -> None:
        _pending(session)["apps"].extend(_to_row(a) for a in apps)

    @staticmethod
    def add_events(session: Session, events: list[EventRecord]) -> None:
        _pending(session)["events"].extend(
            {"app_id": e.app_id, "at": e.at, "kind": e.kind, "detail": e.detail} for e in events
        )

    @staticmethod
    def flush(session: Session) -> None:
        """Write the buffered inserts: apps first (events refer to them). The writer calls it
        before it commits; call it before reading back in the same session."""
        pending = session.info.pop(_PENDING, None)
        if pending is None:
            return
        if pending["apps"]:
            session.execute(insert(AppRow), pending["apps"])
        if pending["events"]:
            session.execute(insert(EventRow), pending["events"])

    @staticmethod
    def update_apps(session: Session, changes: list[dict]) -> None:
        """``changes``: dicts with ``id`` and the columns to set (``state`` as AppState ok)."""
        Store.flush(session)
        rows = []
        for c in changes:
            c = dict(c)
            if isinstance(c.get("state"), AppState):
                c["state"] = c["state"].value
            rows.append(c)
        # One executemany per distinct set of columns (SQLAlchemy's bulk UPDATE by primary key).
        by_keys: dict[tuple[str, ...], list[dict]] = {}
        for r in rows:
            by_keys.setdefault(tuple(sorted(r)), []).append(r)
        for group in by_keys.values():
            session.execute(update(AppRow), group)


_PENDING = "sessionsched.pending_inserts"


def _pending(session: Session) -> dict[str, list[dict]]:
    return session.info.setdefault(_PENDING, {"apps": [], "events": []})


def _to_row(app: StoredApp) -> dict:
    row = {c: getattr(app, c) for c in _COLUMNS}
    row["state"] = app.state.value
    row["spec"] = spec_to_json(app.spec)
    return row


def _from_row(r: AppRow) -> StoredApp:
    values = {c: getattr(r, c) for c in _COLUMNS}
    spec = spec_from_json(
        r.spec, app_id=r.id, queue=r.queue, seq=r.seq, submitted_at=r.submitted_at,
        priority=r.priority, name=r.name, user=r.user,
    )
    return StoredApp(state=AppState(r.state), spec=spec, **values)
