"""The store on a real SQLite file: group commit, isolation of a failing job, reading back."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from sessionsched.model import AppSpec, AppState, Resources
from sessionsched.store import EventRecord, Store, StoredApp, Writer


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
    return StoredApp(
        id=app_id,
        seq=i,
        kind="submit",
        name=f"app{i}",
        user="u",
        queue="root.default",
        priority=5000,
        submitted_at=float(i),
        spec=spec,
        argv=["app.py", "x"],
        conf={"spark.a": "b"},
        **kw,
    )


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'state.db'}")
    yield s
    s.close()


@pytest.fixture
def writer(store):
    w = Writer(store)
    w.start()
    yield w
    w.stop()


def test_sqlite_runs_in_wal_mode_with_full_sync(store, tmp_path):
    with store.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL


def test_concurrent_writes_share_transactions_and_all_land(store, writer, tmp_path):
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
    # Read with a plain sqlite3 connection: it is on disk, not in some cache.
    with sqlite3.connect(tmp_path / "state.db") as c:
        assert c.execute("select count(*) from apps").fetchone()[0] == 200


def test_a_failing_job_fails_alone(store, writer):
    gate = threading.Event()
    writer.submit(lambda s: gate.wait(5))
    good1 = writer.submit(lambda s: Store.add_apps(s, [make_app(1)]))
    dup = writer.submit(lambda s: Store.add_apps(s, [make_app(1)]))  # same primary key
    good2 = writer.submit(lambda s: Store.add_apps(s, [make_app(2)]))
    gate.set()
    good1.result(5)
    good2.result(5)
    with pytest.raises(Exception, match="UNIQUE"):
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
    assert (back.argv, back.conf, back.handle) == (app.argv, app.conf, app.handle)
    assert [e.kind for e in store.events(app.id)] == ["submitted", "state"]
    assert store.max_seq() == 7
    assert store.load_apps([AppState.ACCEPTED]) == []
