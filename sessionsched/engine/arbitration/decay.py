"""Decayed fair share: each queue's (and each user's, in a fairshare leaf) past usage, decayed
by the queue's ``usage_half_life``, that admission and arbitration add to current usage.

Formula. For a queue with half-life H seconds (its own ``usage_half_life`` or its parent's),
the engine keeps D, an exponentially weighted average of the cores the queue used, in cores:

    D(t) = D(t0) * 2^(-(t - t0) / H) + c * (1 - 2^(-(t - t0) / H))

where c is the queue's usage since t0, the last time it changed. Usage is what admission
already orders by (``ledger.contribution``): executor cores held or granted plus the cores of
its apps' drivers; a parent's is the sum of its children's. So a queue that held c cores for
a long time has D = c, one idle for one half-life has half its D left. The same per user of a
``fairshare`` leaf that decays, from the executor cores held or granted to the user's apps
(no drivers: the users share the leaf's executor cores, and a user's twenty client-mode
drivers must not cost her executors).

How it is used (D is in cores, so it adds to current usage):
  1. admission (``admission.plan_admissions``): the child queue with the lowest
     (usage + D) / weight first;
  2. arbitration (phase 2, ``oracle.divide`` and ``parents.divide``): the water-fill
     between sibling queues levels (cores given + D) / weight, each queue's cores still
     between its guarantee and its want (``policies.water_fill`` with ``past``);
  3. in a fairshare leaf that decays, apps are grouped by user and the users levelled the same
     way with equal weights, then each user's apps share the user's cores by the leaf's
     ``fairshare`` (``users.divide_leaf``): one user's twenty apps get what another user's one
     app gets (Spark's fair scheduler pools: users equal "regardless of how many concurrent
     jobs they have").

Two teams of equal weight, B busy on all C cores for long and A idle: D_B = C, D_A = 0. When
both want everything, A gets (C + D_B - D_A) / 2 and B the rest, so the gap G = D_B - D_A
follows dG/dt = -2 ln2 / H x G: it halves every H / 2, and the two get equal shares (to within
one executor of size s) after (H / 2) x log2(C / s).

Kept exactly and cheaply: between two changes of a key's usage D follows the formula, so the
book stores (D(t0), t0, c) per key and rewrites it only when c changes (``observe``, at the end
of a step, at the step's time); ``read(now)`` evaluates every key, O(queues + users), never
O(apps). Entries whose usage is 0 and whose D fell below ``FORGOTTEN_CORES`` are dropped. The
service stores the changed entries with each cycle and restores them on start and takeover
(``changed``, ``load``): D is durable, and a gap while no scheduler ran counts as usage c.

Behind several clusters each cluster's engine keeps the D of its own apps, and reads the sum
over every cluster (``beside``: the other engines' books, set by the federation): D is the
queue tree's, as queue order is, so a queue that used one cluster is behind on the others too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...model import Policy, Queue

FORGOTTEN_CORES = 0.01  # D below this, with no usage, is forgotten (the user list stays short)


@dataclass(frozen=True, slots=True)
class Decayed:
    """One key's state: ``past_cores`` = D at ``since_s``, ``cores`` used since then."""

    past_cores: float
    since_s: float
    cores: float

    def at(self, now: float, half_life_s: float) -> float:
        if now <= self.since_s:
            return self.past_cores
        keep = 2.0 ** (-(now - self.since_s) / half_life_s)
        return self.past_cores * keep + self.cores * (1.0 - keep)


QUEUE, USER = "queue", "user"
Key = tuple[str, str, str]  # (QUEUE, queue, ""), or (USER, leaf, user) in a fairshare leaf


@dataclass(frozen=True, slots=True)
class Past:
    """D at one time: per queue that decays, and per fairshare leaf that decays its users'
    (a leaf named in ``users`` shares by user, whatever the users' D)."""

    queues: Mapping[str, float] = field(default_factory=dict)
    users: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


NO_PAST = Past()


def half_lives(root: Queue) -> dict[str, float]:
    """Queue name -> half-life, for the queues that decay: a queue's own
    ``usage_half_life_s``, or (None) its parent's; 0 is off."""
    out: dict[str, float] = {}

    def walk(q: Queue, inherited: float | None) -> None:
        own = inherited if q.usage_half_life_s is None else q.usage_half_life_s
        if own:
            out[q.name] = own
        for c in q.children:
            walk(c, own)

    walk(root, None)
    return out


