"""The inbox: what happened between two scheduling cycles, as engine events.

HTTP handlers, agents and the cycle itself never step the engine: they ``put`` an event, with
who waits for the cycle that takes it (a kill's HTTP request returns once it is done) and an
optional note for the audit trail (who asked for a kill). Thread-safe.
"""

from __future__ import annotations

import queue
from concurrent.futures import Future
from dataclasses import dataclass

from sessionsched.engine.events import Event


@dataclass
class Item:
    event: Event
    done: Future | None = None
    note: str | None = None


class Inbox:
    def __init__(self) -> None:
        self._items: queue.SimpleQueue[Item] = queue.SimpleQueue()

    def put(self, event: Event, done: Future | None = None, note: str | None = None) -> None:
        self._items.put(Item(event, done, note))

    def drain(self, limit: int | None = None) -> list[Item]:
        """The items put so far, oldest first; at most ``limit`` of them (the rest stay, in
        order, for the next drain: the engine's event slice, ``engine.budget``)."""
        items: list[Item] = []
        while limit is None or len(items) < limit:
            try:
                items.append(self._items.get_nowait())
            except queue.Empty:
                break
        return items
