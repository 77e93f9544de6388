"""``max_cores`` over every cluster: a queue's executor cores on all of them together stay
under its cap, as on one cluster.

On one cluster a capped queue's floors come first (admission lets a head in only while the
floors of the queue's admitted apps and its first executors fit under the cap) and
arbitration shares the rest of the cap among its apps. Behind several clusters each engine
sees only its own apps, so before each engine steps it is told, per capped queue, what the
others hold (``CoresAt``: counted after each engine's step, as ``limits`` counts apps), and:

- **admission** counts the floors on the other clusters with its own (``left_for_floors``,
  ``Room.max_cores_left``): the floors of a queue, on every cluster together, never pass its
  cap;
- **arbitration** on this cluster gets the cap less what the others need (``caps``): its own
  floors always, and of the room above every floor its share - the room split between the
  clusters by what each one's apps want above their floors, most-wanting last (water-fill) -
  or, when more, what the others leave unused. A share a cluster does not use is so taken by
  the others, and given back by reclaim (as a lowered ``max_cores`` is) when that cluster's
  apps want it again. A cluster's apps may thus be granted their share a step before another
  cluster's reclaim gives it back, as on one cluster a new app is granted its floor while
  the executors above the others' targets are still being reclaimed.

A queue whose apps run on one cluster only keeps its whole cap there. ``max_cores_per_cluster``
(``trees``) caps a queue on one cluster besides: the lower cap holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ...model import Queue
from ..app_books import Books


class CoresAt(NamedTuple):
    """A capped queue's executor cores on one cluster, after its engine's last step."""

    floors: int  # the floors of its admitted apps
    above: int  # held or granted above those floors
    wants: int  # what its admitted apps want above their floors (``needs``)


def capped_queues(root: Queue) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Each queue with a ``max_cores``: (the cap, the leaves below it - itself, for a leaf)."""
    return {q.name: (q.max_cores, tuple(leaf.name for leaf in q.leaves()))
            for q in root.walk() if q.max_cores is not None}


def cores_in(books: Books, capped: Mapping[str, tuple[int, tuple[str, ...]]]
             ) -> dict[str, CoresAt]:
    """Capped queue -> its cores on the cluster whose engine keeps ``books``."""
    leaf, needs = books.ledger.leaf, books.needs.cores_in
    out = {}
    for queue, (_, leaves) in capped.items():
        floors = committed = wants = 0
        for name in leaves:
            t = leaf(name)
            floors += t.floor_cores
            committed += t.committed_cores
            wants += needs.get(name, 0)
        out[queue] = CoresAt(floors, max(committed - floors, 0), wants)
    return out


def left_for_floors(capped: Mapping[str, tuple[int, tuple[str, ...]]],
                    counts: Mapping[str, Mapping[str, CoresAt]], here: str
                    ) -> dict[str, tuple[int, int]]:
    """Capped queue -> (its cap, the floors on every cluster but ``here``): admission on
    ``here`` fills the cap with floors beside those (``admission_checks.under_max_cores``)."""
    return {queue: (cap, sum(c[queue].floors for n, c in counts.items() if n != here))
            for queue, (cap, _) in capped.items()}


def caps(capped: Mapping[str, tuple[int, tuple[str, ...]]],
         counts: Mapping[str, Mapping[str, CoresAt]], names: Sequence[str], here: str,
         mine: Mapping[str, CoresAt], last: Mapping[str, int]) -> dict[str, int]:
    """Capped queue -> the cap arbitration on ``here`` works to this step (the header), for
    the queues whose apps want more than their cap over every cluster (the others' caps
    stand: the tree arbitration divides is then the engine's own, and keeps its sums).
    ``mine`` is ``here``'s own count as it stands after this step's admission; ``counts`` the
    others' (``names``: the listed order, which breaks the split's ties); ``last``: the caps
    it gave ``here`` at its last step. A cap given stands while it still holds this
    cluster's floors and share and is no higher than what the others leave unheld: a moving
    cap divides every leaf below it again and moves their grants, so it moves only when
    this cluster's apps are owed more, or another's take room this one was left."""
    out = {}
    for queue, (cap, _) in capped.items():
        at = {n: mine[queue] if n == here else counts[n][queue] for n in names if n in counts
              or n == here}
        if sum(c.floors + max(c.above, c.wants) for c in at.values()) <= cap:
            continue  # all its apps want fits under it: each cluster may grant them all
        room = max(cap - sum(c.floors for c in at.values()), 0)
        share = water_fill(room, {n: c.wants for n, c in at.items()})[here]
        unused = room - sum(c.above for n, c in at.items() if n != here)
        others = sum(c.floors for n, c in at.items() if n != here)
        floors = min(at[here].floors, max(cap - others, 0))
        was = last.get(queue)
        unheld = cap - sum(c.floors + c.above for n, c in at.items() if n != here)
        if was is not None and floors + share <= was <= unheld:
            out[queue] = was
        else:
            out[queue] = floors + max(share, unused, 0)
    return out


def water_fill(room: int, wants: Mapping[str, int]) -> dict[str, int]:
    """``room`` whole cores split between ``wants`` max-min fairly: the one wanting least gets
    all it wants or an even part; a core left over goes to the first in ``wants``' order."""
    out = dict.fromkeys(wants, 0)
    todo = [n for n, w in wants.items() if w > 0]
    while todo and room > 0:
        even = room // len(todo)
        if even == 0:
            for n in todo[:room]:
                out[n] += 1
            break
        still = []
        for n in todo:
            give = min(even, wants[n] - out[n])
            out[n] += give
            room -= give
            if out[n] < wants[n]:
                still.append(n)
        todo = still
    return out
