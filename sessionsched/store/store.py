"""The store: apps and their audit trail in a SQL database (SQLAlchemy 2).

SQLite is the default: one file in the state directory, WAL journal (readers never wait for the
writer) and ``synchronous=FULL`` (a commit is on disk when it returns — an acknowledged
submission survives a power cut, not only a crash of the process). PostgreSQL is the store for
teams (``postgresql://user:password@host:port/db``, driven by psycopg 3): the same tables,
connections checked before use so a restarted server is reconnected to by itself.

Writes go through ``Writer`` (one thread, group commit); this class offers the reads and the
row-level helpers the writer's jobs use inside its transaction. A database that cannot be
used raises ``StoreUnavailable`` (one line) from both, never SQLAlchemy's own errors.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import (
    bindparam,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.orm.exc import StaleDataError

from ..model import AppState
from ..model.submission import AppKind, Submission
from .faults import StoreUnavailable, store_faults
from .records import (
    EventRecord,
    StoredApp,
    UsageRow,
    dynamic_before_recorded,
    spec_from_json,
    spec_to_json,
)
from .schema import APP_COLUMNS, AUDIT_COLUMNS, AppRow, Base, CommitRow, EventRow, ProbeRow

# The row's columns: what identifies the app (its spec's), what it was submitted with (its
# submission's) and its state (the row's own); ``state`` and ``spec`` are written apart.
_IDENTITY = {"id": "app_id", "seq": "seq", "name": "name", "user": "user", "queue": "queue",
             "priority": "priority", "submitted_at": "submitted_at"}
_SUBMITTED = "kind argv conf env cwd rest_request sender warnings".split()
_STATE = ("reason started_at first_executor_at finished_at exit_code spark_app_id handle "
          "log_path launch_wait usage cluster").split()


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


# How long connecting to a PostgreSQL server may take before the store counts as unavailable.
CONNECT_TIMEOUT_S = 5


def database_url(url: str) -> URL:
    """``url`` parsed, PostgreSQL URLs without a driver (``postgresql://``, ``postgres://``)
    given psycopg 3's. ValueError (one line) if it is not a database URL."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ValueError(f"not a database URL: {url!r} (sqlite:///PATH or "
                         f"postgresql://USER:PASSWORD@HOST:PORT/DB)") from None
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def open_engine(url: str) -> Engine:
    parsed = database_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # pool_pre_ping: a pooled connection is tested before it is used, so connections a restarted
    # server dropped are replaced instead of failing the next write.
    return create_engine(parsed, pool_pre_ping=True,
                         connect_args={"connect_timeout": CONNECT_TIMEOUT_S})


@dataclass(frozen=True)
class StoreHealth:
    """What ``/health`` says of the store: ok, or not with a one-line reason."""

    ok: bool
    reason: str = ""

    def __str__(self) -> str:
        return "ok" if self.ok else f"state store unavailable: {self.reason}"


