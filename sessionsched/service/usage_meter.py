"""Counting what each app uses, from the facts the cycle steps (docs/usage.md).

The cycle hands the meter the events the engine took and the decisions it gave; the meter
changes only the apps they name, so counting costs the cycle nothing per app that did not
change (no scan of the books). Per app it keeps a ``sessionsched.usage.AppUsage``:

- an executor list (``ExecutorsChanged``, from the agent or the cluster) sets the levels: held
  cores and memory = the executors times the app's executor size; busy cores = the executors
  the report calls busy (``idle: false``: running at least one task) times their cores. The
  levels hold until the next report, so held and busy core-seconds are exact to one report
  (a heartbeat, 1 s by default); an executor partly busy counts as busy whole.
- ``STARTING`` (the launch) puts the driver's cores and memory on, an end takes everything off.
- a ``Reclaim`` that kills (mode ``kill``) executors the last report called busy counts those
  executors (``reclaimed_executors``) and, as lost work, their cores from the first of the
  unbroken run of reports that called them busy up to the kill (``reclaimed_core_s``, an upper
  bound: the killed tasks' own start times are the agent's, not reported).
- ``queued_s``: from the submission to the launch (``STARTING``), or to the end of an app
  killed while it waited.

What changed is returned as column values for the cycle's commit (the app's ``usage`` column),
so the figures are on disk with the cycle that counted them; ``restore`` reads them back and a
restarted server counts on from the levels stored (the cluster kept the executors meanwhile).
When an app ends, one line ``SESSIONSCHED_APP_SUMMARY`` goes to the ``sessionsched.usage``
log with its figures (YuniKorn's ``YK_APP_SUMMARY``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sessionsched.engine.events import Decision, Event, ExecutorsChanged, MarkState, Reclaim
from sessionsched.model import AppSpec, AppState, ReclaimMode
from sessionsched.usage import COUNTED, AppUsage

log = logging.getLogger("sessionsched.usage")

SUMMARY = "SESSIONSCHED_APP_SUMMARY"


@dataclass
class _Live:
    usage: AppUsage
    spec: AppSpec
    busy: dict[str, float] = field(default_factory=dict)  # busy executor id -> reported at


class UsageMeter:
    """``spec_of(app_id)``: the app's spec (sizes, queue, user), None for an unknown app.

    The Prometheus counters (``totals``) are added up at a scrape, from the live apps' figures
    and those of the apps that ended since this meter started: the cycle only counts each
    app's own figures, with no metric call."""

    def __init__(self, spec_of: Callable[[str], AppSpec | None]):
        self._spec_of = spec_of
        self._apps: dict[str, _Live] = {}
        self._ended: dict[tuple[str, str], list[float]] = {}  # (queue, user) -> COUNTED sums
        self._reported: dict[tuple[str, str], list[float]] = {}
        self._scrape = threading.Lock()
        # The step not committed yet: each app it changed as it was before (None: it was not
        # counted; else the app, a copy of its usage if the step changed it, its busy map),
        # so a rewound step leaves the meter as the last committed one did.
        self._undo: dict[str, list | None] = {}
        # The apps the step ended: their (queue, user) and figures, added to the totals.
        self._apps_end: dict[str, tuple[tuple[str, str], tuple[float, ...]]] = {}

    def restore(self, app_id: str, stored: dict | None) -> None:
        """A live app read back from the store at a restart or a takeover."""
        spec = self._spec_of(app_id)
        if spec is not None:
            self._apps[app_id] = _Live(AppUsage.from_json(stored), spec)

    def totals(self) -> dict[tuple[str, str], list[float]]:
        """(queue, user) -> the ``COUNTED`` figures of every app counted since the meter
        started (a restart starts the counters again, from the live apps' figures). Read from
        another thread while the cycle counts: each figure never goes down between scrapes."""
        with self._scrape:
            sums = {key: list(values) for key, values in list(self._ended.items())}
            for live in list(self._apps.values()):
                key = (live.spec.queue, live.spec.user)
                total = sums.setdefault(key, [0.0] * len(COUNTED))
                for i, v in enumerate(live.usage.counted()):
                    total[i] += v
            for key, total in sums.items():
                last = self._reported.get(key)
                if last is not None:
                    total[:] = [max(a, b) for a, b in zip(total, last, strict=True)]
                self._reported[key] = total
            return sums

    def committed(self) -> None:
        """The last step's changes are on disk."""
        self._undo.clear()

    def rewound(self) -> None:
        """The last step's commit failed: put every app it changed back (the cycle steps its
        facts again, and the meter counts them again, from the committed figures)."""
        with self._scrape:
            for key, counted in self._apps_end.values():  # ended in the step: out of the totals
                total = self._ended[key]
                for i, v in enumerate(counted):
                    total[i] -= v
            for app_id, was in self._undo.items():
                if was is None:
                    self._apps.pop(app_id, None)
                    continue
                live, usage, busy = was
                self._apps[app_id] = live
                if usage is not None:
                    live.usage = usage
                live.busy = busy
            self._undo.clear()
            self._apps_end.clear()

    def step(self, now: float, events: Iterable[Event],
             decisions: Sequence[Decision]) -> dict[str, dict]:
        """Count what the step's facts say; app id -> the new ``usage`` column value. Until
        ``committed`` or ``rewound`` is called, the meter can undo the step."""
        self._undo.clear()
        self._apps_end.clear()
        changed: dict[str, AppUsage] = {}
        for ev in events:
            if isinstance(ev, ExecutorsChanged):
                self._executors(now, ev, changed)
        for d in decisions:
            if isinstance(d, Reclaim) and d.mode is ReclaimMode.KILL:
                self._killed(now, d, changed)
            elif isinstance(d, MarkState):
                self._state(now, d, changed)
        return {app_id: u.to_json() for app_id, u in changed.items()}

    def _live(self, app_id: str) -> _Live | None:
        live = self._apps.get(app_id)
        if live is None:
            spec = self._spec_of(app_id)
            if spec is None:
                return None
            live = self._apps[app_id] = _Live(AppUsage(), spec)
            self._undo.setdefault(app_id, None)
        elif app_id not in self._undo:
            self._undo[app_id] = [live, None, live.busy]  # ``busy`` is replaced, never changed
        return live

    def _keep(self, app_id: str) -> None:
        """The app's usage is about to change: keep a copy for ``rewound`` (once a step)."""
        was = self._undo[app_id]
        if was is not None and was[1] is None:
            was[1] = was[0].usage.copy()

    def _executors(self, now: float, ev: ExecutorsChanged, changed: dict) -> None:
        live = self._live(ev.app_id)
        if live is None:
            return
        size = live.spec.executor
        busy = [e.executor_id for e in ev.executors if not e.idle]
        held, busy_cores = len(ev.executors) * size.cores, len(busy) * size.cores
        u = live.usage
        # The same levels (another executor, the same count): nothing to count or write.
        if held != u.held_cores or busy_cores != u.busy_cores:
            self._keep(ev.app_id)
            u.levels(now, held, len(ev.executors) * size.mem_mib, busy_cores)
            changed[ev.app_id] = u
        if busy or live.busy:
            live.busy = {eid: live.busy.get(eid, now) for eid in busy}

    def _killed(self, now: float, d: Reclaim, changed: dict) -> None:
        live = self._live(d.app_id)
        if live is None:
            return
        busy = live.busy = dict(live.busy)  # replaced: the undo keeps the old one
        for eid in d.executor_ids:
            since = busy.pop(eid, None)
            if since is not None:
                self._keep(d.app_id)
                live.usage.reclaimed((now - since) * live.spec.executor.cores)
                changed[d.app_id] = live.usage

    def _state(self, now: float, d: MarkState, changed: dict) -> None:
        if d.state is not AppState.STARTING and not d.state.terminal:
            return
        live = self._live(d.app_id)
        if live is None:
            return
        spec = live.spec
        self._keep(d.app_id)
        u = changed[d.app_id] = live.usage
        if d.state is AppState.STARTING:
            at = d.at or now
            u.queued_s = max(0.0, at - spec.submitted_at)
            u.driver(at, spec.driver.cores - u.driver_cores, spec.driver.mem_mib - u.driver_mib)
            return
        end = d.at or now
        if u.driver_cores == 0 and u.held_core_s == 0:  # ended (killed) before its launch
            u.queued_s = max(0.0, end - spec.submitted_at)
        u.levels(end, 0, 0, 0)
        u.driver(end, -u.driver_cores, -u.driver_mib)
        total = self._ended.setdefault((spec.queue, spec.user), [0.0] * len(COUNTED))
        counted = u.counted()
        self._apps_end[d.app_id] = ((spec.queue, spec.user), counted)
        with self._scrape:  # never seen by a scrape both live and ended
            for i, v in enumerate(counted):
                total[i] += v
            del self._apps[d.app_id]
        log.info("%s", summary_line(d.app_id, spec, d.state, end, u))


def live_figures(stored: dict | None, now: float, finished_at: float | None) -> dict:
    """An app's figures from its stored column, counted on from the levels stored (they hold
    until the next report) to ``now``, or to its end. An app the meter ended has no level
    left; one a restart found gone (``restore``: its driver did not survive) is counted to
    that end, an upper bound of what it held meanwhile."""
    u = AppUsage.from_json(stored)
    return u.at(now if finished_at is None else max(finished_at, u.since)).figures()


def summary_line(app_id: str, spec: AppSpec, state: AppState, end: float, u: AppUsage) -> str:
    f = u.figures()
    fields = [f"{SUMMARY} appId={app_id}", f"queue={spec.queue}", f"user={spec.user or '-'}",
              f"state={state.value}", f"submitted={spec.submitted_at:.3f}", f"ended={end:.3f}"]
    fields += [f"{k}={v}" for k, v in f.items()]
    return " ".join(fields)
