"""The incremental arbiter: the targets of the phases in ``arbitration`` (the package's header)
for a changing set of claims, reusing last cycle's work.

Why incremental: at 10k running apps a from-scratch pass costs more than a scheduling cycle
may. Phase 2 is cheap above the leaves (one water-fill per parent), and a leaf's result depends
only on its whole cores, its claims and its policy, so ``Arbiter`` keeps each leaf's result
(``leafbook.LeafBook``) and recomputes a leaf only when one of those changed; a leaf whose cores
cover every want (a cluster with room: its cores then follow its wants) only looks at the
claims that changed; a ``fifo``/``priority`` leaf walks from the first changed claim
(``greedy``); a ``fairshare`` leaf whose cores alone moved only rounds again (``fairleaf``).
Phase 1 normally has nothing to cut (checked from running sums); when it has,
``floor_cut.FloorCut`` walks only the claims it cuts, and the leaf books hold each cut
claim with its floor as cut (a claim whose cut moved is set in its book again: to its leaf,
phase 1's cut is one more change of claims). Phases 3 and 4 (``memory_and_remainders``) go
over every claim in a cycle where floors or memory were cut, unless the cut left no core above
the floors: then every target is its floor as cut, and only the claims set since the last such
cycle are looked at. ``oracle`` computes the same
targets from scratch, independently: the tests hold the two to each other over random histories.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from sortedcontainers import SortedList

from ...model import Policy, Queue, Resources
from ..tree import QueueTree
from . import drf, drf_tree
from .decay import NO_PAST, Past
from .floor_cut import Cut, FloorCut
from .greedy import ORDERS as GREEDY_ORDERS
from .leafbook import BelowWant, LeafBook
from .memory_and_remainders import exact_remainders, left_after, memory_cut
from .parents import Split, divide
from .policies import Claim, by_priority_then_seq
from .users import divide_leaf

_EPS = 1e-9


class Summed:
    """Two figures of every leaf book (``of``), summed, kept by the difference of the books
    that moved: a sum over every leaf each compute is a cost per leaf, which behind several
    clusters every cluster's engine pays."""

    def __init__(self, of: Callable[[LeafBook], tuple[int, int]]):
        self.of = of
        self.cores = self.mem_mib = 0
        self._each: dict[str, tuple[int, int]] = {}

    def update(self, books: Mapping[str, LeafBook], moved: Iterable[str]) -> None:
        each, of = self._each, self.of
        for name in moved:
            book = books.get(name)
            new = (0, 0) if book is None else of(book)
            old = each.get(name, (0, 0))
            if new != old:
                each[name] = new
                self.cores += new[0] - old[0]
                self.mem_mib += new[1] - old[1]


