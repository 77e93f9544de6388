"""A federation's step, planned before anything changes: which events go to which cluster's
engine, and what the federation's own books become (``federation``).

The plan is made from the books as they stand and the batch alone, so a batch that an engine
would refuse leaves everything as it was. In each engine's batch, in order:

  1. the copies it gives up: queued apps placed elsewhere or ended (at the step before), and
     those that leave a cluster lost now for one that answers: ``KillRequested`` and
     ``Forget``, so nothing after them can launch them there;
  2. the copies it takes back: the queued apps that may use a cluster back now;
  3. the batch's own events, routed by app (``_where``); an app whose launch started nothing
     (``LaunchUnavailable``) is killed and forgotten on its cluster, and ``Submitted`` again
     to the queues it moves to (``_move``);
  4. the endings of its running apps once its ``lost_timeout_s`` ran out.

Each engine takes an app's spec as its cluster runs it (``on_cluster``): on a cluster that runs
every driver itself, a client-mode driver is a pod there, not a process on this host.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ...model import AppSpec, AppState
from ..events import (
    Adopted,
    CapacityChanged,
    DriverExited,
    DriverStarted,
    Event,
    Forget,
    KillRequested,
    PriorityChanged,
    QueuesChanged,
    Submitted,
    Tick,
)
from ..validate import EventError
from .events import ClusterReachable, LaunchUnavailable, OnCluster
from .trees import tree_for

if TYPE_CHECKING:
    from .federation import Federation


@dataclass
class Plan:
    """What a step will do: each engine's batch (and, for each event in it, the index of the
    batch event it came from: None for the federation's own), and the federation's books after
    the batch (only what changes)."""

    batches: dict[str, list[Event]] = field(default_factory=dict)
    origin: dict[str, list[int | None]] = field(default_factory=dict)
    reachable: dict[str, bool] = field(default_factory=dict)
    copies: dict[str, list[str]] = field(default_factory=dict)  # queued app -> its copies
    specs: dict[str, AppSpec] = field(default_factory=dict)  # queued app -> spec as it stands
    adopted: dict[str, str] = field(default_factory=dict)  # app -> the cluster it runs on
    forgotten: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # apps ended for their lost cluster
    moved: dict[str, tuple[str, str]] = field(default_factory=dict)  # app -> (left, why)
    root: object | None = None  # a new queue tree

    def to(self, name: str, ev: Event, i: int | None) -> None:
        self.batches.setdefault(name, []).append(ev)
        self.origin.setdefault(name, []).append(i)


def plan_step(fed: Federation, now: float, events: list[Event]) -> Plan:
    plan = Plan(reachable=dict(fed.reachable))
    for i, ev in enumerate(events):  # reachability first: it decides where the rest go
        if isinstance(ev, ClusterReachable | OnCluster) and ev.cluster not in fed.engines:
            raise EventError(f"event {i} ({type(ev).__name__}): unknown cluster "
                             f"{ev.cluster!r} (clusters: {', '.join(fed.names)})", i, ev)
        if isinstance(ev, ClusterReachable):
            plan.reachable[ev.cluster] = ev.reachable
    _move_copies(fed, plan)
    for i, ev in enumerate(events):
        _route(fed, plan, i, ev)
    _end_lost(fed, plan, now)
    return plan


def on_cluster(fed: Federation, name: str, spec: AppSpec) -> AppSpec:
    """``spec`` as cluster ``name``'s engine takes it (``run_by``)."""
    return run_by(spec, fed.clusters[name].drivers_in_cluster)


def run_by(spec: AppSpec, drivers_in_cluster: bool) -> AppSpec:
    """``spec`` on a cluster that runs every driver itself (``drivers_in_cluster``) or not. A
    driver the submission would run on the scheduler's host (client mode, which a standalone
    cluster needs for Python) runs in the cluster on one that runs every driver itself - a pod
    on Kubernetes - and takes that cluster's room there, not the host's."""
    if drivers_in_cluster and spec.driver_on_host:
        return replace(spec, driver_in_cluster=True)
    return spec


