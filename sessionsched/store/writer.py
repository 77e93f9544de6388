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
"""

from __future__ import annotations

import logging
import queue
import threading
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


_STOP = object()


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
            item = self._queue.get()
            if item is _STOP:
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
                return

    def _commit(self, batch: list[_Job]) -> None:
        try:
            with store_faults(), self.store.session() as session:
                results = [job.fn(session) for job in batch]
                self.store.flush(session)
                if self.before_commit is not None:
                    self.before_commit(session)
                session.commit()
        except StoreUnavailable as fault:
            # Leaving the session rolled the transaction back; retrying the jobs one by one
            # would only fail again, slower.
            if self.store.fault is None or self.store.fault.reason != fault.reason:
                log.warning("%s (writes fail until it is back)", fault)  # once, not per batch
            self.store.fault = fault
            self.faults += 1
            for job in batch:
                job.future.set_exception(fault)
            return
        except Exception as e:  # noqa: BLE001 - any job's failure is reported on its future
            if len(batch) > 1:
                for job in batch:
                    self._commit([job])
                return
            batch[0].future.set_exception(e)
            return
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
