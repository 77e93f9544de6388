"""The meter's own thread: counts the committed cycles' facts beside the cycle and writes the
changed usage columns and hours (``meter.UsageMeter`` counts; this module carries)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from sessionsched.engine.events import Decision, Event
from sessionsched.model.text import one_line

from .meter import HourKey, UsageMeter

log = logging.getLogger("sessionsched.usage")

COMMIT_TIMEOUT_S = 60.0

_STOP = object()


class MeterThread:
    """Counts the committed cycles' facts beside the cycle: the cycle hands them over once its
    commit is done (``feed``: a queue put, nothing else on the cycle's thread); this thread
    counts them in order (``UsageMeter.step``) and sends the usage columns that changed to the
    store's writer, one transaction per batch of cycles. A write that fails (the store is
    down, or this scheduler no longer leads) is sent again with the next batch. Only committed
    cycles are counted, so a rewound cycle (its commit failed) is never counted twice."""

    def __init__(self, meter: UsageMeter,
                 write: Callable[[list[dict], dict[HourKey, list[float]]], Future]):
        self.meter = meter
        self._write = write
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._pending: dict[str, dict] = {}  # app id -> usage column not yet on disk
        self._hours: dict[HourKey, list[float]] = {}  # hours' growth not yet on disk
        self._closed: set[str] = set()  # apps whose last column is among ``_pending``
        self._failing = False
        # (the write, its columns, hours and closed apps)
        self._inflight: tuple[Future, dict, dict, set] | None = None
        self._thread = threading.Thread(target=self._loop, name="usage-meter", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def feed(self, now: float, events: Sequence[Event], decisions: Sequence[Decision]) -> None:
        self._queue.put((now, events, decisions))

    def drain(self, timeout_s: float = 30.0) -> bool:
        """Wait until everything fed so far is counted and its write is done (tests, stop)."""
        if not self._thread.is_alive():
            return False
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout_s)

    def stop(self, timeout_s: float = 30.0) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        while True:
            items = [self._queue.get()]
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            markers = [i for i in items if isinstance(i, threading.Event)]
            for item in items:
                if isinstance(item, tuple):
                    try:
                        self._pending.update(self.meter.step(*item))
                    except Exception:  # noqa: BLE001 - counting must go on
                        log.exception("usage: could not count a cycle's facts")
                    add_hours(self._hours, self.meter.take_hours())
                    self._closed |= self.meter.take_closed()
            self._flush()
            for marker in markers:
                marker.set()
            if any(i is _STOP for i in items):
                return

    def _flush(self) -> None:
        if self._inflight is not None and not self._settle(0.0):
            return  # the last write is still in doubt: its hours must not be sent twice
        if not self._pending and not self._hours:
            return
        sent, hours, closed = self._pending, self._hours, self._closed
        self._pending, self._hours, self._closed = {}, {}, set()
        # An ended app's last column closes its usage (``AppRow.usage_open``) in the commit
        # that adds its last hours: a restart counts the end again only if neither is on disk.
        rows = [{"id": app_id, "usage": column, **({"usage_open": False} if app_id in closed
                                                   else {})}
                for app_id, column in sent.items()]
        self._inflight = (self._write(rows, hours), sent, hours, closed)
        self._settle(COMMIT_TIMEOUT_S)

    def _settle(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the write in flight; True once it has an outcome. A
        failed one's columns and hours are put back, to go with the next write (the columns
        counted since are newer; the hours add up). One with no outcome yet (the store's
        writer waits to learn whether a commit went through) is waited for, never sent
        again: the hours are added to the store's rows, twice if sent twice."""
        future, sent, hours, closed = self._inflight
        try:
            future.result(timeout_s)
        except Exception as e:  # noqa: BLE001 - kept, sent again with the next batch
            if not future.done():
                return False
            self._pending = {**sent, **self._pending}
            add_hours(self._hours, hours)
            self._closed |= closed
            if not self._failing:
                log.warning("usage: could not store the usage of %d app(s) (%s); tried again "
                            "with the next cycles", len(sent), one_line(str(e)))
            self._failing = True
        else:
            self._failing = False
        self._inflight = None
        return True


def add_hours(into: dict[HourKey, list[float]], more: dict[HourKey, list[float]]) -> None:
    for key, row in more.items():
        have = into.get(key)
        if have is None:
            into[key] = list(row)
        else:
            for i, v in enumerate(row):
                have[i] += v