class Store:
    def __init__(self, url: str):
        with store_faults():
            self.engine = open_engine(url)
            # For logs and health: the URL with any password masked.
            self.url = self.engine.url.render_as_string(hide_password=True)
            Base.metadata.create_all(self.engine)
            _add_columns(self.engine, "apps", APP_COLUMNS)
            _add_columns(self.engine, "events", AUDIT_COLUMNS)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # The last failed commit's fault, until a commit succeeds (set by the Writer).
        self.fault: StoreUnavailable | None = None

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def session(self) -> Session:
        return self._sessions()

    def close(self) -> None:
        self.engine.dispose()

    def health(self) -> StoreHealth:
        """Can the store be used now? A read (``SELECT 1``) on a fresh connection; and while
        the last commit has failed, a small real write too (one row of ``store_probe``), so a
        store that is back (space freed, server restarted) is seen as back without waiting for
        the next write — and one that still cannot write is not called ok."""
        try:
            with store_faults(), self.engine.connect() as c:
                c.execute(select(1))
                if self.fault is not None:
                    if self.backend == "sqlite":
                        # Empty the WAL first: a write that fits in the WAL's old frames would
                        # pass on a disk that has no room for a real one.
                        c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                    c.execute(delete(ProbeRow))
                    c.execute(insert(ProbeRow).values(id=1, at=time.time()))
                    c.commit()
                    self.fault = None
        except StoreUnavailable as e:
            return StoreHealth(False, e.reason)
        return StoreHealth(True)

    # --- reads ------------------------------------------------------------------------------

    def max_seq(self) -> int:
        with store_faults(), self.session() as s:
            return s.scalar(select(func.max(AppRow.seq))) or 0

    def load_apps(self, states: Iterable[AppState] | None = None) -> list[StoredApp]:
        """Apps in submission order, all or only those in ``states``."""
        q = select(AppRow).order_by(AppRow.seq)
        if states is not None:
            q = q.where(AppRow.state.in_([s.value for s in states]))
        with store_faults(), self.session() as s:
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
        with store_faults(), self.session() as s:
            return [_from_row(r) for r in reversed(s.scalars(q).all())]

    def load_unmetered_ends(self) -> list[StoredApp]:
        """Ended apps whose last usage figures were never written (``AppRow.usage_open``)."""
        q = select(AppRow).where(AppRow.usage_open.is_(True)).order_by(AppRow.seq)
        with store_faults(), self.session() as s:
            return [_from_row(r) for r in s.scalars(q)]

    def usage_rows(self, since: float, until: float) -> list[UsageRow]:
        """Each app that was in the books at some time in [since, until) (submitted before
        ``until``, not ended before ``since``), with its usage column, in submission order."""
        ended = func.coalesce(AppRow.finished_at, until)
        q = (select(AppRow.id, AppRow.queue, AppRow.user, AppRow.state, AppRow.submitted_at,
                    AppRow.started_at, AppRow.finished_at, AppRow.usage, AppRow.cluster)
             .where(AppRow.submitted_at < until, ended >= since).order_by(AppRow.seq))
        with store_faults(), self.session() as s:
            return [UsageRow(*r) for r in s.execute(q)]

    def run_lengths(self, names: Iterable[str], per_name: int = 20) -> dict[str, list[float]]:
        """App name -> how long its last ``per_name`` FINISHED runs ran (launch to end, s),
        newest first: what the estimated starts assume of a recurring app."""
        names = sorted(set(names))
        out: dict[str, list[float]] = {}
        if not names:
            return out
        q = (select(AppRow.name, AppRow.started_at, AppRow.finished_at)
             .where(AppRow.name.in_(names), AppRow.state == AppState.FINISHED.value,
                    AppRow.started_at.is_not(None), AppRow.finished_at.is_not(None))
             .order_by(AppRow.finished_at.desc()))
        with store_faults(), self.session() as s:
            for name, started, finished in s.execute(q):
                runs = out.setdefault(name, [])
                if len(runs) < per_name:
                    runs.append(max(0.0, finished - started))
        return out

    def app_id_of_spark_app(self, spark_app_id: str) -> str | None:
        """Our app id for a Spark application id (indexed), or None."""
        q = select(AppRow.id).where(AppRow.spark_app_id == spark_app_id).limit(1)
        with store_faults(), self.session() as s:
            return s.scalar(q)

    def live_queues(self) -> dict[str, int]:
        """Queue -> how many apps in it have not ended (queued or running)."""
        live = [s.value for s in AppState if not s.terminal]
        q = (select(AppRow.queue, func.count()).where(AppRow.state.in_(live))
             .group_by(AppRow.queue))
        with store_faults(), self.session() as s:
            return {queue: n for queue, n in s.execute(q)}

    def get_app(self, app_id: str, session: Session | None = None) -> StoredApp | None:
        """The app's row; inside a writer job pass its ``session`` to read what the job's
        transaction sees."""
        if session is not None:
            Store.flush(session)
            row = session.get(AppRow, app_id)
            return _from_row(row) if row is not None else None
        with store_faults(), self.session() as s:
            row = s.get(AppRow, app_id)
            return _from_row(row) if row is not None else None

    def events(self, app_id: str) -> list[EventRecord]:
        q = select(EventRow).where(EventRow.app_id == app_id).order_by(EventRow.id)
        with store_faults(), self.session() as s:
            return [_event(r) for r in s.scalars(q)]

    # --- writes, inside a writer job's transaction ------------------------------------------

    # Inserts are buffered in the session and written by ``flush`` as one executemany per
    # table: a group commit of 500 submissions is two INSERT statements, not a thousand.

    @staticmethod
    def next_seq(session: Session) -> int:
        """The next submission sequence number, inside a writer job: read from the database
        once per transaction (after what it holds, inserts buffered in this session included),
        then counted. A batch that does not commit takes its numbers with it, so none is
        burned, and a scheduler taking over from another continues its numbering."""
        n = session.info.get(_SEQ)
        if n is None:
            Store.flush(session)
            n = session.scalar(select(func.max(AppRow.seq))) or 0
        session.info[_SEQ] = n + 1
        return n + 1

    @staticmethod
    def mark_commit(session: Session, token: str) -> None:
        """Record ``token`` as the last committed transaction's, inside that transaction."""
        done = session.execute(update(CommitRow).where(CommitRow.id == 1).values(token=token))
        if done.rowcount == 0:
            session.execute(insert(CommitRow).values(id=1, token=token))

    @staticmethod
    def last_commit(session: Session) -> str | None:
        """The token of the last committed transaction (``mark_commit``)."""
        return session.scalar(select(CommitRow.token).where(CommitRow.id == 1))

    @staticmethod
    def add_apps(session: Session, apps: list[StoredApp]) -> None:
        _pending(session)["apps"].extend(_to_row(a) for a in apps)

    @staticmethod
    def add_events(session: Session, events: list[EventRecord]) -> None:
        _pending(session)["events"].extend(
            {"app_id": e.app_id, "at": e.at, "kind": e.kind, "detail": e.detail,
             "actor": e.actor, "sender": e.sender, "old_value": e.old, "new_value": e.new}
            for e in events
        )

    @staticmethod
    def flush(session: Session) -> None:
        """Write the buffered inserts: apps first (events refer to them). The writer calls it
        before it commits; call it before reading back in the same session."""
        pending = session.info.pop(_PENDING, None)
        if pending is None:
            return
        # Core statements on the tables, not the ORM's bulk INSERT: the same executemany,
        # without the ORM's work per row (a third of the cost at a cycle's thousands of rows).
        if pending["apps"]:
            session.execute(insert(_APPS), pending["apps"])
        if pending["events"]:
            session.execute(insert(_EVENTS), pending["events"])

    @staticmethod
    def set_priority(session: Session, app_id: str, priority: int, was: int) -> int | None:
        """Set a live app's priority: the priority it replaces, or None (nothing changed) if
        the app has ended or is not stored. ``was``: the priority the caller read; a row that
        still holds it (nearly always) is changed without being read. One that does not (a
        change no cycle has shown yet) is read: its own priority is the one replaced."""
        Store.flush(session)
        live = [s.value for s in AppState if not s.terminal]
        app = (_APPS.c.id == app_id) & _APPS.c.state.in_(live)
        guessed = update(_APPS).where(app, _APPS.c.priority == was).values(priority=priority)
        if session.execute(guessed).rowcount == 1:
            return was
        old = session.scalar(select(_APPS.c.priority).where(app))
        if old is not None:
            session.execute(update(_APPS).where(app).values(priority=priority))
        return old

    @staticmethod
    def update_apps(session: Session, changes: list[dict]) -> None:
        """``changes``: dicts with ``id`` and the columns to set (``state`` as AppState ok)."""
        Store.flush(session)
        rows = []
        for c in changes:
            c = dict(c)
            if isinstance(c.get("state"), AppState):
                c["state"] = c["state"].value
            c[_ID] = c.pop("id")
            rows.append(c)
        # One executemany per distinct set of columns: a Core UPDATE by primary key (the SET
        # clause is the parameters' other keys), not the ORM's bulk UPDATE, which does the same
        # with more work per row.
        by_keys: dict[tuple[str, ...], list[dict]] = {}
        for r in rows:
            by_keys.setdefault(tuple(sorted(r)), []).append(r)
        sane = session.get_bind().dialect.supports_sane_multi_rowcount
        for group in by_keys.values():
            done = session.execute(_UPDATE_APP, group)
            if sane and done.rowcount != len(group):  # as the ORM's bulk UPDATE checks
                raise StaleDataError(f"UPDATE of {len(group)} app(s) matched {done.rowcount}")


