"""The store on a real SQLite file and a real PostgreSQL server (each test runs on both):
group commit, isolation of a failing job, reading back, URLs."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading

import psycopg
import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from sessionsched.backends.ports import free_port_in
from sessionsched.model import AppSpec, AppState, Resources
from sessionsched.model.submission import Submission
from sessionsched.store import EventRecord, Store, StoredApp, Writer
from sessionsched.store.store import database_url
from tests.pgserver import PORT_RANGE


def make_app(i: int, **kw) -> StoredApp:
    app_id = f"driver-20260101000000-{i:04d}"
    spec = AppSpec(
        app_id=app_id,
        queue="root.default",
        seq=i,
        submitted_at=float(i),
        name=f"app{i}",
        user="u",
        executor=Resources(2, 2048),
        max_executors=4,
    )
    sub = Submission(spec=spec, kind="submit", argv=("app.py", "x"), conf={"spark.a": "b"})
    return StoredApp(sub, **kw)


def count_rows(store_url: str, table: str) -> int:
    """Rows of ``table`` read with the database's own driver, outside SQLAlchemy: what is
    committed, not what some cache holds."""
    url = database_url(store_url)
    if url.get_backend_name() == "sqlite":
        with sqlite3.connect(url.database) as c:
            return c.execute(f"select count(*) from {table}").fetchone()[0]
    with psycopg.connect(store_url, connect_timeout=10) as c:
        return c.execute(f"select count(*) from {table}").fetchone()[0]


def test_sqlite_runs_in_wal_mode_with_full_sync(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        with store.engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        store.close()


def test_urls_are_read_as_an_operator_writes_them():
    assert database_url("postgresql://u:pw@db:5432/s").drivername == "postgresql+psycopg"
    assert database_url("postgres://u@db/s").drivername == "postgresql+psycopg"
    assert database_url("postgresql+psycopg://u@db/s").drivername == "postgresql+psycopg"
    assert database_url("sqlite:////x/y.db").database == "/x/y.db"
    with pytest.raises(ValueError, match="^not a database URL: 'db.example:5432'"):
        database_url("db.example:5432")


def test_the_store_names_its_backend_and_hides_the_password(store, store_url):
    assert store.backend == database_url(store_url).get_backend_name()
    if store.backend == "postgresql":
        masked = Store(store_url.replace("postgres@", "postgres:secret@"))
        try:
            assert "secret" not in masked.url and "***" in masked.url
        finally:
            masked.close()


def test_concurrent_writes_share_transactions_and_all_land(store, writer, store_url):
    gate = threading.Event()
    # Hold the writer busy so the next 200 jobs queue up behind it and go in together.
    blocker = writer.submit(lambda s: gate.wait(5))
    futures = [
        writer.submit(lambda s, i=i: Store.add_apps(s, [make_app(i)])) for i in range(1, 201)
    ]
    gate.set()
    blocker.result(5)
    for f in futures:
        f.result(5)
    assert writer.jobs == 201
    assert writer.batches <= 3  # 201 jobs, at most a few commits
    assert count_rows(store_url, "apps") == 200


def test_a_failing_job_fails_alone(store, writer):
    gate = threading.Event()
    writer.submit(lambda s: gate.wait(5))
    good1 = writer.submit(lambda s: Store.add_apps(s, [make_app(1)]))
    dup = writer.submit(lambda s: Store.add_apps(s, [make_app(1)]))  # same primary key
    good2 = writer.submit(lambda s: Store.add_apps(s, [make_app(2)]))
    gate.set()
    good1.result(5)
    good2.result(5)
    with pytest.raises(IntegrityError):  # a job's own error, not a store fault
        dup.result(5)
    assert [a.id for a in store.load_apps()] == [make_app(1).id, make_app(2).id]


def test_after_runs_only_once_committed(store, writer):
    seen = []
    writer.submit(
        lambda s: Store.add_apps(s, [make_app(1)]),
        after=lambda _: seen.append(store.get_app(make_app(1).id)),
    ).result(5)
    assert seen[0] is not None and seen[0].name == "app1"
    bad = writer.submit(lambda s: 1 / 0, after=lambda _: seen.append("ran"))
    with pytest.raises(ZeroDivisionError):
        bad.result(5)
    assert seen[1:] == []


def test_apps_and_events_read_back_as_written(store, writer):
    app = make_app(
        7, handle={"app_id": "x", "kind": "process", "ref": "123:4.5", "started_at": 1.0}
    )
    writer.submit(lambda s: Store.add_apps(s, [app])).result(5)
    writer.submit(
        lambda s: Store.update_apps(
            s, [{"id": app.id, "state": AppState.STARTING, "started_at": 9.5}]
        )
    ).result(5)
    writer.submit(
        lambda s: Store.add_events(
            s,
            [
                EventRecord(app.id, 1.0, "submitted", "hello"),
                EventRecord(app.id, 2.0, "state", "ACCEPTED -> STARTING: driver launched"),
            ],
        )
    ).result(5)
    back = store.get_app(app.id)
    assert back.state is AppState.STARTING and back.started_at == 9.5
    assert back.spec == app.spec
    sub, was = back.submission, app.submission
    assert (sub.argv, sub.conf, back.handle) == (was.argv, was.conf, app.handle)
    assert [e.kind for e in store.events(app.id)] == ["submitted", "state"]
    assert store.max_seq() == 7
    assert store.load_apps([AppState.ACCEPTED]) == []


def test_a_priority_change_lands_on_the_row_as_it_is_on_disk(store, writer):
    """``set_priority``: the priority replaced is the row's, whatever the caller read; an
    ended app or an unknown one is left alone (None)."""
    apps = [make_app(1), make_app(2, state=AppState.KILLED)]
    writer.submit(lambda s: Store.add_apps(s, apps)).result(5)

    def change(app_id: str, priority: int, was: int):
        return writer.submit(lambda s: Store.set_priority(s, app_id, priority, was)).result(5)

    assert change(apps[0].id, 7000, was=5000) == 5000  # as read
    assert change(apps[0].id, 8000, was=5000) == 7000  # read before the last change landed
    assert store.get_app(apps[0].id).priority == 8000
    assert change(apps[1].id, 9000, was=5000) is None
    assert change("driver-nobody", 9000, was=5000) is None
    assert store.get_app(apps[1].id).priority == 5000


def test_a_cycles_updates_write_each_set_of_columns_and_refuse_an_unknown_app(store, writer):
    """``update_apps`` groups the changes by their columns (one executemany each); a change to
    an app that is not stored fails the job, and nothing of it is written."""
    apps = [make_app(i) for i in (1, 2, 3)]
    writer.submit(lambda s: Store.add_apps(s, apps)).result(5)
    writer.submit(lambda s: Store.update_apps(s, [
        {"id": apps[0].id, "state": AppState.STARTING, "started_at": 5.0},
        {"id": apps[1].id, "priority": 9000},
        {"id": apps[2].id, "state": AppState.STARTING, "started_at": 6.0},
    ])).result(5)
    back = [store.get_app(a.id) for a in apps]
    assert [(b.state, b.started_at, b.priority) for b in back] == [
        (AppState.STARTING, 5.0, 5000), (AppState.ACCEPTED, None, 9000),
        (AppState.STARTING, 6.0, 5000)]
    bad = writer.submit(lambda s: Store.update_apps(s, [
        {"id": apps[1].id, "priority": 1}, {"id": "driver-nobody", "priority": 1}]))
    with pytest.raises(Exception, match="matched 1"):
        bad.result(5)
    assert store.get_app(apps[1].id).priority == 9000


def test_serve_refuses_in_one_line_a_store_it_cannot_reach(tmp_path):
    """``sessionsched serve`` on a PostgreSQL server that is not there: one line naming the
    store and the cause, exit code 2, no traceback, no password."""
    port = free_port_in(range(*PORT_RANGE))  # nothing listens there
    config = tmp_path / "sessionsched.yaml"
    config.write_text(yaml.safe_dump({
        "server": {"state_dir": str(tmp_path / "state"), "port": port,
                   "db_url": f"postgresql://sched:secret@127.0.0.1:{port}/s"},
        "queues": [{"name": "root", "queues": [{"name": "default"}]}]}))
    done = subprocess.run([sys.executable, "-m", "sessionsched.cli", "serve", "--config",
                           str(config)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"sessionsched serve: cannot start: state store unavailable: cannot connect to "
        f"PostgreSQL at 127.0.0.1:{port}: Connection refused")


def test_a_launch_wait_reads_back_and_an_older_database_gets_its_column(store_url, store):
    """``launch_wait`` (a launch to try again after a restart) on a database made before it:
    the column is added when the store opens, and the wait reads back as written."""
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE apps DROP COLUMN launch_wait"))
    older = Store(store_url)  # as the next start of the scheduler opens it
    try:
        app = make_app(8, state=AppState.STARTING, launch_wait={"tries": 2, "at": 12.5})
        w = Writer(older)
        w.start()
        try:
            w.submit(lambda s: Store.add_apps(s, [app, make_app(9)])).result(5)
        finally:
            w.stop()
        assert older.get_app(app.id).launch_wait == {"tries": 2, "at": 12.5}
        assert older.get_app(make_app(9).id).launch_wait is None
    finally:
        older.close()


def test_usage_reads_back_by_window_and_an_older_database_gets_its_column(store_url, store):
    """The apps' ``usage`` column (docs/operator/usage.md) on a database made before it, and
    ``usage_rows``: the apps in the books at some time in [since, until)."""
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE apps DROP COLUMN usage"))
    older = Store(store_url)
    try:
        ended = make_app(1, state=AppState.FINISHED, finished_at=5.0,
                         usage={"held_core_s": 12.5, "since": 5.0})
        w = Writer(older)
        w.start()
        try:
            w.submit(lambda s: Store.add_apps(s, [ended, make_app(7)])).result(5)
            w.submit(lambda s: Store.update_apps(
                s, [{"id": make_app(7).id, "usage": {"held_cores": 2, "since": 8.0}}])).result(5)
        finally:
            w.stop()
        # app 1 lived 1-5, app 7 from 7 on (not ended)
        assert [(r.id, r.usage) for r in older.usage_rows(0.0, 100.0)] == [
            (ended.id, {"held_core_s": 12.5, "since": 5.0}),
            (make_app(7).id, {"held_cores": 2, "since": 8.0})]
        assert [r.id for r in older.usage_rows(6.0, 100.0)] == [make_app(7).id]
        assert [r.id for r in older.usage_rows(0.0, 7.0)] == [ended.id]
        assert [r.finished_at for r in older.usage_rows(0.0, 100.0)] == [5.0, None]
    finally:
        older.close()


def test_a_runs_stages_read_back_by_name_and_an_older_database_gets_their_column(store_url,
                                                                                 store):
    """The apps' ``stages`` column (what the estimates read of a name's earlier runs:
    docs/design/estimates.md) on a database made before it; ``stage_runs`` gives a name's
    FINISHED runs that reported stages, newest first."""
    from dataclasses import replace

    from sessionsched.model.stages import DoneStage
    from sessionsched.store.work_lengths import stage_runs

    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE apps DROP COLUMN stages"))
    older = Store(store_url)

    def run(i: int, state: AppState, finished_at: float | None) -> StoredApp:
        app = make_app(i, state=state, started_at=1.0, finished_at=finished_at)
        return replace(app, submission=replace(app.submission, spec=replace(
            app.submission.spec, name="nightly")))

    apps = [run(1, AppState.FINISHED, 10.0), run(2, AppState.FINISHED, 20.0),
            run(3, AppState.FAILED, 30.0), run(4, AppState.FINISHED, 40.0),
            run(5, AppState.RUNNING, None)]
    try:
        w = Writer(older)
        w.start()
        try:
            w.submit(lambda s: Store.add_apps(s, apps)).result(5)
            w.submit(lambda s: Store.update_apps(s, [
                {"id": apps[0].id, "stages": [[8, 2.5], [4, 10.0]]},
                {"id": apps[1].id, "stages": [[8, 3.0]]},
                {"id": apps[2].id, "stages": [[8, 9.0]]},  # FAILED: not a run to its end
                {"id": apps[4].id, "stages": [[8, 1.0]]},  # not ended yet
            ])).result(5)
        finally:
            w.stop()
        # app 4 finished last but reported no stages: not a run of stages
        assert stage_runs(older, ["nightly", "never-run"]) == {"nightly": [
            (DoneStage(8, 3.0),), (DoneStage(8, 2.5), DoneStage(4, 10.0))]}
    finally:
        older.close()
