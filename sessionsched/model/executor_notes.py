"""Why an app that runs holds fewer executors than it wants: the notes an admitted app's own
read carries (``GET /api/v1/apps/{id}``), which ``sessionsched why`` prints and the dashboard's
app page shows, and the one code per app the lists of apps and ``/metrics`` carry
(docs/user/watching.md#why-an-app-waits).

A running app's executors pass three figures on their way to its demand (what its Spark asks
for): its *target* (its share now, by its queue's policy), its *grant* (the target placed on
the workers as they free: what its agent lets dynamic allocation hold) and the executors it
*holds*. Each gap has its note:

- ``executors_starting``: granted executors its Spark has not started yet;
- ``resource_short`` / ``room_short``: its grant is below its target, so the rest waits for
  room on the workers. Per custom resource its executors ask for, whether one worker has that
  much free at the backend's last report (an executor runs on one worker), the first that
  none has naming it; else the cores and memory free. Behind several clusters the watch's
  workers are every cluster's, so no figure is drawn from them and neither note is given;
- ``target_below_demand``: its queue's policy divides the queue's executors among its running
  apps, and this app's share is below its demand.

A list gives each app one code (``executor_wait``): the room it waits for first, since that
is what frees nothing until others give back; then its queue's division; then executors
starting, which pass by themselves.

Pure functions of figures the scheduler already keeps, worked out per read, so a cycle pays
nothing for them. The workers are summed once per read (``WorkersSeen``): a list of every
running app then costs one pass over the workers and a few comparisons per app.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from . import Resources, Worker
from .custom import Custom


class NoteCode(StrEnum):
    TARGET_BELOW_DEMAND = "target_below_demand"
    RESOURCE_SHORT = "resource_short"
    ROOM_SHORT = "room_short"
    EXECUTORS_STARTING = "executors_starting"


@dataclass(frozen=True)
class ExecutorNote:
    code: NoteCode
    text: str
    resource: str | None = None  # the custom resource that is short (``resource_short``)


@dataclass(frozen=True)
class Executors:
    """An admitted app's executor figures, and the queue it shares."""

    held: int
    grant: int
    target: int
    demand: int
    queue: str
    policy: str | None  # its leaf's (None: not known)
    running: int  # the running apps of its queue, itself included
    asks: Custom = ()  # each executor's custom resources


@dataclass(frozen=True)
class WorkersSeen:
    """What the notes read of the workers at the backend's last report, summed once: the
    cores and memory free in all, the most free on one worker (by cores, then memory), each
    custom resource's most free on one worker, and the cluster's figures of each (name ->
    ``capacity``, ``free``: ``resource_view.cluster_resources``) for the text."""

    cores: int
    mem_mib: int
    best: Resources
    most: Mapping[str, int]
    cluster: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)


def workers_seen(workers: Sequence[Worker] | None,
                 cluster: Mapping[str, Mapping[str, int | None]] | None = None
                 ) -> WorkersSeen | None:
    """The workers summed (``WorkersSeen``); None where they say nothing of the app's room:
    none named, or (None) behind several clusters, where they are every cluster's."""
    if not workers:
        return None
    most: dict[str, int] = {}
    for w in workers:
        for name, n in w.free.custom:
            if n > most.get(name, 0):
                most[name] = n
    best = max(workers, key=lambda w: (w.free.cores, w.free.mem_mib)).free
    return WorkersSeen(sum(w.free.cores for w in workers), sum(w.free.mem_mib for w in workers),
                       best, most, cluster or {})


COMES_BACK = "it comes as apps above their target give executors back"


def executor_notes(app: Executors, seen: WorkersSeen | None) -> list[ExecutorNote]:
    """The notes (module doc) for ``app``; ``seen``: ``workers_seen``."""
    notes = []
    if app.held < app.grant:
        notes.append(ExecutorNote(NoteCode.EXECUTORS_STARTING,
                                  f"{app.grant - app.held} granted executor(s) starting"))
    if app.grant < app.target and seen is not None:
        notes.append(_short(app.asks, seen))
    if app.target < app.demand and app.policy:
        notes.append(ExecutorNote(
            NoteCode.TARGET_BELOW_DEMAND,
            f"its target is below its demand: {app.queue} ({app.policy}) divides its executors"
            f" among {app.running} running app(s)"))
    return notes


def executor_wait(app: Executors, seen: WorkersSeen | None
                  ) -> tuple[NoteCode, str | None] | None:
    """The one code a list gives the app (module doc), with the resource that is short; None
    when it holds what it wants (``wants_more``; its notes may still say its target is below
    its demand, as for an app giving executors back), or nothing is known of why not."""
    if not wants_more(app.held, app.grant, app.demand):
        return None
    if app.grant < app.target and seen is not None:
        name = short_of(app.asks, seen)
        return (NoteCode.ROOM_SHORT, None) if name is None else (NoteCode.RESOURCE_SHORT, name)
    if app.target < app.demand and app.policy:
        return NoteCode.TARGET_BELOW_DEMAND, None
    if app.held < app.grant:
        return NoteCode.EXECUTORS_STARTING, None
    return None


def wants_more(held: int, grant: int, demand: int) -> bool:
    """Whether an admitted app holds fewer executors than it wants (its demand), or has some
    granted on the way: the apps a list gives a code (``executor_wait``)."""
    return held < demand or held < grant


def short_of(asks: Custom, seen: WorkersSeen) -> str | None:
    """The first custom resource of which each executor asks more than any one worker has
    free (an executor runs on one worker); None if every one is free somewhere."""
    for name, each in asks:
        if seen.most.get(name, 0) < each:
            return name
    return None


def _short(asks: Custom, seen: WorkersSeen) -> ExecutorNote:
    """What the executors granted below the target wait for (module doc)."""
    name = short_of(asks, seen)
    if name is not None:
        each = dict(asks)[name]
        totals = seen.cluster.get(name, {})
        whole = (f"{totals['free']} of {totals['capacity']} free in the cluster"
                 if totals.get("free") is not None
                 else f"the most on one worker: {seen.most.get(name, 0)}")
        return ExecutorNote(
            NoteCode.RESOURCE_SHORT,
            f"waiting for {name}: each executor asks {each} {name} and no worker has that"
            f" much free ({whole}); {COMES_BACK}", name)
    most = seen.best
    return ExecutorNote(
        NoteCode.ROOM_SHORT,
        f"waiting for room: the cluster has {seen.cores} cores/{seen.mem_mib} MiB free (the most"
        f" on one worker: {most.cores} cores/{most.mem_mib} MiB); {COMES_BACK}")
