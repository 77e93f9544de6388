"""Checking the engine's running totals against its books, from scratch: every total
recounted, every target recomputed by ``arbitration.compute_targets``, every grant base summed
again, every queue listing rebuilt. O(apps): for tests and debugging, not for every cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import AppState
from .arbitration import compute_targets
from .books import Ledger
from .grants import Grants
from .launching import LaunchBook
from .needs import NeedBook

if TYPE_CHECKING:
    from .scheduler import Scheduler


def audit(s: Scheduler) -> list[str]:
    """The differences between the running totals and the books (empty when all is true)."""
    problems = []
    recs = list(s.apps.values())
    total = Ledger.recount((r, s._guaranteed(r)) for r in recs)
    if total != s._ledger.total:
        problems.append(f"totals {s._ledger.total} != recount {total}")
    for leaf in s._leaves:
        t = Ledger.recount((r, s._guaranteed(r)) for r in recs if r.spec.queue == leaf)
        if t != s._ledger.leaf(leaf):
            problems.append(f"totals of {leaf} {s._ledger.leaf(leaf)} != recount {t}")
    if NeedBook.recount(recs) != s._needs.by_leaf:
        problems.append(f"elastic needs {s._needs.by_leaf} != recount {NeedBook.recount(recs)}")
    problems += s._needs.audit()
    if LaunchBook.recount(recs) != s._launching.by_leaf:
        problems.append(f"launching {s._launching.by_leaf} != recount {LaunchBook.recount(recs)}")
    live = [r for r in recs if r.state.admitted]
    claims = [s._claim(r) for r in live]
    fresh = compute_targets(s.root, s._executor_capacity(), claims)
    for r in live:
        if fresh[r.app_id] != r.target:
            problems.append(f"{r.app_id}: target {r.target}, from scratch {fresh[r.app_id]}")
    base = Grants()
    for r in recs:
        base.rebase(r, r.target)
    if base.sums() != s._grants.sums():
        problems.append(f"grant sums {s._grants.sums()} != recount {base.sums()}")
    problems += s._reclaimer.audit(recs)
    if set(s._admitted) != {r.app_id for r in recs if r.on_books}:
        problems.append("the set of apps on the books is wrong")
    if set(s._starting) != {r.app_id for r in recs if r.state is AppState.STARTING}:
        problems.append("the set of starting apps is wrong")
    for leaf, pend in s._pending.items():
        queued = sorted(r.rank for r in recs
                        if r.spec.queue == leaf and r.state is AppState.ACCEPTED)
        if list(pend) != queued:
            problems.append(f"queue {leaf} lists {len(pend)} apps, the books {len(queued)}")
    return problems
