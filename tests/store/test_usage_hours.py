"""The hourly usage rollup (``store/usage_hours``) on a real SQLite file and a real PostgreSQL
server (each test runs on both): writes add to an hour's row, a failed transaction adds
nothing, a window reads the hours that start in it."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from test_store import make_app

from sessionsched.model import AppState
from sessionsched.model.usage import HOUR_S, HOURLY
from sessionsched.store import Store, Writer
from sessionsched.store.usage_hours import add_hours, live_usage, load_hours


def row(**figures) -> list[float]:
    return [float(figures.get(k, 0.0)) for k in HOURLY]


def test_writes_add_to_their_hours_and_a_window_reads_the_hours_starting_in_it(store, writer):
    q, h = "root.etl", HOUR_S
    writer.submit(lambda s: add_hours(s, {
        (0.0, q, "alice"): row(held_core_s=10, apps=1),
        (h, q, "alice"): row(held_core_s=5)})).result(10)
    writer.submit(lambda s: add_hours(s, {
        (0.0, q, "alice"): row(held_core_s=2.5, busy_core_s=1),  # the same hour: added
        (0.0, q, "bob"): row(queued_s=7)})).result(10)
    got = {(r.hour, r.user): dict(zip(HOURLY, r.figures, strict=True))
           for r in load_hours(store, 0.0, 2 * h)}
    assert got == {
        (0.0, "alice"): dict(zip(HOURLY, row(held_core_s=12.5, busy_core_s=1, apps=1),
                                 strict=True)),
        (0.0, "bob"): dict(zip(HOURLY, row(queued_s=7), strict=True)),
        (h, "alice"): dict(zip(HOURLY, row(held_core_s=5), strict=True))}
    assert [r.hour for r in load_hours(store, h, 2 * h)] == [h]
    assert [r.hour for r in load_hours(store, 0.0, h)] == [0.0, 0.0]


def test_a_failed_transaction_adds_nothing(store, writer):
    def job(s):
        add_hours(s, {(0.0, "root.q", "u"): row(held_core_s=10)})
        raise RuntimeError("the rest of the write failed")

    with pytest.raises(RuntimeError):
        writer.submit(job).result(10)
    assert load_hours(store, 0.0, HOUR_S) == []


def test_the_live_apps_are_read_with_their_columns(store, writer):
    live = make_app(1, usage={"held_cores": 2, "since": 5.0})
    ended = make_app(2, state=AppState.FINISHED, finished_at=9.0, usage={"since": 9.0})
    writer.submit(lambda s: store.add_apps(s, [live, ended])).result(10)
    assert live_usage(store) == [("root.default", "u", "ACCEPTED", 1.0,
                                  {"held_cores": 2, "since": 5.0})]


def test_a_custom_resource_has_rows_of_its_own_keyed_by_its_name(store, writer):
    """A GPU's hours (keys of four: the resource's name last) add up like the cores' and come
    back beside the hour's figures; a new name needs no new column."""
    q, h = "root.gpu", HOUR_S
    writer.submit(lambda s: add_hours(s, {
        (0.0, q, "alice"): row(held_core_s=10),
        (0.0, q, "alice", "gpu"): [4.0, 2.0, 0.0, 0.0],
        (h, q, "alice", "fpga"): [1.0, 1.0, 0.5, 0.0]})).result(10)
    writer.submit(lambda s: add_hours(s, {
        (0.0, q, "alice", "gpu"): [1.0, 0.5, 0.0, 3.0]})).result(10)
    got = {r.hour: (r.figures[HOURLY.index("held_core_s")], r.resources)
           for r in load_hours(store, 0.0, 2 * h)}
    assert got == {0.0: (10.0, {"gpu": (5.0, 2.5, 0.0, 3.0)}),
                   h: (0.0, {"fpga": (1.0, 1.0, 0.5, 0.0)})}


def test_an_older_database_gains_the_resources_table_and_keeps_its_hours(store_url, store,
                                                                        writer):
    """A database from before the custom resources' rollup (no ``usage_hour_resources``):
    the next open makes the table, its hours read as they were, a GPU's hours add."""
    writer.submit(lambda s: add_hours(s, {(0.0, "root.q", "u"): row(held_core_s=3)})).result(10)
    with store.engine.begin() as c:
        c.execute(text("DROP TABLE usage_hour_resources"))
    older = Store(store_url)  # as the next start of the scheduler opens it
    w = Writer(older)
    w.start()
    try:
        w.submit(lambda s: add_hours(s, {(0.0, "root.q", "u", "gpu"): [2.0, 1.0, 0.0, 0.0]}
                                     )).result(10)
    finally:
        w.stop()
    try:
        (hour,) = load_hours(older, 0.0, HOUR_S)
        assert hour.figures[HOURLY.index("held_core_s")] == 3.0
        assert hour.resources == {"gpu": (2.0, 1.0, 0.0, 0.0)}
    finally:
        older.close()
