"""Group commit: one writer thread, many concurrent writes, few transactions.

Every write to the store is a *job*: a function run inside the writer's transaction, plus an
optional ``after`` callback run once the transaction is committed. The writer takes every job
waiting in its queue, runs them in one transaction and commits once (one fsync for the lot),
then runs each job's ``after`` and resolves its future — in submission order. So a caller that
waits on the future knows its write is on disk, and concurrent submissions share the cost of
the commit instead of relaxing durability.

A job that raises must not sink the others: the batch is rolled back and its jobs are run again
one transaction each, so only the failing job's future carries the error. Jobs therefore must
not change anything outside the transaction (that is what ``after`` is for).

A store fault (disk full, database gone, PostgreSQL restarted: ``StoreUnavailable``) is not a
job's fault: the batch is rolled back, every job's future carries that one exception and no
``after`` runs, so nothing is half-written and nothing in memory changes. The next batch simply
tries again, on a fresh connection: the writer recovers by itself when the store is back.
Sequence numbers come from ``Store.next_seq`` inside the transaction, so a failed batch burns
none.

A fault during COMMIT itself (the connection died after the database may have committed) leaves
the batch *in doubt*: every transaction also writes a fresh token (``Store.mark_commit``), and
the writer reads it back as soon as the store answers again. If it is there, the batch did
commit: its ``after`` steps run and its futures resolve (late; a caller that stopped waiting
reads the app to learn it). If not, its futures fail. Until then no other batch commits, so
the token read back is that batch's or the one before it.
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from .faults import StoreUnavailable, store_faults
from .store import Store

log = logging.getLogger(__name__)


@dataclass
class _Job:
    fn: Callable[[Session], Any]
    after: Callable[[Any], None] | None
    future: Future


@dataclass
class _InDoubt:
    """A batch whose COMMIT got no answer: committed or not is read back later."""

    batch: list[_Job]
    results: list[Any]
    token: str
    fault: StoreUnavailable


_STOP = object()
RESOLVE_EVERY_S = 0.5  # how often a batch in doubt is checked while no other write comes


class Writer:
    """``before_commit(session)``: called in each transaction just before it commits; raising
    ``StoreUnavailable`` there fails the batch whole (``Leadership.fence`` does: only the
    leader writes)."""

    def __init__(self, store: Store, max_batch: int = 2000,
                 before_commit: Callable[[Session], None] | None = None):
        self.store = store
        self.max_batch = max_batch
        self.before_commit = before_commit
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="store-writer", daemon=True)
        self.batches = 0  # transactions committed (for the benchmark's figures)
        self.jobs = 0
        self.faults = 0  # batches lost to a store fault
        self._in_doubt: _InDoubt | None = None  # only the writer thread touches it

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the jobs already queued, then stop."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout_s)

    def submit(
        self, fn: Callable[[Session], Any], after: Callable[[Any], None] | None = None
    ) -> Future:
        future: Future = Future()
        if not self._thread.is_alive():
            future.set_exception(RuntimeError("the store writer is not running"))
            return future
        self._queue.put(_Job(fn, after, future))
        return future

    def _loop(self) -> None:
        while True:
            if self._in_doubt is None:
                item = self._queue.get()
            else:  # settle it as soon as the store answers, even if no other write comes
                try:
                    item = self._queue.get(timeout=RESOLVE_EVERY_S)
                except queue.Empty:
                    self._resolve()
                    continue
            if item is _STOP:
                self._give_up_in_doubt()
                return
            batch = [item]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
            self._commit(batch)
            if stop:
                self._give_up_in_doubt()
                return

    def _commit(self, batch: list[_Job]) -> None:
        if self._in_doubt is not None and not self._resolve():
            self._fail(batch, self._in_doubt.fault)  # the store still does not answer
            return
        token = uuid.uuid4().hex
        results: list[Any] = []
        committing = False
        try:
            with store_faults(), self.store.session() as session:
                results = [job.fn(session) for job in batch]
                self.store.flush(session)
                if self.before_commit is not None:
                    self.before_commit(session)
                self.store.mark_commit(session, token)
                connection = session.connection()
                committing = True
                try:
                    session.commit()
                except Exception:
                    # A COMMIT that failed may leave the driver's transaction open, and the
                    # pool would hand it on as it is (SQLAlchemy counts it as ended): the next
                    # batch would commit it along. Closing the connection rolls it back.
                    connection.invalidate()
                    raise
        except StoreUnavailable as fault:
            self._note_fault(fault)
            if committing:
                # COMMIT was sent and no answer came: it may have gone through. Settled by
                # reading the token back once the store answers; the futures wait till then.
                self._in_doubt = _InDoubt(batch, results, token, fault)
                self._resolve()
            else:
                # Leaving the session rolled the transaction back; retrying the jobs one by
                # one would only fail again, slower.
                self._fail(batch, fault)
            return
        except Exception as e:  # noqa: BLE001 - any job's failure is reported on its future
            if len(batch) > 1:
                for job in batch:
                    self._commit([job])
                return
            batch[0].future.set_exception(e)
            return
        self._committed(batch, results)

    def _resolve(self) -> bool:
        """Settle the batch in doubt, if the store answers: committed (its ``after`` steps run
        and its futures resolve, late) or not (its futures fail). True once settled."""
        doubt = self._in_doubt
        if doubt is None:
            return True
        try:
            with store_faults(), self.store.session() as session:
                committed = self.store.last_commit(session) == doubt.token
        except StoreUnavailable:
            return False
        self._in_doubt = None
        if committed:
            log.warning("a commit that reported %r had gone through: %d write(s) confirmed",
                        doubt.fault.reason, len(doubt.batch))
            self._committed(doubt.batch, doubt.results)
        else:
            self._fail(doubt.batch, doubt.fault)
        return True

    def _give_up_in_doubt(self) -> None:
        if self._in_doubt is not None and not self._resolve():
            doubt, self._in_doubt = self._in_doubt, None
            self._fail(doubt.batch, StoreUnavailable(
                f"{doubt.fault.reason}; the writer stopped before it could tell whether "
                "the write was committed"))

    def _note_fault(self, fault: StoreUnavailable) -> None:
        if self.store.fault is None or self.store.fault.reason != fault.reason:
            log.warning("%s (writes fail until it is back)", fault)  # once, not per batch
        self.store.fault = fault
        self.faults += 1

    @staticmethod
    def _fail(batch: list[_Job], fault: StoreUnavailable) -> None:
        for job in batch:
            job.future.set_exception(fault)

    def _committed(self, batch: list[_Job], results: list[Any]) -> None:
        if self.store.fault is not None:
            log.info("state store available again")
            self.store.fault = None
        self.batches += 1
        self.jobs += len(batch)
        for job, result in zip(batch, results, strict=True):
            if job.after is not None:
                try:
                    job.after(result)
                except Exception as e:  # noqa: BLE001 - committed; the caller must hear of it
                    log.exception("after-commit step failed")
                    job.future.set_exception(e)
                    continue
            job.future.set_result(result)
