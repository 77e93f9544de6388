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
    busy: dict[str, float] = field(default_factory=dict)  # busy executor id -> reported at


class UsageMeter:
    """``spec_of(app_id)``: the app's spec (sizes, queue, user), None for an unknown app.
    ``totals``: (queue, user) -> the ``COUNTED`` figures added up over every app counted since
    this meter started (what the Prometheus counters show at a scrape: a plain addition per
    change here, no metric call in the cycle)."""

    def __init__(self, spec_of: Callable[[str], AppSpec | None]):
        self._spec_of = spec_of
        self._apps: dict[str, _Live] = {}
        self.totals: dict[tuple[str, str], list[float]] = {}

    def restore(self, app_id: str, stored: dict | None) -> None:
        """A live app read back from the store at a restart or a takeover."""
        self._apps[app_id] = _Live(AppUsage.from_json(stored))

    def figures(self, app_id: str, now: float) -> dict | None:
        live = self._apps.get(app_id)
        return None if live is None else _at(live.usage, now).figures()

    def step(self, now: float, events: Iterable[Event],
             decisions: Sequence[Decision]) -> dict[str, dict]:
        """Count what the step's facts say; app id -> the new ``usage`` column value."""
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

    def _live(self, app_id: str, changed: dict[str, AppUsage]) -> tuple[_Live, AppSpec] | None:
        spec = self._spec_of(app_id)
        if spec is None:
            return None
        live = self._apps.get(app_id)
        if live is None:
            live = self._apps[app_id] = _Live(AppUsage())
        return live, spec

    def _executors(self, now: float, ev: ExecutorsChanged, changed: dict) -> None:
        got = self._live(ev.app_id, changed)
        if got is None:
            return
        live, spec = got
        cores, mib = spec.executor.cores, spec.executor.mem_mib
        busy = [e.executor_id for e in ev.executors if not e.idle]
        held, busy_cores = len(ev.executors) * cores, len(busy) * cores
        u = live.usage
        # The same levels (another executor, the same count): nothing to count or write.
        if (held, busy_cores) != (u.held_cores, u.busy_cores):
            self._moved(u, spec, lambda u: u.levels(now, held, len(ev.executors) * mib,
                                                    busy_cores))
            changed[ev.app_id] = u
        live.busy = {eid: live.busy.get(eid, now) for eid in busy}

    def _killed(self, now: float, d: Reclaim, changed: dict) -> None:
        got = self._live(d.app_id, changed)
        if got is None:
            return
        live, spec = got
        for eid in d.executor_ids:
            since = live.busy.pop(eid, None)
            if since is not None:
                self._moved(live.usage, spec,
                            lambda u, s=since: u.reclaimed((now - s) * spec.executor.cores))
                changed[d.app_id] = live.usage

    def _state(self, now: float, d: MarkState, changed: dict) -> None:
        if d.state is not AppState.STARTING and not d.state.terminal:
            return
        got = self._live(d.app_id, changed)
        if got is None:
            return
        live, spec = got
        u = changed[d.app_id] = live.usage
        if d.state is AppState.STARTING:
            at = d.at or now
            u.queued_s = max(0.0, at - spec.submitted_at)
            self._moved(u, spec, lambda u: u.driver(at, spec.driver.cores - u.driver_cores,
                                                     spec.driver.mem_mib - u.driver_mib))
            return
        end = d.at or now
        if u.driver_cores == 0 and u.held_core_s == 0:  # ended (killed) before its launch
            u.queued_s = max(0.0, end - spec.submitted_at)
        self._moved(u, spec, lambda u: (u.levels(end, 0, 0, 0),
                                        u.driver(end, -u.driver_cores, -u.driver_mib)))
        del self._apps[d.app_id]
        log.info("%s", summary_line(d.app_id, spec, d.state, end, u))

    def _moved(self, u: AppUsage, spec: AppSpec, change: Callable[[AppUsage], object]) -> None:
        """Apply ``change`` and add the figures' growth to the totals."""
        before = u.counted()
        change(u)
        total = self.totals.get((spec.queue, spec.user))
        if total is None:
            total = self.totals[(spec.queue, spec.user)] = [0.0] * len(COUNTED)
        for i, (was, now) in enumerate(zip(before, u.counted(), strict=True)):
            total[i] += now - was


def _at(u: AppUsage, now: float) -> AppUsage:
    """A copy counted up to ``now`` (the live figures; the meter's own stays as committed)."""
    return AppUsage.from_json(u.to_json()).at(now)


def live_figures(stored: dict | None, now: float, ended: bool) -> dict:
    """An app's figures from its stored column: counted on to ``now`` from the levels stored
    while it lives (they hold until the next report), as stored once it ended."""
    u = AppUsage.from_json(stored)
    return (u if ended else u.at(now)).figures()


def summary_line(app_id: str, spec: AppSpec, state: AppState, end: float, u: AppUsage) -> str:
    f = u.figures()
    fields = [f"{SUMMARY} appId={app_id}", f"queue={spec.queue}", f"user={spec.user or '-'}",
              f"state={state.value}", f"submitted={spec.submitted_at:.3f}", f"ended={end:.3f}"]
    fields += [f"{k}={v}" for k, v in f.items()]
    return " ".join(fields)
