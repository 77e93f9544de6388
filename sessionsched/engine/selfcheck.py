"""The engine's self-check: every index of the books against a recount from the apps, from
scratch - every total recounted, every target recomputed by the independent from-scratch
arbiter (``arbitration.oracle``), every grant base summed again, every queue listing rebuilt.
O(apps): for tests and debugging, not for every cycle. (Not the audit trail: that is the
service's record of who changed what.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ..model import AppState, Queue, Resources
from .app_books import Books
from .arbitration import compute_targets
from .grants import Grants
from .host_room import needs_cluster
from .ledger import Ledger
from .needs import NeedBook


def check(books: Books, capacity: Resources, root: Queue | None = None,
          off_cluster: Mapping[str, int] | None = None) -> list[str]:
    """The differences between the indexes and the books (empty when all is true).
    ``root``: the tree arbitration divided, when not the books' own (``max_cores`` over
    several clusters lowers its caps: ``clusters.cores``); ``off_cluster``: each leaf's queued
    apps needing no cluster room, as ``room.heads`` counts them."""
    problems = []
    recs = list(books.apps.values())
    ledger = books.ledger
    total = Ledger.recount((r, books.guaranteed(r)) for r in recs)
    if total != ledger.total:
        problems.append(f"totals {ledger.total} != recount {total}")
    for leaf in books.leaves:
        t = Ledger.recount((r, books.guaranteed(r)) for r in recs if r.spec.queue == leaf)
        if t != ledger.leaf(leaf):
            problems.append(f"totals of {leaf} {ledger.leaf(leaf)} != recount {t}")
    floors = Ledger.recount_custom(recs)
    if floors != ledger.floor_custom:
        problems.append(f"custom floors {ledger.floor_custom} != recount {floors}")
    if NeedBook.recount(recs) != books.needs.by_leaf:
        problems.append(f"elastic needs {books.needs.by_leaf} != recount {NeedBook.recount(recs)}")
    problems += books.needs.check()
    live = [r for r in recs if r.state.admitted]
    claims = [books.claim_of(r) for r in live]
    fresh = compute_targets(root or books.root, books.executor_capacity(capacity), claims,
                            books.decay.last, capacity)
    for r in live:
        if fresh[r.app_id] != r.target:
            problems.append(f"{r.app_id}: target {r.target}, from scratch {fresh[r.app_id]}")
    base = Grants()
    for r in recs:
        base.rebase(r, r.target)
    if base.sums() != books.grants.sums():
        problems.append(f"grant sums {books.grants.sums()} != recount {base.sums()}")
    gangs = {key[2] for pend in books.pending.values() for key in pend
             if books.apps[key[2]].spec.gang is not None}
    if gangs != books.queued_gangs:
        problems.append(f"queued gangs {sorted(books.queued_gangs)} != recount {sorted(gangs)}")
    problems += books.reclaimer.check(recs)
    if set(books.on_books()) != {r.app_id for r in recs if r.on_books}:
        problems.append("the set of apps on the books is wrong")
    if set(books.starting()) != {r.app_id for r in recs if r.state is AppState.STARTING}:
        problems.append("the set of starting apps is wrong")
    due = books.wait_deadlines()
    for r in recs:
        limit = books.leaves[r.spec.queue].max_wait_s if r.spec.queue in books.leaves else None
        if r.state is AppState.ACCEPTED and limit is not None and \
                (r.spec.submitted_at + limit, r.app_id) not in due:
            problems.append(f"{r.app_id}: no max_wait deadline in the heap")
    for leaf, pend in books.pending.items():
        queued = sorted(r.rank for r in recs
                        if r.spec.queue == leaf and r.state is AppState.ACCEPTED)
        if list(pend) != queued:
            problems.append(f"queue {leaf} lists {len(pend)} apps, the books {len(queued)}")
    if off_cluster is not None:
        off = Counter(leaf for leaf, pend in books.pending.items() for key in pend
                      if not needs_cluster(books.apps[key[2]].spec))
        if {k: n for k, n in off_cluster.items() if n} != dict(off):
            problems.append(f"queued apps needing no cluster room {dict(off_cluster)} !="
                            f" recount {dict(off)}")
    return problems
