"""Counting what each app uses, from the facts the cycle steps (docs/operator/usage.md).

The cycle hands the meter the events the engine took and the decisions it gave; the meter
changes only the apps they name (no scan of the books), on a thread of its own
(``MeterThread``), so counting costs the cycle a queue put. Per app it keeps a
``sessionsched.model.usage.AppUsage``:

- an executor list (``ExecutorsChanged``, from the agent or the cluster) sets the levels: held
  cores and memory = the executors times the app's executor size; busy cores = the executors
  the report calls busy (``idle: false``: running at least one task) times their cores. The
  levels hold until the next report; an executor partly busy counts as busy whole. A report
  its agent timed (``observed_at``) changes them when the driver saw each change
  (``timing``: registrations, removals, the look's span); one not timed (an older agent, the
  cluster's view) when the scheduler takes it, exact to one report (a heartbeat, 1 s). An
  executor the agent killed is left out at once and counted on to its driver's removal when
  a later report gives it (``_left_late``).
- ``STARTING`` (the launch) puts the driver's cores and memory on, an end takes everything off.
- an executor killed by a reclaim counts (``reclaimed_executors``) when a report finds it
  gone at or after its kill, busy at the last report that listed it; as lost work
  (``reclaimed_core_s``), its cores from the first of the unbroken run of reports that called
  it busy (timed: when its flag changed) to when it was gone (its driver's removal, else the
  look that found it gone): its task ran until the kill took effect. The kill is a
  ``Reclaim`` of mode ``kill`` (also the scheduler's kill at a decommission's deadline), or a
  decommission's deadline passing (the agent kills then on its own clock, before the
  scheduler's order could). Not the scheduler's view at its order but the agent's at the
  kill: the agent carries an order out right after a look whose report goes first, so the
  last report that listed the executor says whether the kill took a task (one that took a
  task after the scheduler's look and before the kill is lost; one whose task ended
  meanwhile is not). One gone before its kill left on its own, its task done. An app that
  ends first counts a killed busy executor's work lost to the end.
- ``queued_s``: from the submission to the launch (``STARTING``), or to the end of an app
  killed while it waited.

The server counts beside the cycle (``thread.MeterThread``): the cycle hands over each committed
step's facts, and the thread writes the changed figures (the app's ``usage`` column) a moment
later, so a kill -9 loses at most the last cycles' changes of level; ``restore`` reads the
columns back and a restarted server counts on from the levels stored (the cluster kept the
executors meanwhile).
The same growth is added up per hour, queue and user (``take_hours``), written with the
columns in one transaction (the store's ``usage_hours`` rollup, ``store/usage_hours.py``).
Custom resources (GPUs) count the same way beside the cores, per name (``AppUsage.res_s``):
held = the executors × their amount, busy = the busy executors × their amount (the agent
tells busy per executor, not per task), the driver's from its launch to its end; their hours
go to the rollup under a key with the resource's name (``ResHourKey``).
When an app ends, one line ``SESSIONSCHED_APP_SUMMARY`` goes to the ``sessionsched.usage``
log with its figures (YuniKorn's ``YK_APP_SUMMARY``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sessionsched.engine.events import (
    Decision,
    DemandChanged,
    Event,
    ExecutorsChanged,
    MarkState,
    Reclaim,
)
from sessionsched.model import AppSpec, AppState, ReclaimMode, Resources
from sessionsched.model.usage import (
    APPS,
    COUNTED,
    HOURLY,
    MIB_PER_GIB,
    QUEUED,
    RECLAIMED,
    RECLAIMED_EXECUTORS,
    RES_HOURLY,
    AppUsage,
    hour_of,
    hourly_growth,
    hourly_resource_growth,
    hours_of,
)

from .figures import never_down, resource_counted, summary_line
from .shapes import plain_levels, profile_of, shaped_levels
from .timing import busy_since, clamp, gone_at, timed_steps

HELD, BUSY, HELD_GIB = (HOURLY.index(k) for k in ("held_core_s", "busy_core_s", "held_gib_s"))
HourKey = tuple[float, str, str]  # (hour start, queue, user): a row of ``usage_hours``
# (hour start, queue, user, resource): a row of ``usage_hour_resources`` (``RES_HOURLY``); the
# meter hands both kinds of rows over in one map, told apart by the key's length.
ResHourKey = tuple[float, str, str, str]
R_HELD, R_BUSY, R_RECLAIMED = (RES_HOURLY.index(k) for k in ("held_s", "busy_s", "reclaimed_s"))
# (queue, user, resource) -> the ``RES_COUNTED`` figures (Prometheus counters' kinds).
RES_COUNTED = ("held_s", "busy_s", "idle_s", "reclaimed_s", "driver_s")

log = logging.getLogger("sessionsched.usage")



@dataclass
class _Live:
    usage: AppUsage
    spec: AppSpec
    busy: dict[str, float] = field(default_factory=dict)  # busy executor id -> reported at
    kills: dict[str, float] = field(default_factory=dict)  # ordered killed -> at (deadline)
    # The last list's executors (id -> busy) and when it was seen; None: not known (restored).
    executors: dict[str, bool] | None = field(default_factory=dict)
    seen_at: float = 0.0
    # Stage-level profiles (``shapes``): executor shapes by profile id as its agent reported
    # them, and the profile of each executor not of the app's own (id -> profile).
    shapes: dict[int, Resources] = field(default_factory=dict)
    profile: dict[str, int] = field(default_factory=dict)
    # Gone at a look with no removal time (killed by the agent, still in its driver): counted
    # to -> (busy then, its work lost). A later report says when its driver removed it.
    left: dict[str, tuple[float, bool, bool]] = field(default_factory=dict)


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
        # (queue, user, resource) -> RES_COUNTED sums, and the last reported
        self._ended_res: dict[tuple[str, str, str], list[float]] = {}
        self._reported_res: dict[tuple[str, str, str], list[float]] = {}
        self._scrape = threading.Lock()
        self._hours: dict[HourKey, list[float]] = {}  # counted, not yet taken (``take_hours``)
        self._closed: set[str] = set()  # ended, not yet taken (``take_closed``)

    def restore(self, app_id: str, stored: dict | None) -> None:
        """A live app read back from the store at a restart or a takeover."""
        spec = self._spec_of(app_id)
        if spec is not None:
            self._apps[app_id] = _Live(AppUsage.from_json(stored), spec, executors=None)

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
            return never_down(sums, self._reported)

    def resource_totals(self) -> dict[tuple[str, str, str], list[float]]:
        """(queue, user, resource) -> the ``RES_COUNTED`` figures of every app counted since
        the meter started, as ``totals`` (empty with no custom resource)."""
        with self._scrape:
            sums = {key: list(values) for key, values in list(self._ended_res.items())}
            for live in list(self._apps.values()):
                if live.usage.res_s:
                    for name, row in resource_counted(live.usage).items():
                        key = (live.spec.queue, live.spec.user, name)
                        total = sums.setdefault(key, [0.0] * len(RES_COUNTED))
                        for i, v in enumerate(row):
                            total[i] += v
            return never_down(sums, self._reported_res)

    def step(self, now: float, events: Iterable[Event],
             decisions: Sequence[Decision]) -> dict[str, dict]:
        """Count what a committed step's facts say; app id -> the new ``usage`` column."""
        changed: dict[str, AppUsage] = {}
        for ev in events:
            if isinstance(ev, ExecutorsChanged):
                self._executors(now, ev, changed)
            elif isinstance(ev, DemandChanged) and getattr(ev, "profiles", None):
                if (live := self._live(ev.app_id)) is not None:  # the shapes, for ``shapes``
                    live.shapes = {p.profile_id: p.executor for p in ev.profiles}
        for d in decisions:
            if isinstance(d, Reclaim) and (d.mode is ReclaimMode.KILL or (
                    d.mode is ReclaimMode.DECOMMISSION and d.deadline)):
                if (live := self._live(d.app_id)) is not None:
                    at = now if d.mode is ReclaimMode.KILL else d.deadline
                    for eid in d.executor_ids:
                        live.kills[eid] = min(live.kills.get(eid, at), at)
            elif isinstance(d, MarkState):
                self._state(now, d, changed)
        return {app_id: u.to_json() for app_id, u in changed.items()}

    def take_hours(self) -> dict[HourKey | ResHourKey, list[float]]:
        """What the steps since the last call added per hour, queue and user (``HOURLY``), and
        per custom resource (``ResHourKey``: ``RES_HOURLY``): to be added to the store's
        rollup with the columns ``step`` returned."""
        hours, self._hours = self._hours, {}
        return hours

    def take_closed(self) -> set[str]:
        """The apps whose end the steps since the last call counted: their columns are the
        last ones (written with ``usage_open`` cleared)."""
        closed, self._closed = self._closed, set()
        return closed

    def _add(self, hour: float, spec: AppSpec, i: int, value: float) -> None:
        row = self._hours.setdefault((hour, spec.queue, spec.user), [0.0] * len(HOURLY))
        row[i] += value

    def _add_res(self, hour: float, spec: AppSpec, name: str, i: int, value: float) -> None:
        row = self._hours.setdefault((hour, spec.queue, spec.user, name),
                                     [0.0] * len(RES_HOURLY))
        row[i] += value

    def _grow(self, live: _Live, t: float) -> None:
        """Count the levels up to ``t``, the hours' rollup too: before any change of level."""
        for hour, grown in hourly_growth(live.usage, t):
            row = self._hours.setdefault((hour, live.spec.queue, live.spec.user),
                                         [0.0] * len(HOURLY))
            for i, v in enumerate(grown):
                row[i] += v
        for hour, name, grown in hourly_resource_growth(live.usage, t):
            row = self._hours.setdefault((hour, live.spec.queue, live.spec.user, name),
                                         [0.0] * len(RES_HOURLY))
            for i, v in enumerate(grown):
                row[i] += v
        live.usage.at(t)

    def _queued(self, live: _Live, until: float) -> None:
        """Queued from the submission until ``until``: ``queued_s`` set, its hours added."""
        u, submitted = live.usage, live.spec.submitted_at
        queued = max(0.0, until - submitted)
        for hour, dt in hours_of(submitted + u.queued_s, submitted + queued):
            self._add(hour, live.spec, QUEUED, dt)
        u.queued_s = max(u.queued_s, queued)

    def _live(self, app_id: str) -> _Live | None:
        live = self._apps.get(app_id)
        if live is None:
            spec = self._spec_of(app_id)
            if spec is None:
                return None
            live = self._apps[app_id] = _Live(AppUsage(), spec)
        return live

    def _executors(self, now: float, ev: ExecutorsChanged, changed: dict) -> None:
        live = self._live(ev.app_id)
        if live is None:
            return
        busy = [e.executor_id for e in ev.executors if not e.idle]
        u = live.usage
        shaped = bool(live.profile) or any(profile_of(e) for e in ev.executors)
        timed = None
        if ev.observed_at is None or live.executors is None:
            # Not timed (an older agent, the cluster's view; or the first list after a
            # restart, from levels stored without their executors): as the scheduler takes it.
            look = now
            steps = [(now, len(ev.executors), len(busy))]
            removed: dict[str, float] = {}
            busy_from: dict[str, float] = {}  # since the look
        else:
            lo = max(u.since, live.seen_at)
            removed = dict(ev.removed)
            timed = (ev.observed_at, removed, lo, now, ev.changed_after)
            steps = [] if shaped else timed_steps(live.executors, ev.executors, *timed)
            look = clamp(ev.observed_at, min(lo, now), now)
            busy_from = busy_since(live.executors, ev.executors, ev.observed_at, lo, now,
                                   ev.changed_after)
        levels = (shaped_levels(live.executors or {}, live.profile, ev.executors,
                                lambda p: self._shape(live, p), timed, now) if shaped
                  else plain_levels(steps, live.spec.executor))
        for at, held, mib, busy_cores, held_res, busy_res in levels:
            # The same levels (another executor, the same count): nothing to count or write.
            if (held != u.held_cores or busy_cores != u.busy_cores or held_res != u.held_res
                    or busy_res != u.busy_res):
                self._grow(live, at)
                u.levels(at, held, mib, busy_cores, held_res, busy_res)
                changed[ev.app_id] = u
        lo = min(live.seen_at, look)
        live.seen_at = look
        before, live.executors = live.executors, {e.executor_id: not e.idle for e in ev.executors}
        if ev.observed_at is not None and before is not None:
            for eid in before.keys() - live.executors.keys() - removed.keys():
                lost = eid in live.busy and live.kills.get(eid, look + 1.0) <= look
                live.left[eid] = (look, before[eid], lost)
            for eid in removed.keys() & live.left.keys():
                self._left_late(live, eid, min(removed[eid], now), changed)
        if live.kills:
            # Killed busy (module doc): its task ran on until the kill took effect, lost up to
            # when it left. Gone before its kill: it left on its own, its task done.
            for eid in [eid for eid in live.kills if eid not in live.executors]:
                kill = live.kills.pop(eid)
                since = live.busy.pop(eid, None)
                gone = gone_at(eid, removed, look, lo, look)
                if since is not None and gone >= kill:
                    self._lose(live, gone, since, changed,
                               size=self._shape(live, live.profile.get(eid, 0)))
        if busy or live.busy:
            live.busy = {eid: live.busy.get(eid, busy_from.get(eid, look)) for eid in busy}
        if shaped:  # kept while a gone executor may still be counted (``left``, ``kills``)
            live.profile = {eid: p for eid, p in {**live.profile, **{
                e.executor_id: profile_of(e) for e in ev.executors}}.items()
                if p and (eid in live.executors or eid in live.left or eid in live.kills)}

    def _shape(self, live: _Live, profile: int) -> Resources:
        """An executor's shape by its profile: the app's own for 0 or one not reported."""
        return live.spec.executor if not profile else live.shapes.get(profile,
                                                                       live.spec.executor)

    def _left_late(self, live: _Live, eid: str, at: float, changed: dict) -> None:
        """An executor counted gone at a look (its agent had killed it) was removed by its
        driver at ``at``: it held its core until then, and ran its task if it was busy (work
        lost, if it was killed busy)."""
        counted_to, busy, lost = live.left.pop(eid)
        dt = max(0.0, at - counted_to)
        if dt == 0.0:
            return
        size, u, hour = self._shape(live, live.profile.get(eid, 0)), live.usage, hour_of(at)
        u.held_core_s += size.cores * dt
        u.held_mib_s += size.mem_mib * dt
        self._add(hour, live.spec, HELD, size.cores * dt)
        self._add(hour, live.spec, HELD_GIB, size.mem_mib * dt / MIB_PER_GIB)
        if busy:
            u.busy_core_s += size.cores * dt
            self._add(hour, live.spec, BUSY, size.cores * dt)
        for name, amount in size.custom:
            row = u._res(name)
            row[R_HELD] += amount * dt
            self._add_res(hour, live.spec, name, R_HELD, amount * dt)
            if busy:
                row[R_BUSY] += amount * dt
                self._add_res(hour, live.spec, name, R_BUSY, amount * dt)
        if lost:
            self._lose(live, at, counted_to, changed, executors=0, size=size)
        changed[live.spec.app_id] = u

    def _lose(self, live: _Live, now: float, since: float, changed: dict,
              executors: int = 1, size: Resources | None = None) -> None:
        """A busy executor killed by a reclaim (``executors`` 1; 0: more of one already
        counted): its cores since ``since`` were work lost."""
        size, dt = size or live.spec.executor, max(0.0, now - since)
        lost = dt * size.cores
        lost_res = {name: dt * amount for name, amount in size.custom}
        live.usage.reclaimed(lost, executors, lost_res)
        self._add(hour_of(now), live.spec, RECLAIMED, lost)
        for name, v in lost_res.items():
            self._add_res(hour_of(now), live.spec, name, R_RECLAIMED, v)
        self._add(hour_of(now), live.spec, RECLAIMED_EXECUTORS, executors)
        changed[live.spec.app_id] = live.usage

    def _state(self, now: float, d: MarkState, changed: dict) -> None:
        if d.state is not AppState.STARTING and not d.state.terminal:
            return
        live = self._live(d.app_id)
        if live is None:
            return
        spec = live.spec
        u = changed[d.app_id] = live.usage
        if d.state is AppState.STARTING:
            at = d.at or now
            self._queued(live, at)
            self._grow(live, at)
            u.driver(at, spec.driver.cores - u.driver_cores, spec.driver.mem_mib - u.driver_mib,
                     [(k, v - u.driver_res.get(k, 0)) for k, v in spec.driver.custom])
            return
        self._end(live, d.app_id, d.state, d.at or now)

    def ended_unseen(self, app_id: str, stored: dict | None, state: AppState,
                     end: float) -> dict | None:
        """An app that ended while no scheduler counted it (a restart found its driver gone):
        counted from the levels ``stored`` to ``end`` (an upper bound of what it held
        meanwhile), levels off; its new usage column (None for an unknown app). Its hours
        go to ``take_hours``."""
        self.restore(app_id, stored)
        live = self._apps.get(app_id)
        if live is None:
            return None
        self._end(live, app_id, state, end)
        return live.usage.to_json()

    def _end(self, live: _Live, app_id: str, state: AppState, end: float) -> None:
        spec, u = live.spec, live.usage
        if u.driver_cores == 0 and u.held_core_s == 0:  # ended (killed) before its launch
            self._queued(live, end)
        for eid, kill in live.kills.items():  # killed busy, not yet seen gone: gone by the end
            if kill <= end and (since := live.busy.get(eid)) is not None:
                self._lose(live, end, since, {}, size=self._shape(live, live.profile.get(eid, 0)))
        self._grow(live, end)
        self._add(hour_of(spec.submitted_at), spec, APPS, 1)
        u.levels(end, 0, 0, 0)
        u.driver(end, -u.driver_cores, -u.driver_mib, [(k, -v) for k, v in u.driver_res.items()])
        total = self._ended.setdefault((spec.queue, spec.user), [0.0] * len(COUNTED))
        counted = u.counted()
        with self._scrape:  # never seen by a scrape both live and ended
            for i, v in enumerate(counted):
                total[i] += v
            for name, row in resource_counted(u).items():
                ended = self._ended_res.setdefault((spec.queue, spec.user, name),
                                                   [0.0] * len(RES_COUNTED))
                for i, v in enumerate(row):
                    ended[i] += v
            del self._apps[app_id]
        self._closed.add(app_id)
        log.info("%s", summary_line(app_id, spec, state, end, u))
