"""Estimated starts kept fresh in the background: every ``server.estimate_s`` the current view
is handed to the simulator run forward (``sim.estimate``) and the answers are published on
the read view (``ReadView.estimates``); readers never compute one.

Off the cycle's path, and off its interpreter: the forward run is pure Python and takes
from milliseconds to seconds, which in a thread would hold the GIL against the cycle and the
readers. So it runs in a process of its own (one worker, ``spawn``: the server's threads and
locks are not forked into it), started at the first refresh with an app queued. This process
only picks the apps (``live.chosen``, bounded), reads their names' history from the store (at
most once a minute) and pickles the input. A run still going when the next is due makes the
next wait (APScheduler ``max_instances=1``), and a run rests at least as long as the last one
took (``refresh``): at most half a core of the machine, which the cycle shares. Without
``start_process`` (the stepped tests, which run no cycles of their own) a run is a plain call.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.popen_spawn_posix  # noqa: F401 - see below
import multiprocessing.resource_tracker  # noqa: F401
import multiprocessing.synchronize  # noqa: F401
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from datetime import datetime

from sessionsched.config import ServerConfig
from sessionsched.model import AppSpec
from sessionsched.service.estimating.live import History, chosen, live_from, names_of, run_length
from sessionsched.service.estimating.progress import ProgressBook
from sessionsched.service.reads import CounterOffer, ReadModel, StartEstimate
from sessionsched.sim.estimate import (
    TIMINGS,
    DryRun,
    Estimate,
    Queued,
    Timings,
    dry_run,
    estimate,
    never_fits,
)
from sessionsched.sim.queue_trees import QueueChange, upcoming
from sessionsched.store import Store
from sessionsched.store.work_lengths import stage_runs, work_lengths

log = logging.getLogger("sessionsched.estimate")

# The spawned pool's own modules are imported above, with this one, not at the first refresh:
# there, on the scheduler's thread, a first import would change ``sys.modules`` at a moment
# no one chose, under whatever another thread of the server was iterating it (a test's
# hypothesis, describing a strategy, once failed so: "dictionary changed size during
# iteration").

HISTORY_S = 60.0  # how long the store's run lengths are reused
RUN_TIMEOUT_S = 120.0  # a forward run that takes longer is given up (and logged)
NOW_S = 30.0  # an offer to start within this is "start now"


def _exit_with_parent(parent: int) -> None:
    """In the estimating process: end when the server's process is gone (killed -9, the
    worker would otherwise wait for work for ever, orphaned); and yield the CPU to the server
    and its clients (nice 10): on a small host a forward run took cores the readers wanted
    (Spark REST status p50 0.25 -> 0.52 ms at 10,000 apps); an estimate may come later, an
    answer may not."""
    os.nice(10)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def offer_text(start_at: float | None, offer_at: float, executors: int, instead_of: int,
               now: float) -> str:
    """E.g. ``start ≈ 14:20 with 8 executors; start now with 2``."""
    def hm(t: float) -> str:
        return datetime.fromtimestamp(t).strftime("%H:%M")
    first = "later" if start_at is None else f"≈ {hm(start_at)}"
    then = "now" if offer_at - now <= NOW_S else f"≈ {hm(offer_at)}"
    return (f"start {first} with {instead_of} executors; start {then} with {executors} "
            f"(spark.dynamicAllocation.minExecutors={executors})")


def absolute(now: float, est: Estimate) -> StartEstimate:
    start = None if est.start_in_s is None else now + est.start_in_s
    offer = None
    if est.offer is not None:
        o = est.offer
        offer = CounterOffer(o.executors, now + o.start_in_s, o.instead_of,
                             offer_text(start, now + o.start_in_s, o.executors, o.instead_of,
                                        now))
    return StartEstimate(start, offer)


DRY_RUN_ID = "dry-run"


@dataclass(frozen=True)
class DryRunAnswer:
    """``fits``: whether the app could start at all on the cluster as it is (``problem``
    says why not); ``position``/``reason``: its place and why it would wait (None/"": it
    would start at once); ``estimate``: when, and the counter-offer. Behind several clusters
    (``clusters.fits.with_clusters``): ``cluster``, the one it would start on (None: none
    within the estimate's horizon), and ``clusters``, those it may use."""

    fits: bool
    problem: str | None
    position: int | None
    reason: str
    estimate: StartEstimate
    cluster: str | None = None
    clusters: tuple[str, ...] = ()


class Estimator:
    def __init__(self, reads: ReadModel, store: Store, clock: Callable[[], float],
                 default_run_s: float, timings: Timings = TIMINGS,
                 progress: ProgressBook | None = None, config: ServerConfig | None = None):
        """``progress``: the launched apps' stages as their agents report them; ``config``:
        the server's, whose time-of-day plans the forward runs fire as they will
        (``queue_trees.upcoming``)."""
        self.reads = reads
        self._planned = config if config is not None and config.plans else None  # (``_changes``)
        self.progress = progress or ProgressBook()
        self.store = store
        self.clock = clock
        self.default_run_s = default_run_s
        self.timings = timings
        self._pool: ProcessPoolExecutor | None = None
        self._in_process = False  # ``start_process``
        self._history = History()
        self._history_at = float("-inf")
        self._history_names: set[str] = set()
        self.last_run_s = 0.0  # wall time of the last forward run
        self._last_end = float("-inf")
        self.local_s = 0.0  # and of this process's part of it

    def start_process(self) -> None:
        """Run the forward runs in a process of their own from now on. It is started at the
        first refresh with an app queued: a server whose apps never wait never spawns it (a
        spawned interpreter importing the package takes seconds of CPU)."""
        self._in_process = True

    def _process(self) -> ProcessPoolExecutor | None:
        if self._in_process and self._pool is None:
            self._pool = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_exit_with_parent, initargs=(os.getpid(),))
        return self._pool

    def stop(self) -> None:
        self._in_process = False
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def refresh(self, force: bool = False) -> None:
        """One forward run from the view as it is now; its answers published. Skipped (unless
        ``force``: a test stepping by hand) while less time has passed since the last run than
        it took: a run of 8 s is followed by at least 8 s of rest, so estimating takes at most
        half a core, however big the books."""
        t0 = time.perf_counter()
        if not force and t0 - self._last_end < self.last_run_s:
            return
        view = self.reads.view
        now = self.clock()
        launched, queued = chosen(view)
        progress = self.progress.snapshot([f.app_id for f in launched])
        if not queued:
            if view.estimates:
                self.reads.publish(estimates={}, estimated_at=now)
            return
        history = self._lengths(names_of(view, launched + queued))
        live = live_from(view, now, launched, queued, history, self.default_run_s,
                         self.timings, progress, self._changes(now))
        self.local_s = time.perf_counter() - t0
        pool = self._process()
        try:
            if pool is None:
                answers = estimate(live)
            else:
                answers = pool.submit(estimate, live).result(RUN_TIMEOUT_S)
        except Exception as e:  # an estimate is a hint: a failed run must not stop the server
            log.warning("estimating the queued apps' starts failed: %s", e)
            if isinstance(e, BrokenProcessPool) and self._pool is pool is not None:
                self._pool = None  # its process died (killed, out of memory): the next run
                pool.shutdown(wait=False, cancel_futures=True)  # starts another
            return
        self._last_end = time.perf_counter()
        self.last_run_s = self._last_end - t0
        self.reads.publish(estimates={a: absolute(now, e) for a, e in answers.items()},
                           estimated_at=now)

    def dry_run(self, spec: AppSpec, name: str) -> DryRunAnswer:
        """What ``spec`` would meet if submitted now (``submit --dry-run``): nothing stored,
        nothing published. Run where the refreshes run (the estimating process, if started)."""
        view = self.reads.view
        now = self.clock()
        # The cluster's sums, then what a submission is refused for (``ReadView.never_fits``:
        # per worker, a gang whole, the caps on its queue's path).
        problem = never_fits(spec, view.engine.capacity, view.engine.driver_slots,
                             view.engine.host_room) or view.never_fits(spec)
        if problem is not None:
            return DryRunAnswer(False, problem, None, "", StartEstimate(None))
        launched, queued = chosen(view)
        spec = replace(spec, app_id=DRY_RUN_ID, seq=max((f.seq for f in queued), default=0)
                       + len(view.engine.apps) + 1, submitted_at=now)
        history = self._lengths(names_of(view, launched + queued) | {name})
        progress = self.progress.snapshot([f.app_id for f in launched])
        live = live_from(view, now, launched, queued, history, self.default_run_s,
                         self.timings, progress, self._changes(now))
        app = Queued(spec, spec.priority, run_length(name, history.runs, self.default_run_s))
        answer: DryRun | None = None
        pool = self._process()
        if pool is not None:
            try:
                answer = pool.submit(dry_run, live, app).result(RUN_TIMEOUT_S)
            except Exception as e:  # its process is gone or stuck: answer here all the same
                log.warning("dry run in the estimating process failed: %s", e)
        if answer is None:
            answer = dry_run(live, app)
        return DryRunAnswer(True, None, answer.position, answer.reason,
                            absolute(now, answer.estimate), answer.cluster)

    def _changes(self, now: float) -> tuple[QueueChange, ...]:
        if self._planned is None:
            return ()
        try:
            return upcoming(self._planned, now, self.timings.horizon_s)
        except ValueError as e:  # an estimate is a hint: without the plans, not none at all
            log.warning("the plans' changes to come could not be worked out: %s", e)
            return ()

    def _lengths(self, names: set[str]) -> History:
        """Run lengths and stages by name from the store, read again once a minute or for new
        names."""
        fresh = time.monotonic() - self._history_at < HISTORY_S
        if not (fresh and names <= self._history_names):
            self._history = History(work_lengths(self.store, names),
                                    stage_runs(self.store, names))
            self._history_names = set(names)
            self._history_at = time.monotonic()
        return self._history
