"""How apps are shown: the app object of docs/api.md and Spark's driverState."""

from __future__ import annotations

from datetime import datetime, timezone

from ..model import AppState
from .reads import AppRead
from .schemas import AppOut

# Spark REST driverState for each of our states (DESIGN.md, "Applications and states").
DRIVER_STATE = {
    AppState.ACCEPTED: "SUBMITTED",
    AppState.STARTING: "RUNNING",
    AppState.RUNNING: "RUNNING",
    AppState.FINISHED: "FINISHED",
    AppState.FAILED: "FAILED",
    AppState.KILLED: "KILLED",
}


def one_line(text: str) -> str:
    """A refusal's message as one printable line: user input quoted in it (a file name, a
    directory, a field name) may hold a newline or another control character, shown escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def iso(t: float | None) -> str | None:
    """Epoch seconds as ISO 8601 UTC with milliseconds and ``Z``."""
    if t is None:
        return None
    text = datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def app_out(app: AppRead) -> AppOut:
    return AppOut(
        id=app.id,
        name=app.name,
        user=app.user,
        queue=app.queue,
        priority=app.priority,
        state=app.state.value,
        position=app.position,
        submitted_at=iso(app.submitted_at),
        started_at=iso(app.started_at),
        first_executor_at=iso(app.first_executor_at),
        finished_at=iso(app.finished_at),
        exit_code=app.exit_code,
        executors=app.executors,
        target=app.target,
        demand=app.demand,
        spark_app_id=app.spark_app_id,
        kind=app.kind,
        reason=app.reason,
        warnings=list(app.warnings),
    )