class DecayBook:
    """The decayed usage of every queue and user that decays (module doc)."""

    def __init__(self) -> None:
        self.half_life: dict[str, float] = {}
        self.user_leaves: frozenset[str] = frozenset()  # fairshare leaves that decay
        self.entries: dict[Key, Decayed] = {}
        self._changed: set[Key] = set()  # since the last ``changed()``
        self._app: dict[str, tuple[Key, int]] = {}  # app -> (its user key, its usage)
        self.user_usage: dict[Key, int] = {}  # (USER, leaf, user) -> cores used now
        self._users_moved: set[Key] = set()  # user usage changed since the last ``observe``
        self.last = NO_PAST  # what the last ``read`` gave (the self-check reuses it)
        self.beside: tuple[DecayBook, ...] = ()  # the other clusters' books (module doc)

    @property
    def on(self) -> bool:
        return bool(self.half_life)

    def set_tree(self, root: Queue) -> None:
        """A new queue tree: which queues decay and with what half-life. Entries of queues that
        no longer decay are dropped; the others keep their D (a new half-life applies from
        their last change on)."""
        self.half_life = half_lives(root)
        if not self.half_life:
            self.last = NO_PAST
        self.user_leaves = frozenset(
            q.name for q in root.leaves() if q.name in self.half_life
            and q.policy is Policy.FAIRSHARE)
        for key in [k for k in self.entries if not self._decays(k)]:
            del self.entries[key]
            self._changed.add(key)

    def _decays(self, key: Key) -> bool:
        kind, queue, _ = key
        return queue in (self.user_leaves if kind == USER else self.half_life)

    # --- usage ----------------------------------------------------------------------------

    def refresh_app(self, app_id: str, leaf: str, user: str, cores: int) -> None:
        """An app's usage now (0 once it left the books), counted to its user if its leaf
        shares by user. O(1)."""
        old = self._app.get(app_id)
        key = (USER, leaf, user)
        if old is not None:
            if old == (key, cores):
                return
            self._add_user(*old, sign=-1)
            del self._app[app_id]
        if cores and leaf in self.user_leaves:
            self._app[app_id] = (key, cores)
            self._add_user(key, cores, 1)

    def _add_user(self, key: Key, cores: int, sign: int) -> None:
        n = self.user_usage.get(key, 0) + sign * cores
        if n:
            self.user_usage[key] = n
        else:
            del self.user_usage[key]
        self._users_moved.add(key)

    def observe(self, now: float, queue_usage: Mapping[str, float]) -> None:
        """End of a step at ``now``: each decaying queue's usage (``queue_usage``, every queue
        that decays) and each user's whose usage moved start a new stretch at ``now``."""
        for name in self.half_life:
            self._set((QUEUE, name, ""), now, queue_usage.get(name, 0.0))
        for key in self._users_moved:
            if key[1] in self.user_leaves:
                self._set(key, now, float(self.user_usage.get(key, 0)))
        self._users_moved = set()

    def _set(self, key: Key, now: float, cores: float) -> None:
        e = self.entries.get(key)
        if e is None:
            if cores:
                self.entries[key] = Decayed(0.0, now, cores)
                self._changed.add(key)
        elif e.cores != cores:
            self.entries[key] = Decayed(e.at(now, self.half_life[key[1]]), now, cores)
            self._changed.add(key)

    # --- reading --------------------------------------------------------------------------

    def read(self, now: float) -> Past:
        """D of every queue and user at ``now`` (kept in ``last``). Forgets entries without
        usage whose D fell below ``FORGOTTEN_CORES``. O(queues + users)."""
        if not self.entries and not self.user_leaves and not any(b.entries for b in self.beside):
            self.last = NO_PAST
            return NO_PAST
        queues: dict[str, float] = {}
        users: dict[str, dict[str, float]] = {leaf: {} for leaf in self.user_leaves}
        for key, e in list(self.entries.items()):
            kind, queue, user = key
            d = e.at(now, self.half_life[queue])
            if not e.cores and d < FORGOTTEN_CORES:
                del self.entries[key]
                self._changed.add(key)
                continue
            if kind == USER:
                users[queue][user] = d
            else:
                queues[queue] = d
        for book in self.beside:  # theirs at ``now``, read only: each forgets its own
            for (kind, queue, user), e in book.entries.items():
                d = e.at(now, book.half_life[queue])
                if kind == QUEUE:
                    queues[queue] = queues.get(queue, 0.0) + d
                elif queue in users:
                    users[queue][user] = users[queue].get(user, 0.0) + d
        self.last = Past(queues, users)
        return self.last

    # --- durability -----------------------------------------------------------------------

    def changed(self) -> list[tuple[Key, Decayed | None]]:
        """The entries set or dropped (None) since the last call: what the store writes."""
        out = [(k, self.entries.get(k)) for k in sorted(self._changed)]
        self._changed = set()
        return out

    def load(self, entries: Iterable[tuple[Key, Decayed]]) -> None:
        """The stored entries, after a restart or a takeover (only those that still decay)."""
        for key, e in entries:
            if self._decays(key):
                self.entries[key] = e
                self._changed.add(key)  # written again: a rewind's engine owes the store them
                if key[0] == USER:
                    self._users_moved.add(key)  # its usage is recounted at the first step
