"""Custom resources (GPUs, any name Spark knows) in the CLI's displays: a column per resource
in the queue table (``queues``, ``top``), a line in ``status`` and ``why``. Read from the
API's ``resources`` fields, which a cluster without custom resources does not send: then
nothing here adds a column or a line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def resource_names(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The resources the queues' (or apps') ``resources`` name, sorted."""
    return sorted({name for row in rows for name in (row.get("resources") or {})})


def queue_cell(entry: Mapping[str, Any] | None) -> str:
    """A queue's use of one resource: ``2`` held, ``2/4`` under a cap of 4, ``2/4 min 1``
    with a guarantee."""
    if not entry:
        return "-"
    text = str(entry.get("used", 0))
    if entry.get("max") is not None:
        text += f"/{entry['max']}"
    if entry.get("min") is not None:
        text += f" min {entry['min']}"
    return text


def amounts(values: Mapping[str, int] | None) -> str:
    """``2 gpu, 1 fpga``; ``-`` for none."""
    return ", ".join(f"{v:g} {k}" for k, v in sorted((values or {}).items())) or "-"


def app_line(resources: Mapping[str, Any]) -> str:
    """``executor 1 gpu; driver -; held 2 gpu``: an app's ``resources``."""
    return "; ".join(f"{part} {amounts(resources.get(part))}"
                     for part in ("executor", "driver", "held"))


def queue_lines(queue: Mapping[str, Any] | None) -> list[str]:
    """``gpu in root.ml: 2 held of a cap of 4``: one line per resource of a queue's row."""
    if not queue:
        return []
    out = []
    for name, entry in sorted((queue.get("resources") or {}).items()):
        line = f"{name} in {queue['name']}: {entry.get('used', 0)} held"
        if entry.get("max") is not None:
            line += f", capped at {entry['max']}"
        if entry.get("min") is not None:
            line += f", guaranteed {entry['min']}"
        out.append(line)
    return out