def copies_of(fed: Federation, plan: Plan, app_id: str) -> list[str]:
    """The clusters holding a queued app's copy, as the plan leaves them."""
    if app_id in plan.copies:
        return plan.copies[app_id]
    q = fed.queued.get(app_id)
    return q.copies if q is not None else []


def _move_copies(fed: Federation, plan: Plan) -> None:
    for name in fed.names:  # given up at the step before (placed or ended elsewhere)
        for app_id in fed.withdraw[name]:
            plan.to(name, KillRequested(app_id), None)
            plan.to(name, Forget(app_id), None)
    down = [n for n in fed.names if fed.reachable[n] and not plan.reachable[n]]
    back = [n for n in fed.names if not fed.reachable[n] and plan.reachable[n]]
    if not down and not back:
        return
    for app_id, q in fed.queued.items():
        copies = list(q.copies)
        for name in down:  # to the clusters that answer, where it has one
            if name in copies and any(plan.reachable[c] for c in copies if c != name):
                copies.remove(name)
                plan.to(name, KillRequested(app_id), None)
                plan.to(name, Forget(app_id), None)
        eligible = fed.eligible(q.spec)
        for name in back:
            if name in eligible and name not in copies:
                copies.append(name)
                plan.to(name, Submitted(on_cluster(fed, name, q.spec)), None)
        if copies != q.copies:
            plan.copies[app_id] = [n for n in fed.names if n in copies]


def _route(fed: Federation, plan: Plan, i: int, ev: Event) -> None:
    if isinstance(ev, ClusterReachable):
        return
    if isinstance(ev, OnCluster):
        inner = ev.event
        if isinstance(inner, Adopted):
            plan.adopted[inner.spec.app_id] = ev.cluster
            inner = replace(inner, spec=on_cluster(fed, ev.cluster, inner.spec))
        plan.to(ev.cluster, inner, i)
    elif isinstance(ev, CapacityChanged | Adopted):
        if len(fed.names) > 1:
            raise EventError(f"event {i} ({type(ev).__name__}): which cluster? With several, "
                             "it comes wrapped in OnCluster", i, ev)
        if isinstance(ev, Adopted):
            plan.adopted[ev.spec.app_id] = fed.names[0]
            ev = replace(ev, spec=on_cluster(fed, fed.names[0], ev.spec))
        plan.to(fed.names[0], ev, i)
    elif isinstance(ev, Submitted):
        spec = ev.spec
        eligible = fed.eligible(spec)
        if not eligible:
            asked = f"it asked for {', '.join(spec.clusters)}; " if spec.clusters else ""
            raise EventError(f"event {i} (Submitted {spec.app_id}): no cluster it may use: "
                             f"{asked}its queue {spec.queue} may use "
                             f"{', '.join(fed.allowed_by_queue(spec.queue))}", i, ev)
        up = [c for c in eligible if plan.reachable[c]]
        plan.copies[spec.app_id] = up or eligible  # none answers: it waits in all of them
        plan.specs[spec.app_id] = spec
        for name in plan.copies[spec.app_id]:
            plan.to(name, Submitted(on_cluster(fed, name, spec)), i)
    elif isinstance(ev, QueuesChanged):
        plan.root = ev.root
        for name in fed.names:  # each cluster its caps (``trees``)
            plan.to(name, QueuesChanged(tree_for(ev.root, name)), i)
    elif isinstance(ev, Tick):
        for name in fed.names:
            plan.to(name, ev, i)
    elif isinstance(ev, LaunchUnavailable):
        _move(fed, plan, i, ev)
    else:
        app_id = ev.app_id  # type: ignore[attr-defined]
        for name in _where(fed, plan, app_id):
            plan.to(name, ev, i)
        if isinstance(ev, PriorityChanged) and (app_id in plan.specs or app_id in fed.queued):
            spec = plan.specs.get(app_id) or fed.queued[app_id].spec
            plan.specs[app_id] = replace(spec, priority=ev.priority)
        elif isinstance(ev, Forget):
            plan.forgotten.append(app_id)


