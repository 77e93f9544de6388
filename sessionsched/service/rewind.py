"""Putting the engine back to the last committed cycle when a cycle's commit fails.

The cycle steps the engine and then commits what the step changed (``cycle``). When that
commit fails (the store is full, PostgreSQL is down), the engine is one step ahead of the
store: a kill it applied, a launch it decided, are on no disk. Nothing of that step has been
published or carried out, so the last published view is exactly what is committed. The engine
is rebuilt from that view the way a restart rebuilds it from the store (``restore``), without
reading the store (it may be the very thing that is down):

- a fresh engine on the view's queue tree, capacity and driver slots;
- queued apps ``Submitted`` again in submission order with their committed priority (same
  positions); launched ones ``Adopted`` (never launched again) with their committed reason
  (shown until their next change), their Spark application id, executors and demand -- facts
  from the cluster and the agents, not decisions, which the failed step's engine holds newest;
- ended apps leave the engine for the read view's final apps (as at a restart).

The events the failed step took are then stepped again by the next cycle, first: the cluster's
and the agents' news (a driver's exit code is polled once: it must not be lost), submissions
and priority changes (already committed). Only requests nobody has committed yet are answered
instead: a kill's caller hears the store's fault (503) and the kill is not applied -- memory
and store stay as they were, and asking again once the store is back works.

An ended app that still held executors on the books (killed, its driver still stopping: a
driver's exit takes its executors with it) leaves the engine with them. Until that driver
exits (the stop's grace, seconds) the engine may grant their cores to others, whose new
executors then wait on the cluster for those cores to be freed; nothing is launched twice or
lost. The capacity read does not close that gap (the standalone and memory backends count the
stopping driver's executors as the scheduler's own, not as someone else's usage). Keeping the
app would need the engine to take back an ended app (``Adopted`` is for live ones): not worth
it for a few seconds of a rare overlap (a kill, then a failed commit before its driver is
gone).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sessionsched.engine.clusters.served import ServedFederation
from sessionsched.engine.events import (
    Adopted,
    DemandChanged,
    DriverStarted,
    Event,
    ExecutorsChanged,
    Forget,
    KillRequested,
    Submitted,
)
from sessionsched.engine.scheduler import Scheduler
from sessionsched.model import AppState
from sessionsched.service.inbox import Item
from sessionsched.service.reads import AppRead, ReadView
from sessionsched.service.registry import Submissions


@dataclass
class Rewound:
    engine: Scheduler  # holds nothing yet: ``events`` put the committed books back
    events: list[Event] = field(default_factory=list)  # for the next cycle, before anything
    final: dict[str, AppRead] = field(default_factory=dict)  # ended apps, out of the engine
    redo: list[Item] = field(default_factory=list)  # the failed step's, stepped again next
    refused: list[Item] = field(default_factory=list)  # requests answered with the fault


def rewind(committed: ReadView, ahead: Scheduler, registry: Submissions,
           items: list[Item], stepped: list[Event]) -> Rewound:
    """The engine as ``committed`` shows it. ``ahead``: the engine whose step was not
    committed (read only for its cluster facts); ``items``: that step's inbox items;
    ``stepped``: every event it took (items' events included)."""
    view = committed.engine
    # Several clusters: each app is put back on the cluster it is on (``ServedFederation``).
    out = Rewound(ahead.fresh() if isinstance(ahead, ServedFederation) else
                  Scheduler(view.root, view.capacity, view.driver_slots,
                            host_room=view.host_room))
    out.engine.load_decayed(ahead.decayed())  # a cycle ahead at most; written again next
    for facts in sorted(view.apps.values(), key=lambda f: f.seq):
        sub = registry.get(facts.app_id)
        if sub is None:  # forgotten meanwhile: its final record is the store's
            continue
        if facts.state.terminal:
            read = committed.app(facts.app_id)
            if read is not None:
                out.final[facts.app_id] = read
            continue
        spec = replace(sub.spec, priority=facts.priority)
        if facts.state is AppState.ACCEPTED:
            out.events.append(Submitted(spec))
            continue
        out.events.append(Adopted(spec=spec, state=facts.state, priority=facts.priority,
                                  launched_at=facts.launched_at or sub.submitted_at,
                                  first_executor_at=facts.first_executor_at,
                                  reason=facts.reason))
        if facts.spark_app_id:
            out.events.append(DriverStarted(facts.app_id, facts.spark_app_id))
        rec = ahead.apps.get(facts.app_id)  # its executors: a fact the view only counts
        if rec is not None and rec.executors:
            out.events.append(ExecutorsChanged(facts.app_id, tuple(rec.executors.values())))
        if rec is not None:
            out.events.append(DemandChanged(facts.app_id, rec.demand))
    # The failed step's events, in their order: the items' own (with whoever waits on them),
    # then what the cluster, the agents and the watches reported.
    from_items = {id(i.event) for i in items}
    for item in items:
        if isinstance(item.event, KillRequested) and item.done is not None:
            out.refused.append(item)  # a request: answered, not applied
        else:
            out.redo.append(item)
    out.redo += [Item(ev) for ev in stepped
                 if id(ev) not in from_items and not isinstance(ev, Forget)]
    # Apps the committed view has are back by the events above: a second failure in a row
    # must not submit them twice (the failed step took the first rewind's events).
    out.redo = [i for i in out.redo if not (isinstance(i.event, Submitted | Adopted)
                                            and i.event.spec.app_id in view.apps)]
    return out