class Arbiter:
    """Targets for a changing set of claims, recomputing only the leaves that changed.

    Feed it with ``set_claim``/``drop``; ``compute`` returns the app ids whose target changed
    and leaves every target in ``targets``.
    """

    def __init__(self) -> None:
        self._claims: dict[str, Claim] = {}
        self._held: dict[str, Claim] = {}  # the claims as their books hold them: floors as cut
        self._ranked = SortedList()  # rank keys of all claims, for the phases that go by rank
        self._books: dict[str, LeafBook] = {}
        self._below = BelowWant()  # every book's claims below their want (phase 4)
        self._floors = FloorCut()  # the claims with a floor: phase 1
        self._cut: dict[str, int] = {}  # floors as phase 1 last cut them, as the books hold them
        self.targets: dict[str, int] = {}
        self._bonus: dict[str, int] = {}  # remainders given by the last compute
        self._exact = True  # targets == leaf results + bonus (no phase 1/3 cut last time)
        # Every target is its claim's floor as cut (phase 1 left no core above the floors last
        # time), and the claims whose held form was set since: only theirs can move while it
        # stays so (``_finish_cut``).
        self._at_floors = False
        self._set_since: set[str] = set()
        # parent -> (what its split was worked out from, its children's shares and custom
        # budgets): ``parents.divide``
        self._shares: dict[str, Split] = {}
        # ``_node_sums`` as last worked out (tree, low, high, wants), and the leaves moved since
        self._sums: tuple[QueueTree, dict[str, int], dict[str, int],
                          dict[str, drf_tree.Want] | None] | None = None
        self._moved: set[str] = set()
        self._cores_of: dict[str, float] = {}  # each leaf's cores, as phase 2 last gave them
        self._read = (True, True)  # whether the last compute read users' past, dominant shares
        # The last compute's totals of the dominant shares and each queue's custom budget
        # (``drf_tree.Dom``): a leaf whose budget stands since divides as it did.
        self._dom_was: tuple[Resources, dict[str, dict[str, float]]] | None = None
        # The books' wanted and (leaf results') used cores and memory, summed (``Summed``).
        self._wanted = Summed(lambda b: (b.want_cores, b.want_mem_mib))
        self._used = Summed(lambda b: (b.used_cores, b.used_mem_mib))

    def claims_in(self, leaf: str) -> Mapping[str, Claim]:
        """The claims of a leaf's apps, by app id (as last set: read, not to be changed)."""
        book = self._books.get(leaf)
        return {} if book is None else book.claims

    def set_claim(self, c: Claim) -> None:
        old = self._claims.get(c.app_id)
        if old == c:
            return
        if (old is not None and old.queue == c.queue
                and by_priority_then_seq(old) == by_priority_then_seq(c)):
            # Its want or floor changed (the common case): its place in each order stays.
            self._floors.add(old, -1)
            self._floors.add(c)
            self._claims[c.app_id] = c
            self._moved.add(c.queue)
            self._books[c.queue].replace(self._held[c.app_id], c)
            self._held[c.app_id] = c
            self._set_since.add(c.app_id)
            self._cut.pop(c.app_id, None)  # its book holds it uncut: the next cut sees it anew
            return
        if old is not None:
            self._remove(old)
        self._claims[c.app_id] = self._held[c.app_id] = c
        self._set_since.add(c.app_id)
        self._ranked.add(by_priority_then_seq(c))
        book = self._books.get(c.queue)
        if book is None:  # not ``setdefault``: a LeafBook (and its SortedList) is dear to build
            book = self._books[c.queue] = LeafBook(self._below)
        book.add(c)
        self._moved.add(c.queue)
        self._floors.add(c)

    def drop(self, app_id: str) -> None:
        old = self._claims.pop(app_id, None)
        if old is not None:
            self._remove(old)
        self.targets.pop(app_id, None)
        self._bonus.pop(app_id, None)

    def _remove(self, c: Claim) -> None:
        self._ranked.remove(by_priority_then_seq(c))
        self._books[c.queue].add(self._held.pop(c.app_id), -1)  # as its book holds it
        self._moved.add(c.queue)
        self._cut.pop(c.app_id, None)
        self._floors.add(c, -1)

    # --- the computation ----------------------------------------------------------------

    def compute(self, root: Queue, capacity: Resources, past: Past = NO_PAST,
                totals: Resources | None = None) -> list[str]:
        """Targets for every claim (phases 1-4); returns the ids whose target changed.
        ``past``: decayed past usage (``decay``), the same the oracle is given; ``totals``:
        what dominant shares are shares of (``drf``; None: ``capacity``)."""
        tree = QueueTree.of(root)
        books = self._books
        # For the tree the sums were kept for, only a leaf moved since can have new claims.
        look = (self._moved if self._sums is not None and self._sums[0] is tree
                else books.keys())
        unknown = sorted(q for q in look if q not in tree.path and books[q].claims)
        if unknown:
            raise ValueError(f"claims in queues that are not leaves: {', '.join(unknown)}")
        cut = None if self._floors.fits(tree, capacity) else self._floors.cut(tree, capacity)
        self._set_cut({} if cut is None else cut.floors)
        moved = self._moved  # the leaves whose claims moved since the last compute
        low, high, wants, fresh = self._node_sums(tree, drf.applies(capacity))
        self._wanted.update(books, moved)
        budget = min(self._cores_memory_backs(capacity), high[root.name])
        # the DRF context on a cluster with custom resources (``drf``)
        dom = None if wants is None else drf_tree.Dom(capacity, wants, totals)
        cores_of = divide(tree, low, high, max(budget, low[root.name], 0), past, dom,
                           self._shares, fresh)
        last, self._cores_of = self._cores_of, cores_of
        # Which leaves can have another result: with the tree as it was, and no users' past
        # read now or last time, only those whose claims or cores moved - and those whose
        # wants ask a custom resource, while dominant shares are read (now or last time).
        read, was = (bool(past.users), dom is not None), self._read
        self._read = read
        only = None
        if fresh is not None and not read[0] and not was[0]:
            only = moved.union([n for n, v in cores_of.items() if last.get(n) != v],
                               [n for n in last if n not in cores_of])
            if read[1] or was[1]:
                only.update(self._budget_moved(dom))
        self._dom_was = None if dom is None else (dom.totals, dom.budgets)
        recomputed = self._leaf_results(tree, cores_of, past, dom, only)
        self._used.update(books, books.keys() if only is None else only)
        if cut is None and self._used.mem_mib <= capacity.mem_mib:
            changed = self._finish_exact(tree, capacity, recomputed)
            self._at_floors = False
        else:
            changed = self._finish_cut(tree, capacity, cut)
        self._set_since = set()
        return changed

    def _budget_moved(self, dom: drf_tree.Dom | None) -> list[str]:
        """The leaves asking a custom resource whose division may have moved though their
        claims and cores did not: every one where dominant shares were not read both now and
        last time, or their totals moved; else those whose custom budget moved (a leaf's
        division reads nothing else of ``dom``: ``_leaf_results``)."""
        books, was = self._books, self._dom_was
        if dom is None or was is None or was[0] != dom.totals:
            return [n for n, b in books.items() if b.want_custom]
        now, last = dom.budgets, was[1]
        return [n for n, b in books.items() if b.want_custom and now.get(n) != last.get(n)]

    def _set_cut(self, floors: dict[str, int]) -> None:
        """Set in their books, with the floor phase 1 gave them, the claims whose cut moved
        since the last compute (their leaves' results are recomputed: a new version)."""
        last, claims, held, books = self._cut, self._claims, self._held, self._books
        if not floors and not last:
            return
        for app_id in [*last, *(a for a in floors if a not in last)]:  # in a fixed order
            n = floors.get(app_id)
            if last.get(app_id) == n:
                continue
            c = claims[app_id]
            now = c if n is None else replace(c, floor=n)
            books[c.queue].replace(held[app_id], now)
            self._moved.add(c.queue)
            held[app_id] = now
            self._set_since.add(app_id)
        self._cut = floors

    def _cores_memory_backs(self, capacity: Resources) -> float:
        """The cores phase 2 divides: all of them, or when the wanted executors need more
        memory than the cluster has, the cores its memory backs at their mean MiB per core.
        Dividing cores that memory cannot back would leave phase 3 to cut the shares in rank
        order: a fairshare queue would be run as fifo whenever memory is the scarce part."""
        want_cores, want_mem = self._wanted.cores, self._wanted.mem_mib
        if want_mem <= capacity.mem_mib or want_cores <= 0:
            return capacity.cores
        return min(capacity.cores, capacity.mem_mib * want_cores / want_mem)

    def _node_sums(self, tree: QueueTree, custom: bool = False
                   ) -> tuple[dict[str, int], dict[str, int], dict[str, drf_tree.Want] | None,
                              set[str] | None]:
        """Per queue: (floor cores as phase 1 gave them, wanted cores cut to max_cores and at
        least the floors, and where ``custom`` resources count its wants as ``drf_tree.Want``, else
        None), and the queues worked out again (None: all). Kept between computes: worked
        out again on the paths of the leaves whose claims moved since (``_moved``), the whole
        tree for another tree."""
        kept, moved = self._sums, self._moved
        above: set[str] | None = None
        if kept is not None and kept[0] is tree and (kept[3] is not None or not custom):
            low, high, wants = kept[1], kept[2], kept[3] if custom else None
            paths = tree.path
            above = {q.name for leaf in moved if leaf in paths for q in paths[leaf]}
            names = [n for n in tree.postorder if n in above] if above else ()
        else:
            low, high, wants = {}, {}, {} if custom else None
            names = tree.postorder
        for name in names:
            q = tree.node[name]
            kids = tree.children[name]
            if kids:
                f = sum(low[k] for k in kids)
                w = sum(high[k] for k in kids)
                if wants is not None:
                    wants[name] = drf_tree.summed([wants[k] for k in kids])
            else:
                book = self._books.get(name)
                if book is None:
                    f = w = 0
                else:
                    w = book.want_cores
                    f = book.floor_cores
                if wants is not None:
                    wants[name] = drf_tree.NO_WANT if book is None else book.dom_want()
            if q.max_cores is not None:
                w = min(w, q.max_cores)
            low[name] = f
            high[name] = max(w, f)
        self._sums, self._moved = (tree, low, high, wants), set()
        return low, high, wants, above

    def _leaf_results(
        self, tree: QueueTree, cores_of: dict[str, float], past: Past,
        dom: drf_tree.Dom | None = None, only: set[str] | None = None,
    ) -> list[str]:
        """Recompute the leaves whose cores, claims (phase 1's cut among them), policy or
        users' past usage changed; returns the apps whose leaf result changed. ``only``: the
        leaves that can have changed, when known (the others' keys are as they were)."""
        changed: list[str] = []
        books = self._books
        for name, book in (books.items() if only is None else
                           [(n, b) for n, b in books.items() if n in only]):
            if not book.claims:
                if book.result or book.has_below or book.used_cores or book.used_mem_mib:
                    book.settle(None, {}, ())  # its last apps left: forget their results
                continue
            cores = max(math.floor(cores_of.get(name, 0.0) + _EPS), 0)
            policy = tree.node[name].policy
            users = past.users.get(name)
            key = (cores, book.version, policy,
                   None if users is None else tuple(sorted(users.items())))
            if dom is not None and book.want_custom:
                budget, bound, seen = dom.leaf_view(name, book.want_custom)
                # A fifo or priority leaf whose GPUs are no limit divides as if it had none
                # (below, walked as always); a fairshare leaf by dominant share either way.
                if bound or policy is Policy.FAIRSHARE:
                    key = (*key, dom.totals, seen)
                    if book.key == key:
                        continue
                    if cores >= book.want_cores and not bound:
                        changed += book.sate(key)
                        continue
                    if policy in GREEDY_ORDERS and users is None:  # kept within the budget
                        changed += book.walk_within(key, policy, cores, dict(seen))
                        continue
                    claims = book.ranked()
                    if policy is Policy.FAIRSHARE and users is None:
                        result = book.dom_leaf(dom.totals).divide(cores, budget)
                    else:
                        result = divide_leaf(policy, cores, claims, users, (dom.totals, budget))
                    changed += book.settle(key, result, claims)
                    continue
            if book.key == key:
                continue
            if cores >= book.want_cores:
                changed += book.sate(key)
                continue
            if policy in GREEDY_ORDERS and users is None:
                changed += book.walk(key, policy, cores)
                continue
            if policy is Policy.FAIRSHARE and users is None:
                changed += book.divide_fair(key, cores)
                continue
            claims = book.ranked()
            result = divide_leaf(policy, cores, claims, users)
            changed += book.settle(key, result, claims)
        return changed

    def _finish_exact(
        self, tree: QueueTree, capacity: Resources, recomputed: list[str]
    ) -> list[str]:
        """Phase 4 when nothing was cut: targets are leaf results plus remainders.
        ``recomputed``: the apps whose leaf result changed this time."""
        books = self._books
        left_cores = capacity.cores - self._used.cores
        left_mem = capacity.mem_mib - self._used.mem_mib
        bonus = exact_remainders(tree, left_cores, left_mem, books, self._below, self._held,
                                 left_after(_custom_counted(capacity),
                                            ((Resources(0, 0, b.used_custom), 1)
                                             for b in books.values() if b.used_custom)))
        if self._exact:
            candidates: Iterable[str] = set(recomputed) | self._bonus.keys() | bonus.keys()
        else:
            candidates = self._claims.keys()
        self._bonus = bonus
        self._exact = True
        claims = self._claims
        return self._update(
            (a, books[claims[a].queue].result[a] + bonus.get(a, 0)) for a in candidates
        )

    def _finish_cut(self, tree: QueueTree, capacity: Resources, cut: Cut | None) -> list[str]:
        """Phases 3 and 4 over every claim (floors or memory were cut this cycle). The leaves'
        results hold the floors as cut (the books hold the cut claims)."""
        if cut is None:
            cores = capacity.cores - self._floors.cores
            mem = capacity.mem_mib - self._floors.mem_mib
        else:
            cores, mem = cut.left.cores, cut.left.mem_mib
        self._exact = False
        if cores <= 0:
            # No core above the floors (a burst's drivers took the room the floors were
            # promised): every executor has a core at least, so none grows past its floor and
            # none takes a remainder; every target is its floor as cut. Only the claims set
            # since the last such cycle can have moved: they alone are looked at.
            held = self._held
            ids = self._set_since if self._at_floors else held.keys()
            self._bonus, self._at_floors = {}, True
            return self._update((a, held[a].floor) for a in ids if a in held)
        self._at_floors = False
        final, bonus = memory_cut(tree, self._ranked, self._held, self._books, cores, mem,
                                  _custom_counted(capacity))
        self._bonus = bonus
        return self._update((a, n + bonus.get(a, 0)) for a, n in final.items())

    def _update(self, pairs: Iterable[tuple[str, int]]) -> list[str]:
        changed = []
        for app_id, n in pairs:
            if self.targets.get(app_id) != n:
                self.targets[app_id] = n
                changed.append(app_id)
        return changed


def _custom_counted(capacity: Resources) -> dict[str, int] | None:
    """The custom resources the remainders must fit in (None: not counted, ``drf.applies``)."""
    return dict(capacity.custom) if drf.applies(capacity) else None