def _where(fed: Federation, plan: Plan, app_id: str) -> list[str]:
    """The engines an event about one app goes to: its cluster's once placed (or adopted);
    while queued, every copy - a kill must reach a copy before its engine steps, whichever
    steps first - and the home copy's word is the one taken (``federation``)."""
    where = None if app_id in plan.moved else (
        plan.adopted.get(app_id) or fed.owner.get(app_id) or fed.ended_in.get(app_id))
    if where is not None:
        return [where]
    return list(copies_of(fed, plan, app_id)) or [fed.names[0]]  # unknown: that one says so


def movable(fed: Federation, app_id: str) -> tuple[str, list[str]] | None:
    """A placed app whose driver has not started: (its cluster, the others it may use and has
    not been placed on since its launches began failing), in the listed order; else None."""
    name = fed.owner.get(app_id)
    rec = None if name is None else fed.engines[name].apps.get(app_id)
    if rec is None or rec.state is not AppState.STARTING or rec.up_at is not None:
        return None
    tried = fed.tried.get(app_id, set()) | {name}
    return name, [c for c in fed.eligible(rec.spec) if c not in tried]


def _move(fed: Federation, plan: Plan, i: int, ev: LaunchUnavailable) -> None:
    """Off its cluster, into the queues of the others it may use that answer (of those it may
    use, when none answers; of every one, itself included, when it has tried them all). An
    app that started, ended, or was told in this batch to end or move, stays as it is."""
    app_id = ev.app_id
    where = movable(fed, app_id)
    if where is None or app_id in plan.moved or app_id in plan.adopted:
        return
    name, others = where
    if any(isinstance(e, KillRequested | DriverExited | DriverStarted | Forget)
           and e.app_id == app_id for e in plan.batches.get(name, ())):
        return
    rec = fed.engines[name].apps[app_id]
    priority = next((e.priority for e in reversed(plan.batches.get(name, []))
                     if isinstance(e, PriorityChanged) and e.app_id == app_id), rec.priority)
    spec = replace(rec.spec, priority=priority)
    copies = [c for c in others if plan.reachable[c]] or others or fed.eligible(spec)
    plan.moved[app_id] = (name, ev.reason)
    plan.to(name, KillRequested(app_id), i)
    plan.to(name, Forget(app_id), i)
    plan.copies[app_id] = copies
    plan.specs[app_id] = spec
    for c in copies:
        if c == name or not _keep_copy(plan, c, app_id):
            plan.to(c, Submitted(spec), i)
        elif fed.engines[c].apps[app_id].priority != priority:
            plan.to(c, PriorityChanged(app_id, priority), i)


def _keep_copy(plan: Plan, name: str, app_id: str) -> bool:
    """Its copy in ``name``'s queue, placed elsewhere at the step before and not taken out
    yet, stays as its place there: the withdrawal planned for it (the federation's own kill
    and forget) is taken back. Killed, it would end the app, its home copy's word."""
    batch, origin = plan.batches.get(name, []), plan.origin.get(name, [])
    planned = [k for k, e in enumerate(batch) if origin[k] is None
               and isinstance(e, KillRequested | Forget) and e.app_id == app_id]
    for k in reversed(planned):
        del batch[k], origin[k]
    return bool(planned)


def _end_lost(fed: Federation, plan: Plan, now: float) -> None:
    if not any(plan.reachable.values()) or not any(fed.reachable.values()):
        # Every cluster silent at once: our own network, most likely; end nothing (and once
        # one answers again, the others' clocks start from then: ``Federation._commit``).
        return
    for name, since in fed.down_since.items():
        if plan.reachable[name]:
            continue
        limit = fed.clusters[name].lost_timeout_s
        if now - since < limit:
            continue
        for app_id, rec in fed.engines[name].apps.items():
            if rec.state.admitted and not rec.state.terminal and app_id not in fed.lost:
                plan.lost.append(app_id)
                plan.to(name, DriverExited(app_id, -1, (
                    f"cluster {name} lost: unreachable for {now - since:.0f}s, beyond its "
                    f"lost_timeout of {limit:g}s")), None)
