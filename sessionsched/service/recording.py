"""What a scheduling step changes in the store, decided on plain data (no IO).

``record_step`` turns the events a step took and the decisions it gave into column changes per
app and audit rows: every state change (with the timestamps and exit code that go with it), the
Spark application id once learnt, exit codes, kill requests, executors taken back (a
``reclaim`` row: how many, how, which), and the queued apps that waited
their queue's ``max_wait`` (an ``expired`` row: the audit trail's, actor ``scheduler``). The
service commits them before it carries out any decision, and publishes the engine's new view
only after that commit.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sessionsched.engine.clusters import Placed, Unplaced
from sessionsched.engine.events import (
    Decision,
    DriverExited,
    DriverStarted,
    Event,
    KillRequested,
    MarkState,
    Reclaim,
)
from sessionsched.model import AppState
from sessionsched.store import EventRecord

EXPIRED_BY = "scheduler"  # who ends an app that waited too long, as the audit trail says it


@dataclass
class Record:
    changes: dict[str, dict] = field(default_factory=dict)  # app id -> column -> value
    rows: list[EventRecord] = field(default_factory=list)

    def rows_for_store(self) -> list[dict]:
        return [{"id": app_id, **change} for app_id, change in self.changes.items()]


class Before(Protocol):
    """An app as it was before the step (its state, its Spark application id)."""

    state: AppState
    spark_app_id: str | None


def record_step(
    now: float,
    events: Sequence[Event],
    decisions: Sequence[Decision],
    before: Mapping[str, Before],
    killers: MutableMapping[str, str],
) -> Record:
    """``before``: the apps as the last published view showed them; ``killers``: who asked
    for each kill (consumed). Everything else comes from the events and decisions themselves
    (``MarkState`` carries its reason, times and exit code): recording never reads the
    engine's books."""
    out = Record()
    for ev in events:
        if isinstance(ev, DriverStarted) and ev.spark_app_id:
            app = before.get(ev.app_id)
            if app is None or app.spark_app_id != ev.spark_app_id:
                out.changes.setdefault(ev.app_id, {})["spark_app_id"] = ev.spark_app_id
                out.rows.append(EventRecord(ev.app_id, now, "driver",
                                            f"Spark application id {ev.spark_app_id}"))
        elif isinstance(ev, DriverExited):
            out.changes.setdefault(ev.app_id, {})["exit_code"] = ev.exit_code
            out.rows.append(EventRecord(ev.app_id, now, "exit",
                                        f"driver exited with code {ev.exit_code}"))
        elif isinstance(ev, KillRequested):
            who = killers.pop(ev.app_id, "Admin")
            out.rows.append(EventRecord(ev.app_id, now, "kill", f"kill requested by {who}",
                                        actor=who))
    for d in decisions:
        if isinstance(d, Placed):  # in the commit of its launch: a restart adopts it there
            out.changes.setdefault(d.app_id, {})["cluster"] = d.cluster
            out.rows.append(EventRecord(d.app_id, now, "placed", f"placed on cluster "
                                        f"{d.cluster} (placement {d.attempt})"))
            continue
        if isinstance(d, Unplaced):  # queued again: in this commit, before its next launch
            record_unplaced(out, d, before, now)
            continue
        if isinstance(d, Reclaim):
            out.rows.append(EventRecord(d.app_id, now, "reclaim", reclaim_detail(d)))
        if not isinstance(d, MarkState):
            continue
        change = out.changes.setdefault(d.app_id, {})
        app = before.get(d.app_id)
        old = change.get("state", app.state if app is not None else AppState.ACCEPTED)
        reason = d.reason
        change.update(state=d.state, reason=reason)
        if d.state is AppState.STARTING:
            change["started_at"] = d.at
        elif d.state is AppState.RUNNING:
            change["first_executor_at"] = d.first_executor_at
        elif d.state.terminal:
            change["finished_at"] = d.at
            change["exit_code"] = d.exit_code
            change["usage_open"] = True  # until the meter writes its last figures
        out.rows.append(EventRecord(d.app_id, now, "state",
                                    f"{old.value} -> {d.state.value}: {reason}"))
        if d.expired:
            out.rows.append(EventRecord(d.app_id, now, "expired",
                                        f"expired by {EXPIRED_BY}: {reason}", actor=EXPIRED_BY))
    return out


def record_unplaced(out: Record, d: Unplaced, before: Mapping[str, Before],
                    now: float) -> None:
    """An app taken off a cluster where its launch started nothing: ACCEPTED again, on no
    cluster, its launch's wait over (it is placed anew, never tried again there)."""
    change = out.changes.setdefault(d.app_id, {})
    app = before.get(d.app_id)
    old = change.get("state", app.state if app is not None else AppState.STARTING)
    reason = (f"its launch on cluster {d.cluster} started nothing ({d.reason}); queued again "
              f"for {', '.join(d.copies)}")
    change.update(state=AppState.ACCEPTED, reason=reason, cluster=None, started_at=None,
                  launch_wait=None)
    out.rows.append(EventRecord(d.app_id, now, "moved", f"taken off cluster {d.cluster}: "
                                f"{reason}"))
    out.rows.append(EventRecord(d.app_id, now, "state",
                                f"{old.value} -> {AppState.ACCEPTED.value}: {reason}"))


RECLAIM_HOW = {
    "kill": "killed now",
    "decommission": "decommissioned, killed at the deadline if still there",
    "idle": "released as they go idle",
}


def reclaim_detail(d: Reclaim) -> str:
    """"2 executors taken back (decommissioned, ...): 3, 4": the app's timeline shows it."""
    n = len(d.executor_ids)
    how = RECLAIM_HOW.get(d.mode.value, d.mode.value)
    return (f"{n} executor{'s' if n != 1 else ''} taken back ({how}): "
            f"{', '.join(d.executor_ids)}")