_PENDING = "sessionsched.pending_inserts"
_APPS = AppRow.__table__
_EVENTS = EventRow.__table__
_ID = "app_id_"  # the primary key's parameter in ``_UPDATE_APP`` (a column's name may not be)
_UPDATE_APP = update(_APPS).where(_APPS.c.id == bindparam(_ID))
_SEQ = "sessionsched.last_seq"


def _pending(session: Session) -> dict[str, list[dict]]:
    return session.info.setdefault(_PENDING, {"apps": [], "events": []})


def _to_row(app: StoredApp) -> dict:
    sub, spec = app.submission, app.spec
    row = {c: getattr(spec, f) for c, f in _IDENTITY.items()}
    row.update((c, getattr(sub, c)) for c in _SUBMITTED)
    row.update((c, getattr(app, c)) for c in _STATE)
    row["argv"], row["warnings"] = list(sub.argv), list(sub.warnings)
    row["conf"], row["env"] = dict(sub.conf), dict(sub.env)
    row["state"] = app.state.value
    row["spec"] = spec_to_json(spec)
    return row


def _from_row(r: AppRow) -> StoredApp:
    # A row from before the spec recorded dynamic allocation: the engine's rule on the row.
    older = "dynamic_allocation" not in r.spec
    spec = spec_from_json(
        r.spec, app_id=r.id, queue=r.queue, seq=r.seq, submitted_at=r.submitted_at,
        priority=r.priority, name=r.name, user=r.user,
        unrecorded_dynamic=older and dynamic_before_recorded(r.kind, r.conf or {}, r.argv or []),
        unrecorded_with_user=r.kind == AppKind.SESSION,
        unrecorded_interactive=r.kind in (AppKind.SESSION, AppKind.CONNECT),
    )
    sub = Submission(spec=spec, kind=r.kind, argv=r.argv or (), conf=r.conf or {},
                     env=r.env or {}, cwd=r.cwd, rest_request=r.rest_request,
                     sender=r.sender, warnings=r.warnings or ())
    return StoredApp(sub, state=AppState(r.state), **{c: getattr(r, c) for c in _STATE})


def _event(r: EventRow) -> EventRecord:
    return EventRecord(r.app_id, r.at, r.kind, r.detail, r.actor, r.sender, r.old_value,
                       r.new_value)


def _add_columns(engine: Engine, table: str, columns: dict[str, str]) -> None:
    """A table of a database made before these columns gets them (nullable: older rows keep
    what they had): the events' audit columns, the apps' ``launch_wait``."""
    have = {c["name"] for c in inspect(engine).get_columns(table)}
    missing = [(n, t) for n, t in columns.items() if n not in have]
    if missing:
        with engine.begin() as conn:
            for name, sql_type in missing:
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {sql_type}"))
