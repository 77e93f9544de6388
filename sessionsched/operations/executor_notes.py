"""Why an app that runs holds fewer executors than it wants: the notes an admitted app's own
read carries (``GET /api/v1/apps/{id}``), which ``sessionsched why`` prints and the dashboard's
app page shows (docs/user/watching.md#why-an-app-waits).

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

Worked out per read from the published view and the watch's last report: a pure function of
figures the scheduler already keeps, so a cycle pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from sessionsched.model import Worker
from sessionsched.model.custom import Custom, amount


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


COMES_BACK = "it comes as apps above their target give executors back"


def executor_notes(app: Executors, workers: Sequence[Worker] | None,
                   free: Mapping[str, Mapping[str, int | None]] | None = None
                   ) -> list[ExecutorNote]:
    """The notes (module doc) for ``app``. ``workers``: the watch's last report (None: behind
    several clusters); ``free``: the cluster's custom resources (``resource_view.
    cluster_resources``: name -> capacity, free)."""
    notes = []
    if app.held < app.grant:
        notes.append(ExecutorNote(NoteCode.EXECUTORS_STARTING,
                                  f"{app.grant - app.held} granted executor(s) starting"))
    if app.grant < app.target and workers:
        notes.append(_short(app.asks, workers, free or {}))
    if app.target < app.demand and app.policy:
        notes.append(ExecutorNote(
            NoteCode.TARGET_BELOW_DEMAND,
            f"its target is below its demand: {app.queue} ({app.policy}) divides its executors"
            f" among {app.running} running app(s)"))
    return notes


def _short(asks: Custom, workers: Sequence[Worker],
           free: Mapping[str, Mapping[str, int | None]]) -> ExecutorNote:
    """What the executors granted below the target wait for (module doc)."""
    for name, each in asks:
        most = max((amount(w.free.custom, name) for w in workers), default=0)
        if most < each:
            totals = free.get(name, {})
            whole = (f"{totals['free']} of {totals['capacity']} free in the cluster"
                     if totals.get("free") is not None else f"the most on one worker: {most}")
            return ExecutorNote(
                NoteCode.RESOURCE_SHORT,
                f"waiting for {name}: each executor asks {each} {name} and no worker has that"
                f" much free ({whole}); {COMES_BACK}", name)
    most = max(workers, key=lambda w: (w.free.cores, w.free.mem_mib)).free
    return ExecutorNote(
        NoteCode.ROOM_SHORT,
        f"waiting for room: the cluster has {sum(w.free.cores for w in workers)} cores/"
        f"{sum(w.free.mem_mib for w in workers)} MiB free (the most on one worker:"
        f" {most.cores} cores/{most.mem_mib} MiB); {COMES_BACK}")
