"""A queue's depth caps: ``max_queued_apps`` and ``max_queued_apps_per_user`` (inherited down
the queue tree, changed by plans: the leaf as the engine runs it now). A submission that would
queue one app too many is refused at once - 429, one line naming the cap and the queue - before
anything is stored (EMR Serverless's ``maxInQueueJobRuns``).

What is counted: the apps queued (ACCEPTED) in the leaf as the service shows them (``queued``:
the engine's queued apps and those committed that no cycle has stepped yet), plus the
submissions checked here whose write is not done yet (in flight), so two submissions at once
cannot both take the last place. ``DepthCaps.take`` gives a ticket that the caller gives back
once the write is done, committed or not: from then on the service's count holds the app, or
the app is not there. The count may be one high for an instant (the app committed and its
ticket not given back yet: both count it), never low: a cap is never exceeded.

The user is the submission's, as the operations port has made it: the caller's with tokens on,
else ``spark.sessionsched.user`` (or ``anonymous``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from sessionsched.intake.guard import Refused
from sessionsched.model import Queue

Ticket = Callable[[], None]


def _nothing() -> None:
    pass


def leaf_named(root: Queue, name: str) -> Queue | None:
    """The queue called ``name`` (a full path) in ``root``'s tree, or None."""
    return next((q for q in root.walk() if q.name == name), None)


class DepthCaps:
    """The in-flight submissions per leaf and per (leaf, user); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._leaf: Counter[str] = Counter()
        self._user: Counter[tuple[str, str]] = Counter()

    def take(self, leaf: Queue | None, user: str,
             queued: Callable[[str | None], tuple[int, int]]) -> Ticket:
        """A place in ``leaf`` for one more app of ``user``, or ``Refused`` (429) naming the
        cap that is full. ``queued(user)``: (apps queued in the leaf, of them ``user``'s; the
        user is None when no per-user cap needs it), read under the lock that hands out
        places. The ticket gives the place back (once)."""
        if leaf is None or (leaf.max_queued_apps is None
                            and leaf.max_queued_apps_per_user is None):
            return _nothing
        name, key = leaf.name, (leaf.name, user)
        with self._lock:
            total, mine = queued(user if leaf.max_queued_apps_per_user is not None else None)
            total += self._leaf[name]
            mine += self._user[key]
            cap = leaf.max_queued_apps
            if cap is not None and total >= cap:
                raise Refused(f"queue {name} already holds {total} queued app(s), its "
                              f"max_queued_apps is {cap}; submit again once some have started",
                              429)
            cap = leaf.max_queued_apps_per_user
            if cap is not None and mine >= cap:
                raise Refused(f"user {user} already has {mine} app(s) queued in {name}, its "
                              f"max_queued_apps_per_user is {cap}; submit again once some have "
                              "started", 429)
            self._leaf[name] += 1
            self._user[key] += 1
        given_back = threading.Event()

        def give_back() -> None:
            with self._lock:
                if given_back.is_set():
                    return
                given_back.set()
                self._leaf[name] -= 1
                self._user[key] -= 1
                if not self._leaf[name]:
                    del self._leaf[name]
                if not self._user[key]:
                    del self._user[key]

        return give_back

    def in_flight(self) -> int:
        """Places handed out and not given back (tests)."""
        with self._lock:
            return sum(self._leaf.values())
