"""Store faults injected for real under a running Writer: a SQLite store on a full filesystem
(a small tmpfs mounted as root) and a PostgreSQL server stopped and started again.

Each asserts what an operator is promised: every failed write says so in one line naming the
store; nothing acknowledged is lost; nothing is half-written (an app is in the store with all
its events or not at all); sequence numbers have no gaps; the writer recovers by itself.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from sessionsched.model import AppSpec, Resources
from sessionsched.model.submission import Submission
from sessionsched.store import EventRecord, Store, StoredApp, StoreUnavailable, Writer
from tests.fullfs import fill, tiny_tmpfs
from tests.sparkcluster import wait_until

pytestmark = pytest.mark.storefault


def submission(argv_bytes: int = 100):
    """A writer job as the service's submit is: the sequence number from the store, the app
    and its two events. Returns the seq."""

    def job(session) -> int:
        seq = Store.next_seq(session)
        app_id = f"driver-20260101000000-{seq:04d}"
        spec = AppSpec(app_id=app_id, queue="root.default", seq=seq, submitted_at=float(seq),
                       name="a", user="u", executor=Resources(1, 512))
        app = StoredApp(Submission(spec=spec, kind="submit",
                                   argv=("app.py", "x" * argv_bytes)))
        Store.add_apps(session, [app])
        Store.add_events(session, [EventRecord(app_id, float(seq), "submitted", "hello"),
                                   EventRecord(app_id, float(seq), "warning", "w")])
        return seq

    return job


def assert_whole_and_gapless(store: Store, acknowledged: set[int]) -> None:
    apps = store.load_apps()
    seqs = [a.seq for a in apps]
    assert set(seqs) == acknowledged  # nothing acknowledged lost, nothing unacknowledged kept
    assert seqs == list(range(1, len(seqs) + 1))  # no sequence number burned
    for app in apps:  # nothing half-written
        assert [e.kind for e in store.events(app.id)] == ["submitted", "warning"]


def assert_one_line_fault(error: BaseException, reason: str | None = None) -> None:
    assert isinstance(error, StoreUnavailable), repr(error)
    text = str(error)
    assert "\n" not in text and text.startswith("state store unavailable: ")
    assert "[SQL:" not in text and "sqlalche.me" not in text
    if reason is not None:
        assert text == f"state store unavailable: {reason}"


@pytest.fixture
def tiny_fs(tmp_path):
    """A 4 MiB tmpfs of our own, unmounted at the end."""
    with tiny_tmpfs(tmp_path / "fs") as mnt:
        yield mnt


def results(futures: list[Future], timeout_s: float = 60) -> tuple[set[int], list[BaseException]]:
    ok: set[int] = set()
    errors: list[BaseException] = []
    for f in futures:
        error = f.exception(timeout_s)
        if error is None:
            ok.add(f.result())
        else:
            errors.append(error)
    return ok, errors


def test_a_full_disk_fails_writes_in_one_line_and_the_writer_recovers_when_space_returns(tiny_fs):
    store = Store(f"sqlite:///{tiny_fs / 'state.db'}")
    writer = Writer(store)
    writer.start()
    try:
        acknowledged, errors = results([writer.submit(submission()) for _ in range(5)])
        assert errors == [] and acknowledged == {1, 2, 3, 4, 5}
        assert store.health().ok

        fill(tiny_fs / "filler")
        # 20 submissions of 30 KB each, queued behind a held writer so they go in one batch,
        # plus a few that come alone: none fits.
        inside, gate = threading.Event(), threading.Event()
        held = writer.submit(lambda s: inside.set() or gate.wait(30))
        assert inside.wait(30)
        batch = [writer.submit(submission(30_000)) for _ in range(20)]
        gate.set()
        ok, errors = results([held] + batch + [writer.submit(submission(30_000))
                                               for _ in range(3)])
        assert ok == set() and len(errors) == 24  # the held one too: every commit writes
        for e in errors:
            assert_one_line_fault(e, "disk full")
        health = store.health()
        assert not health.ok and str(health) == "state store unavailable: disk full"
        assert_whole_and_gapless(store, acknowledged)

        (tiny_fs / "filler").unlink()  # space returns; same writer, same store
        assert store.health().ok
        ok, errors = results([writer.submit(submission(30_000)) for _ in range(10)])
        assert errors == [] and ok == set(range(6, 16))  # 6..15: the failures took none
        assert_whole_and_gapless(store, acknowledged | ok)
    finally:
        writer.stop()
        store.close()


def test_a_postgresql_restart_under_a_running_writer_loses_nothing_and_needs_no_restart(
        pg_server):
    store = Store(pg_server.fresh_database())
    writer = Writer(store)
    writer.start()
    acknowledged: set[int] = set()
    errors: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client() -> None:  # a client submitting one app at a time, as HTTP clients do
        while not stop.is_set():
            f = writer.submit(submission())
            error = f.exception(60)
            with lock:
                if error is None:
                    acknowledged.add(f.result())
                else:
                    errors.append(error)

    def count(what) -> int:
        with lock:
            return len(what)

    clients = [threading.Thread(target=client) for _ in range(4)]
    for t in clients:
        t.start()
    try:
        wait_until(lambda: count(acknowledged) >= 40, 60, "40 writes before the restart")
        pg_server.stop()
        wait_until(lambda: count(errors) >= 8, 60, "writes failing while PostgreSQL is down")
        with pytest.raises(StoreUnavailable) as read_error:
            store.get_app("driver-20260101000000-0001")
        assert_one_line_fault(read_error.value)
        health = store.health()
        assert not health.ok and "\n" not in health.reason
        before = count(acknowledged)
        pg_server.start()
        wait_until(lambda: count(acknowledged) >= before + 40, 60,
                   "40 writes after PostgreSQL came back")
    finally:
        stop.set()
        for t in clients:
            t.join(90)
        if pg_server.proc is None or pg_server.proc.poll() is not None:
            pg_server.start()  # the other tests of the session share it
        writer.stop()
    try:
        assert errors
        for e in errors:
            assert_one_line_fault(e)
        assert store.health().ok
        assert_whole_and_gapless(store, acknowledged)
    finally:
        store.close()


class CommitFault:
    """A fault hook in the database driver's COMMIT: armed, the next commit raises the
    driver's own OperationalError — a lost connection on PostgreSQL, an I/O error on SQLite —
    either before the database commits or after it has (the answer lost in transit)."""

    def __init__(self, store: Store, after: bool):
        self.armed = False
        dialect = store.engine.dialect
        real_commit = dialect.do_commit
        self.reason = ("disk I/O error" if dialect.name == "sqlite"
                       else "server closed the connection unexpectedly")

        def do_commit(dbapi_connection) -> None:
            if not self.armed:
                return real_commit(dbapi_connection)
            self.armed = False
            if after:
                real_commit(dbapi_connection)
            raise dialect.loaded_dbapi.OperationalError(self.reason)

        dialect.do_commit = do_commit  # this engine's dialect only


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "not-committed"])
def test_a_commit_whose_answer_is_lost_is_settled_by_reading_it_back(store, writer, committed):
    fault = CommitFault(store, after=committed)
    ran: list[int] = []
    first, errors = results([writer.submit(submission(), after=ran.append)])
    assert first == {1} and errors == []

    fault.armed = True
    in_doubt = writer.submit(submission(), after=ran.append)
    error = in_doubt.exception(30)
    assert not fault.armed  # the hook did fire
    if committed:  # it went through: acknowledged (late), its after-step ran
        assert error is None and in_doubt.result() == 2 and ran == [1, 2]
    else:  # it did not: the fault, nothing ran, nothing kept
        assert_one_line_fault(error)
        assert fault.reason in str(error)
        assert ran == [1]
    later, errors = results([writer.submit(submission()) for _ in range(3)])
    assert errors == []
    acknowledged = {1} | ({2} if committed else set()) | later
    assert later == ({3, 4, 5} if committed else {2, 3, 4})  # no number burned
    assert_whole_and_gapless(store, acknowledged)
