"""How long a name's earlier runs worked, and their stages, from the store: what the estimated
starts assume of a recurring app (docs/design/estimates.md).

From the first executor to the end, not from the launch: a run that waited for its first
executors in a busy cluster would lend that wait to every later estimate of its name, and the
estimate simulates the waits of its own time itself. A run no executor ever came to counts
from its launch.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from ..model import AppState
from ..model.stages import Run, run_from_json
from .faults import store_faults
from .schema import AppRow


def work_lengths(store, names: Iterable[str], per_name: int = 20) -> dict[str, list[float]]:
    """App name -> how long its last ``per_name`` FINISHED runs worked (s), newest first."""
    names = sorted(set(names))
    out: dict[str, list[float]] = {}
    if not names:
        return out
    q = (select(AppRow.name, AppRow.started_at, AppRow.first_executor_at, AppRow.finished_at)
         .where(AppRow.name.in_(names), AppRow.state == AppState.FINISHED.value,
                AppRow.started_at.is_not(None), AppRow.finished_at.is_not(None))
         .order_by(AppRow.finished_at.desc()))
    with store_faults(), store.session() as s:
        for name, started, first, finished in s.execute(q):
            runs = out.setdefault(name, [])
            if len(runs) < per_name:
                runs.append(max(0.0, finished - (started if first is None else first)))
    return out


def stage_runs(store, names: Iterable[str], per_name: int = 20) -> dict[str, list[Run]]:
    """App name -> the completed stages of its last ``per_name`` FINISHED runs that reported
    any, newest first."""
    names = sorted(set(names))
    out: dict[str, list[Run]] = {}
    if not names:
        return out
    q = (select(AppRow.name, AppRow.stages)
         .where(AppRow.name.in_(names), AppRow.state == AppState.FINISHED.value,
                AppRow.stages.is_not(None), AppRow.finished_at.is_not(None))
         .order_by(AppRow.finished_at.desc()))
    with store_faults(), store.session() as s:
        for name, raw in s.execute(q):
            runs = out.setdefault(name, [])
            if len(runs) < per_name and (run := run_from_json(raw)):
                runs.append(run)
    return out
