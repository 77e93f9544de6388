"""What the federation tells each cluster's engine before it steps, about the others: whether
a queued app is offered to a cluster stepping after it (``offered_later``), and what the
other clusters' drivers hold of the scheduler's host (``host_used_besides``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ...model import Resources
from ..scheduler import Scheduler
from .order import PlacementRule, room_now
from .routing import run_by

if TYPE_CHECKING:
    from .federation import Federation


def offered_later(fed: Federation, here: str, later: Sequence[str],
                  own: Mapping[str, PlacementRule],
                  orders: Mapping[PlacementRule, list[str]]) -> Callable[[str], bool | str]:
    """Whether a queued app is offered, after the cluster stepping now (``here``), to another
    that may hold it (``admission_checks.free_here``: then this one takes it only into room
    free now). A cluster that held it aside last step (it cannot hold it as it is) does not
    count: the app is not kept from a cluster that can run it for one that cannot. For an app
    of a queue with its own placement rule (``own``: leaf -> rule; ``orders``: each rule's
    order this step), the reason it is that later cluster's to take when that cluster comes
    before this one by the rule and has room for it now (``order`` module doc)."""
    queued, engines, reachable, clusters = fed.queued, fed.engines, fed.reachable, fed.clusters
    held = {name: engines[name].held for name in later}

    def offered(app_id: str) -> bool | str:
        q = queued.get(app_id)
        if q is None:
            return False
        rule = own.get(q.spec.queue)
        for c in orders[rule] if rule is not None else ():
            if c == here:
                break
            if (c in held and c in q.copies and reachable[c] and app_id not in held[c]
                    and room_now(engines[c], run_by(q.spec, clusters[c].drivers_in_cluster))):
                return (f"cluster {c} comes first by its queue's placement {rule.value} "
                        f"and has the cores free now for it to start")
        return any(c in held and app_id not in held[c] for c in q.copies)

    return offered


def host_used_besides(engines: Mapping[str, Scheduler], here: str) -> tuple[Resources, int]:
    """What the other engines' drivers on the scheduler's host hold of it, and how many they
    are: the host is one, whatever cluster a client-mode driver's app runs on
    (``Scheduler.host_elsewhere``)."""
    cores = mem = drivers = 0
    for name, engine in engines.items():
        if name != here:
            t = engine.books.ledger.total
            cores, mem = cores + t.host_driver_cores, mem + t.host_driver_mem_mib
            drivers += t.client_drivers
    return Resources(cores, mem), drivers
