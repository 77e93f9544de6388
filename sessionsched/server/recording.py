"""What a scheduling step changes in the store, decided on plain data (no IO).

``record_step`` turns the events a step took and the decisions it gave into column changes per
app and audit rows: every state change (with the timestamps and exit code that go with it), the
Spark application id once learnt, exit codes, kill requests. The service commits them before
it carries out any decision, and applies the same changes to its in-memory books afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

from ..engine.events import Decision, DriverExited, DriverStarted, Event, KillRequested, MarkState
from ..model import AppState
from ..store import EventRecord, StoredApp


@dataclass
class Record:
    changes: dict[str, dict] = field(default_factory=dict)  # app id -> column -> value
    rows: list[EventRecord] = field(default_factory=list)

    def rows_for_store(self) -> list[dict]:
        return [{"id": app_id, **change} for app_id, change in self.changes.items()]


def record_step(
    now: float,
    events: Sequence[Event],
    decisions: Sequence[Decision],
    apps: Mapping[str, StoredApp],
    engine_apps: Mapping,
    why: MutableMapping[str, str],
    killers: MutableMapping[str, str],
) -> Record:
    """``why``: a reason that replaces the engine's for an app's next terminal state (a failed
    launch, a silent session); ``killers``: who asked for each kill. Both are consumed."""
    out = Record()
    for ev in events:
        if isinstance(ev, DriverStarted) and ev.spark_app_id:
            app = apps.get(ev.app_id)
            if app is not None and app.spark_app_id != ev.spark_app_id:
                out.changes.setdefault(ev.app_id, {})["spark_app_id"] = ev.spark_app_id
                out.rows.append(EventRecord(ev.app_id, now, "driver",
                                            f"Spark application id {ev.spark_app_id}"))
        elif isinstance(ev, DriverExited):
            out.changes.setdefault(ev.app_id, {})["exit_code"] = ev.exit_code
            out.rows.append(EventRecord(ev.app_id, now, "exit",
                                        f"driver exited with code {ev.exit_code}"))
        elif isinstance(ev, KillRequested):
            who = killers.pop(ev.app_id, "Admin")
            out.rows.append(EventRecord(ev.app_id, now, "kill", f"kill requested by {who}"))
    for d in decisions:
        if not isinstance(d, MarkState):
            continue
        rec = engine_apps[d.app_id]
        change = out.changes.setdefault(d.app_id, {})
        old = change.get("state", apps[d.app_id].state)
        reason = d.reason
        if d.state.terminal and d.app_id in why:
            reason = why.pop(d.app_id)
        change.update(state=d.state, reason=reason)
        if d.state is AppState.STARTING:
            change["started_at"] = rec.launched_at
        elif d.state is AppState.RUNNING:
            change["first_executor_at"] = rec.first_executor_at
        elif d.state.terminal:
            change["finished_at"] = rec.finished_at
            change["exit_code"] = rec.exit_code
        out.rows.append(EventRecord(d.app_id, now, "state",
                                    f"{old.value} -> {d.state.value}: {reason}"))
    return out
