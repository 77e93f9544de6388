"""A queue's caps and guarantees over every cluster together: ``max_cores`` (``cores``:
admission's floors and arbitration), ``max_resources`` and ``min_resources`` (``resources``:
arbitration), for the federation.

What each cluster's capped queues hold is counted after its engine's step and kept until its
next (an engine changes only its own apps); before an engine steps it is told what the others
hold, through its ``max_cores_left`` and its ``arbitration_caps``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...model import Queue
from ...model.custom import Custom
from ..app_books import Books
from ..scheduler import Scheduler
from ..tree import Caps
from .cores import CoresAt, capped_queues, caps, cores_in, left_for_floors
from .resources import (
    counted,
    custom_caps,
    custom_guarantees,
    custom_in,
    resource_capped,
    resource_guaranteed,
)


class SharedCaps:
    def __init__(self, root: Queue, names: Sequence[str]) -> None:
        self.names = list(names)
        many = len(self.names) > 1  # one cluster holds its caps itself
        self.cores_capped = capped_queues(root) if many else {}
        self.custom_capped = resource_capped(root) if many else {}
        self.guaranteed = resource_guaranteed(root) if many else {}
        self.counted = counted(self.custom_capped, self.guaranteed)  # custom_in's queues
        self.cores: dict[str, dict[str, CoresAt]] = {}  # cluster -> capped queue -> its cores
        self.custom: dict[str, dict[str, dict[str, CoresAt]]] = {}  # ... -> resource -> amounts
        # cluster -> the caps its arbitration was given last (a cap given stands: ``cores.caps``)
        self.given: dict[str, dict[str, int]] = {}
        self.given_custom: dict[str, dict[str, Custom]] = {}

    @property
    def on(self) -> bool:
        return bool(self.cores_capped or self.counted)

    def before(self, name: str, engines: Mapping[str, Scheduler]) -> None:
        """Cluster ``name``'s engine is told, before it steps, what the capped queues hold on
        the others (each counted after its last step; all of them at the first)."""
        if not self.on:
            return
        for n, e in engines.items():
            if n not in self.cores:
                self.after(n, e)
        engine = engines[name]
        engine.max_cores_left = left_for_floors(self.cores_capped, self.cores, name)

        def arbitration_caps(books: Books) -> Caps:
            given = self.given[name] = caps(
                self.cores_capped, self.cores, self.names, name,
                cores_in(books, self.cores_capped), self.given.get(name, {}))
            mine = custom_in(books, self.counted)
            custom = self.given_custom[name] = custom_caps(
                self.custom_capped, self.custom, self.names, name, mine,
                self.given_custom.get(name, {}))
            return Caps(given, custom, custom_guarantees(self.guaranteed, self.custom,
                                                         self.names, name, mine))

        engine.arbitration_caps = arbitration_caps

    def after(self, name: str, engine: Scheduler) -> None:
        """Cluster ``name``'s capped queues as its engine's step left them."""
        if self.on:
            self.cores[name] = cores_in(engine.books, self.cores_capped)
            self.custom[name] = custom_in(engine.books, self.counted)
