"""Behind several clusters the store keeps each app's cluster (``apps.cluster``, written with
its launch's commit), how many times each live app was placed (its ``placed`` rows) and the
clusters a submission asked for (in its spec): a database made before them gets the column
when the store opens, and its rows read back as they were."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import text

from sessionsched.model import AppState
from sessionsched.store import EventRecord, Store, Writer
from sessionsched.store.clusters import live_clusters, live_placements
from tests.store.test_store import make_app


def test_an_apps_cluster_reads_back_and_an_older_database_gets_its_column(store_url, store):
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE apps DROP COLUMN cluster"))
    older = Store(store_url)  # as the next start of the scheduler opens it
    try:
        placed, queued, ended = make_app(1), make_app(2), make_app(3, state=AppState.FINISHED)
        asked = replace(make_app(4), submission=replace(
            make_app(4).submission, spec=replace(make_app(4).spec, clusters=("b", "a"))))
        w = Writer(older)
        w.start()
        try:
            w.submit(lambda s: Store.add_apps(s, [placed, queued, ended, asked])).result(5)
            w.submit(lambda s: Store.update_apps(s, [
                {"id": placed.id, "state": AppState.STARTING, "cluster": "b"},
                {"id": ended.id, "cluster": "a"}])).result(5)
        finally:
            w.stop()
        assert older.get_app(placed.id).cluster == "b"
        assert older.get_app(queued.id).cluster is None
        assert live_clusters(older) == {placed.id: "b"}  # the ended app is adopted nowhere
        assert older.get_app(asked.id).spec.clusters == ("b", "a")
        assert older.get_app(queued.id).spec.clusters == ()
    finally:
        older.close()


def test_each_live_apps_placements_are_counted_from_its_placed_rows(writer, store):
    twice, once, ended = make_app(1, state=AppState.STARTING), make_app(2), make_app(
        3, state=AppState.FAILED)
    writer.submit(lambda s: Store.add_apps(s, [twice, once, ended, make_app(4)])).result(5)
    rows = [EventRecord(app_id, at, "placed", f"placed on cluster a (placement {n})")
            for app_id, at, n in ((twice.id, 1.0, 1), (twice.id, 2.0, 2), (once.id, 1.0, 1),
                                  (ended.id, 1.0, 1))]
    writer.submit(lambda s: Store.add_events(s, rows + [
        EventRecord(once.id, 1.0, "launch", "driver launched (memory driver-memory-0001)")]
    )).result(5)
    # The ended app, and the one never placed, count no more.
    assert live_placements(store) == {twice.id: 2, once.id: 1}
