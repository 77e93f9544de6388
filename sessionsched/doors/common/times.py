"""Times and estimates as the doors show them: ISO 8601 UTC, and a queued app's estimated
start and counter-offer (docs/design/estimates.md) under the camelCase names of the Spark REST and
Livy answers."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sessionsched.operations.port import AppRead


def iso(t: float | None) -> str | None:
    """Epoch seconds as ISO 8601 UTC with milliseconds and ``Z``."""
    if t is None:
        return None
    text = datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def estimate_fields(app: AppRead) -> dict[str, Any]:
    """``estimatedStart`` and ``counterOffer`` (its one line) of a queued app, when it has
    them; nothing otherwise."""
    out: dict[str, Any] = {}
    if app.estimated_start is not None:
        out["estimatedStart"] = iso(app.estimated_start)
    if app.counter_offer is not None:
        out["counterOffer"] = app.counter_offer.text
    return out
