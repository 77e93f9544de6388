"""Estimated starts: the same engine run forward from the live state on the memory cluster.

``estimate(live)`` takes the scheduler's state now (``Live``: queues, capacity, the apps
launched and the apps queued, each with the work it is assumed to have left) and runs the
simulator on it: time 0 is now, the launched apps are put back on the engine's books as a
restarted scheduler adopts them (``Adopted``) and run on in the memory cluster, the queued
apps are submitted at 0 in their order. The run stops when every queued app it follows has
been launched, at ```Timings.horizon_s`` (apps not launched by then have no estimate), or
after ``Timings.budget_s`` of CPU time (the machine's load stretches the wall time, not the
work). An app's estimated start is when the engine launched
its driver (ACCEPTED -> STARTING, the API's ``started_at``).

What is assumed (docs/design/estimates.md says it for users):
- an app's work is one wave of tasks as wide as the executors it may use (``width``: its
  maxExecutors or spark.ego.slots.max, else ``max(minExecutors, DEFAULT_WIDTH)``), each task
  as long as its run is assumed to last: with all of them it ends in that time, with fewer it
  takes waves more (an elastic app is slower when it gets less);
- a launched app's remaining work is its assumed run length less what it has worked; one that
  ran past it is assumed to end within ``overrun_s`` (``Running.remaining_s``, set by the
  caller, which knows the app's history); it goes on asking for the executors it asks for now
  (its demand), at the pace of those it holds (``Running.stage``);
- the queues change as the config's time-of-day plans will change them (``Live.queue_changes``:
  a plan that raises a queue's ``max_cores`` at 18:00 starts its apps then, not never);
- drivers and executors take the ``Timings`` start latencies; a launched app's driver is
  started again at 0 (one driver start of delay for the apps it holds back);
- behind several clusters (``Live.clusters``) the forward run is the federation's: each
  cluster one worker of its capacity, each launched app on its own cluster, the queued apps
  placed by the tree's placement rule and their queues' own, on the clusters they may use.
  A cluster out of reach offers no room: an app that may use only it gets no estimate.

Counter-offer (``Offer``): an elastic queued app (its cap above its minExecutors, or no cap)
that must wait for its first ``max(minExecutors, 1)`` executors is run again with fewer - as
many as are free now, at least 1 - and offered that if it then starts *much sooner*: at least
``MUCH_SOONER_S`` earlier and in at most half the wait (``much_sooner``). One run per offer, for
the ``offers_max`` apps that start first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ..backends.carry import carry_out
from ..backends.memory.job import Stage
from ..engine import Adopted, Event
from ..engine.clusters import ClusterReachable, OnCluster, PlacementRule
from ..engine.clusters.view import MergedView
from ..engine.host_room import host_need
from ..engine.view import EngineView
from ..model import AppSpec, AppState, Queue, Resources
from .cluster_config import NamedCluster
from .queue_trees import QueueChange
from .record import AppTimes
from .simulator import Simulator, _Cycle, _Submit, launch_for
from .workload import Cluster, SimApp, Workload

DEFAULT_WIDTH = 4  # executors an app without a cap is assumed to use
MUCH_SOONER_S = 60.0  # an offer saves at least this much ...
MUCH_SOONER_SHARE = 0.5  # ... and at least this share of the wait


@dataclass(frozen=True)
class Timings:
    driver_start_s: float = 5.0
    executor_start_s: float = 3.0
    executor_idle_timeout_s: float = 60.0
    cycle_s: float = 2.0  # the forward run's cycle: estimates are on this grid
    horizon_s: float = 12 * 3600.0  # apps not launched this far ahead have no estimate
    budget_s: float = 20.0  # CPU time one forward run may take (its process's: load-proof)


TIMINGS = Timings()


@dataclass(frozen=True)
class Running:
    """An app launched (STARTING or RUNNING): ``remaining_s`` of work left at the pace of the
    ``executors`` it holds, ``demand`` the executors it asks for (its agent's report).
    ``launched_ago_s``/``first_executor_ago_s``: how long ago, as the engine has it."""

    spec: AppSpec
    state: AppState
    priority: int
    executors: int
    remaining_s: float
    launched_ago_s: float
    first_executor_ago_s: float | None
    demand: int = 0
    cluster: str | None = None  # behind several clusters: the one it runs on

    def stage(self) -> Stage:
        """Its work left as one wave as wide as it asks (``demand``, or ``width`` while it
        holds nothing yet): at the pace it has now (``executors``) it ends in ``remaining_s``,
        and it keeps asking for what it asks now - the room admission sees it needs."""
        left = max(self.remaining_s, 0.1)
        if self.executors == 0:
            return Stage(width(self.spec) * self.spec.executor.cores, left)
        wide = max(self.demand, self.executors)
        return Stage(wide * self.spec.executor.cores, left * self.executors / wide)


@dataclass(frozen=True)
class Queued:
    """An app waiting (ACCEPTED): ``run_s`` is how long it is assumed to run once launched."""

    spec: AppSpec
    priority: int
    run_s: float


@dataclass(frozen=True)
class LiveCluster:
    """One of several clusters (``Live.clusters``) as it is now; ``weight``: the ``weighted``
    placement rule's."""

    name: str
    capacity: Resources
    driver_slots: int | None  # None: client-mode drivers unbounded by slots
    weight: float = 1.0
    reachable: bool = True


@dataclass(frozen=True)
class Live:
    root: Queue
    capacity: Resources  # behind several clusters: theirs summed
    driver_slots: int
    running: tuple[Running, ...]
    queued: tuple[Queued, ...]  # the ones to estimate, in any order
    timings: Timings = TIMINGS
    clusters: tuple[LiveCluster, ...] = ()  # several clusters, in the listed order
    placement: str = PlacementRule.SPILL.value  # theirs (``engine.clusters.order``)
    # how the config's time-of-day plans will change the queues from now (``queue_trees``)
    queue_changes: tuple[QueueChange, ...] = ()


@dataclass(frozen=True)
class Offer:
    executors: int  # start with this many first executors (minExecutors) ...
    start_in_s: float  # ... this long from now ...
    instead_of: int  # ... instead of max(minExecutors, 1)


@dataclass(frozen=True)
class Estimate:
    start_in_s: float | None  # None: not launched within the horizon
    offer: Offer | None = None


def width(spec: AppSpec) -> int:
    """Executors the app is assumed to use (module doc)."""
    cap = spec.executor_cap
    return max(cap, 1) if cap is not None else max(spec.min_executors, DEFAULT_WIDTH)


def floor(spec: AppSpec) -> int:
    return max(spec.min_executors, 1)


def elastic(spec: AppSpec) -> bool:
    cap = spec.executor_cap
    return cap is None or cap > spec.min_executors


def much_sooner(start_in_s: float, offer_in_s: float) -> bool:
    saved = start_in_s - offer_in_s
    return saved >= MUCH_SOONER_S and saved >= MUCH_SOONER_SHARE * start_in_s


class _Forward(Simulator):
    """The simulator started from the live state; stops once every queued app is launched."""

    def __init__(self, live: Live, queued: tuple[Queued, ...]):
        t = live.timings
        cluster = Cluster(live.capacity, live.driver_slots, t.driver_start_s, t.executor_start_s,
                          t.executor_idle_timeout_s, t.cycle_s, t.horizon_s)
        apps = [SimApp(spec=replace(r.spec, priority=r.priority), startup_s=0.0,
                       stages=(r.stage(),), updates=())
                for r in live.running]
        apps += [SimApp(spec=replace(q.spec, priority=q.priority), startup_s=0.0,
                        stages=(Stage(width(q.spec) * q.spec.executor.cores,
                                      max(q.run_s, 0.1)),),
                        updates=())
                 for q in sorted(queued, key=lambda q: q.spec.seq)]
        named = tuple(NamedCluster(c.name, replace(cluster, capacity=c.capacity,
                                                   driver_slots=c.driver_slots), c.weight)
                      for c in live.clusters)
        super().__init__(Workload(cluster, live.root, tuple(apps), named,
                                  PlacementRule(live.placement),
                                  queue_changes=live.queue_changes))
        self.live = live
        self.waiting = {q.spec.app_id for q in queued}
        self._deadline = time.process_time() + t.budget_s
        self.first_look: EngineView | None = None  # the engine after it took the submissions

    def forward(self) -> dict[str, float | None]:
        # The launched apps are up at 0 with what they held (their drivers and executors take
        # no start latency then); the queued apps are submitted after the first cycle, which
        # puts the launched ones back on the books with their demand.
        self._latencies = (self.cluster.driver_start_s, self.cluster.executor_start_s)
        for c in self.clusters.values():
            c.driver_start_s = c.executor_start_s = 0.0
        several = bool(self.live.clusters)
        # Several: each cluster's capacity before its apps (the engines have none yet), and
        # which are out of reach (the federation launches nothing there).
        adopted: list[Event] = self.backend.cluster_reports() if several else []
        adopted += [ClusterReachable(c.name, False) for c in self.live.clusters
                    if not c.reachable]
        for r in self.live.running:
            app = self.apps[r.spec.app_id]
            launch = launch_for(app, self._sorts[app.spec.queue])
            where = (r.cluster or self.live.clusters[0].name) if several else ""
            (self.backend.backends[where] if several else self.backend).launch(launch)
            ev = Adopted(app.spec, r.state, r.priority, launched_at=-r.launched_ago_s,
                         first_executor_at=(None if r.first_executor_ago_s is None
                                            else -r.first_executor_ago_s))
            adopted.append(OnCluster(where, ev) if several else ev)
            self.rec.apps[app.name].admitted = -r.launched_ago_s
            self._set_state(app.name, r.state)
        # Stepped whole, before the first cycle: the books a restarted scheduler loads, not a
        # burst of submissions to slice (the cluster reports on every launched app at once).
        decisions = self.sched.step(0.0, adopted)
        carry_out(decisions, self.backend, self._launch_for)
        for name in self.waiting:
            self._push(0.0, 1, _Submit(name))
        self._push_queue_changes()
        self.heap.push(0.0, 0, _Cycle(0))
        self.run_heap()
        return {name: self.rec.apps[name].admitted for name in self.waiting}

    def _cycle(self, now: float, n: int) -> bool:
        over = super()._cycle(now, n)
        if n == 0:
            for c in self.clusters.values():
                c.driver_start_s, c.executor_start_s = self._latencies
        elif n == 1:
            self.first_look = (MergedView().take(self.sched) if self.live.clusters
                               else self.sched.view())
        return over

    def run_heap(self) -> None:
        while self.heap:
            now, _, ev = self.heap.pop()
            self._clock = now
            if isinstance(ev, _Cycle):
                if self._cycle(now, ev.n) or self._over():
                    return
                continue
            self._facts -= 1
            self._handle(now, ev)

    def _over(self) -> bool:
        times: dict[str, AppTimes] = self.rec.apps
        launched = all(times[n].admitted is not None for n in self.waiting)
        return launched or time.process_time() > self._deadline


def _run(live: Live, queued: tuple[Queued, ...]) -> dict[str, float | None]:
    return _Forward(live, queued).forward()


def free_executors(live: Live, executor: Resources) -> int:
    """Executors of this size the cluster has free now (nothing counted twice: held
    executors and in-cluster drivers of the launched apps are taken off the capacity)."""
    used_cores = used_mib = 0
    for r in live.running:
        used_cores += r.executors * r.spec.executor.cores
        used_mib += r.executors * r.spec.executor.mem_mib
        if r.spec.driver_in_cluster:
            used_cores += r.spec.driver.cores
            used_mib += r.spec.driver.mem_mib
    cores = live.capacity.cores - used_cores
    mib = live.capacity.mem_mib - used_mib
    return max(0, min(cores // max(executor.cores, 1), mib // max(executor.mem_mib, 1)))


def _offer(live: Live, q: Queued, was: float | None) -> Offer | None:
    """The counter-offer for ``q`` (module doc): one run with fewer first executors."""
    k = max(1, min(floor(q.spec) - 1, free_executors(live, q.spec.executor)))
    fewer = replace(q, spec=replace(q.spec, min_executors=k))
    others = tuple(o for o in live.queued if o.spec.app_id != q.spec.app_id)
    at = _run(live, (*others, fewer))[q.spec.app_id]
    if at is not None and much_sooner(live.timings.horizon_s if was is None else was, at):
        return Offer(k, at, floor(q.spec))
    return None


def _offered(q: Queued, start: float | None) -> bool:
    """Whether ``q`` may get a counter-offer: elastic, waiting for more than one first
    executor, and not starting within ``MUCH_SOONER_S`` anyway."""
    return (elastic(q.spec) and floor(q.spec) > 1
            and (start is None or start >= MUCH_SOONER_S))


def estimate(live: Live, offers_max: int = 8) -> dict[str, Estimate]:
    """Each queued app's estimated start (seconds from now) and counter-offer (module doc)."""
    if not live.queued:
        return {}
    starts = _run(live, live.queued)
    out = {name: Estimate(at) for name, at in starts.items()}
    candidates = sorted((q for q in live.queued if _offered(q, starts[q.spec.app_id])),
                        key=lambda q: (starts[q.spec.app_id] is None,
                                       starts[q.spec.app_id] or 0.0))
    for q in candidates[:offers_max]:
        offer = _offer(live, q, starts[q.spec.app_id])
        if offer is not None:
            out[q.spec.app_id] = Estimate(starts[q.spec.app_id], offer)
    return out


@dataclass(frozen=True)
class DryRun:
    """What a submission would meet (``dry_run``): its place and why it would wait, as the
    engine has them after taking it (position None, reason "": it would start at once);
    behind several clusters, the one the forward run starts it on (the apps queued ahead of it
    counted; None: not within the horizon, or one cluster)."""

    estimate: Estimate
    position: int | None
    reason: str
    cluster: str | None = None


def dry_run(live: Live, app: Queued) -> DryRun:
    """``app`` submitted now, behind everything queued (``live.queued`` must not hold it)."""
    with_it = replace(live, queued=(*live.queued, app))
    sim = _Forward(with_it, with_it.queued)
    start = sim.forward()[app.spec.app_id]
    look = sim.first_look
    position, reason = None, ""
    if look is not None and app.spec.app_id in look.pending.get(app.spec.queue, ()):
        position = look.position(app.spec.app_id)
        wait = look.wait_of(app.spec.app_id, position)
        reason = wait.text if wait is not None else ""
    cluster = sim.rec.apps[app.spec.app_id].cluster
    offer = _offer(with_it, app, start) if _offered(app, start) else None
    return DryRun(Estimate(start, offer), position, reason, cluster)


def never_fits(spec: AppSpec, capacity: Resources, driver_slots: int | None,
               host_room: Resources | None = None) -> str | None:
    """Why the app could never start on a cluster of ``capacity`` (None: it could), naming
    the number that does not fit; a driver on the scheduler's host, in its ``host_room``."""
    ex, dr = spec.executor, spec.driver
    whole = f"the cluster ({capacity.cores} cores/{capacity.mem_mib} MiB)"
    if not ex.fits_in(capacity):
        return f"an executor of {ex.cores} cores/{ex.mem_mib} MiB does not fit in {whole}"
    if spec.driver_in_cluster and not dr.fits_in(capacity):
        return f"a driver of {dr.cores} cores/{dr.mem_mib} MiB does not fit in {whole}"
    if spec.driver_on_host and driver_slots == 0:
        return "a client-mode driver needs a driver slot; the scheduler has none"
    if spec.driver_on_host and host_room is not None and (
            (on_host := host_need(spec)).mem_mib > host_room.mem_mib):
        return (f"a client-mode driver of {on_host.mem_mib} MiB (spark.driver.memory and its"
                f" overhead) does not fit in the {host_room.mem_mib} MiB the scheduler's host"
                f" holds for drivers")
    first = max(spec.min_executors, 1)
    need = Resources(first * ex.cores + (dr.cores if spec.driver_in_cluster else 0),
                     first * ex.mem_mib + (dr.mem_mib if spec.driver_in_cluster else 0))
    if not need.fits_in(capacity):
        return (f"the driver and {first} first executor(s) need {need.cores} cores/"
                f"{need.mem_mib} MiB; {whole} has less")
    return None
