"""``max_resources`` and ``min_resources`` over every cluster: a queue's custom resources (GPUs
and the like) on all of them together stay under its caps, as ``cores`` keeps its
``max_cores``, and its guarantee is one guarantee, not one on each cluster.

On one cluster ``max_resources`` is arbitration's (admission counts no custom resource against
it; an executor that asks more than the cap never fits: ``placement.never_fits``), so behind
several clusters only arbitration's caps are shared: before each engine's arbitration, each
capped queue's cap on each resource is split between the clusters as ``cores.caps`` splits a
``max_cores`` - this cluster's floors first, then of the room above every cluster's floors its
water-filled share by what each one's apps want above their floors, or what the others leave
unused - counted in the resource's own units (``CoresAt``: a resource's amounts, not only
cores'): an admitted app's floor executors, those it holds or is granted above them, and
those it wants above them, each times what one of its executors asks.

A guarantee (``min_resources``, arbitration's too) is split between the clusters by what the
queue's apps on each want, floors included, max-min fairly (``cores.water_fill``): a
cluster whose apps want less leaves the rest of it to the others, and the queue is guaranteed
no more over all of them than on one.

Counted from each leaf's claims (``Arbiter.claims_in``): the apps below the queues that have
``max_resources`` or ``min_resources``, not the whole books, so its cost is that of those
queues' apps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...model import Queue
from ...model.custom import Custom
from ..app_books import Books
from .cores import CoresAt, caps, water_fill

Capped = Mapping[str, tuple[Custom, tuple[str, ...]]]


def resource_capped(root: Queue) -> dict[str, tuple[Custom, tuple[str, ...]]]:
    """Each queue with ``max_resources``: (its caps, the leaves below it - itself, for a
    leaf)."""
    return {q.name: (q.max_resources, tuple(leaf.name for leaf in q.leaves()))
            for q in root.walk() if q.max_resources}


def resource_guaranteed(root: Queue) -> dict[str, tuple[Custom, tuple[str, ...]]]:
    """Each queue with ``min_resources``: (its guarantees, the leaves below it)."""
    return {q.name: (q.min_resources, tuple(leaf.name for leaf in q.leaves()))
            for q in root.walk() if q.min_resources}


def counted(*of: Capped) -> dict[str, tuple[Custom, tuple[str, ...]]]:
    """The queues of ``of`` with every resource any of them names for it (amounts aside: what
    ``custom_in`` counts)."""
    out: dict[str, tuple[Custom, tuple[str, ...]]] = {}
    for capped in of:
        for queue, (limits, leaves) in capped.items():
            names = dict(out.get(queue, ((), ()))[0])
            names.update(limits)
            out[queue] = (tuple(sorted(names.items())), leaves)
    return out


def custom_in(books: Books, capped: Capped) -> dict[str, dict[str, CoresAt]]:
    """Queue -> resource it names -> its amounts on the cluster whose engine keeps
    ``books``."""
    apps, claims_in = books.apps, books.arbiter.claims_in
    out = {}
    for queue, (limits, leaves) in capped.items():
        sums = {name: [0, 0, 0] for name, _ in limits}  # floors, above, wants
        for leaf in leaves:
            for app_id, c in claims_in(leaf).items():
                asks, rec = c.executor.custom, apps.get(app_id)
                if not asks or rec is None:
                    continue
                most = max(len(rec.executors), rec.grant)
                for name, amount in asks:
                    s = sums.get(name)
                    if s is not None:
                        s[0] += c.floor * amount
                        s[1] += max(most - c.floor, 0) * amount
                        s[2] += max(c.want - c.floor, 0) * amount
        out[queue] = {name: CoresAt(*s) for name, s in sums.items()}
    return out


def custom_caps(capped: Capped, counts: Mapping[str, Mapping[str, Mapping[str, CoresAt]]],
                names: Sequence[str], here: str, mine: Mapping[str, Mapping[str, CoresAt]],
                last: Mapping[str, Custom]) -> dict[str, Custom]:
    """Queue -> the ``max_resources`` arbitration on ``here`` works to this step, for the
    queues whose apps want more of a resource than its cap over every cluster: ``cores.caps``
    resource by resource (its arguments likewise: ``counts`` the others' amounts, ``mine``
    ``here``'s after this step's admission, ``last`` the caps given ``here`` last)."""
    out: dict[str, list[tuple[str, int]]] = {}
    limits_of = {q: (dict(limits), leaves) for q, (limits, leaves) in capped.items()}
    last_of = {q: dict(c) for q, c in last.items()}
    for name in sorted({k for limits, _ in limits_of.values() for k in limits}):
        of = {q: (limits[name], leaves) for q, (limits, leaves) in limits_of.items()
              if name in limits}
        given = caps(of, {n: {q: c[q][name] for q in of} for n, c in counts.items()}, names,
                     here, {q: mine[q][name] for q in of},
                     {q: c[name] for q, c in last_of.items() if name in c})
        for q, cap in given.items():
            out.setdefault(q, []).append((name, cap))
    return {q: tuple(v) for q, v in out.items()}


def custom_guarantees(guaranteed: Capped, counts: Mapping[str, Mapping[str, Mapping[str, CoresAt]]],
                      names: Sequence[str], here: str, mine: Mapping[str, Mapping[str, CoresAt]]
                      ) -> dict[str, Custom]:
    """Queue -> the ``min_resources`` arbitration on ``here`` works to this step: each
    guarantee water-filled between the clusters by what the queue's apps on each want (floors
    and above), ties to the first in ``names``; for the queues whose apps are on more than
    one cluster (on one, the guarantee stands whole there)."""
    out: dict[str, list[tuple[str, int]]] = {}
    for queue, (mins, _) in guaranteed.items():
        for name, least in mins:
            at = {n: (mine if n == here else counts[n])[queue][name] for n in names
                  if n in counts or n == here}
            wants = {n: c.floors + c.wants for n, c in at.items()}
            if sum(1 for w in wants.values() if w) > 1:
                out.setdefault(queue, []).append((name, water_fill(least, wants)[here]))
    return {q: tuple(v) for q, v in out.items()}
