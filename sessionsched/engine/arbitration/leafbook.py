"""One leaf queue's claims for the incremental arbiter (``incremental.Arbiter``): running
sums over them, and the leaf's last result, kept up to date claim by claim.
"""

from __future__ import annotations

from collections.abc import Iterable

from sortedcontainers import SortedList

from ...model import Policy, Resources
from ...model.custom import Custom, combine, scaled
from .drf import ClaimInputs, DomLeaf
from .fairleaf import FairLeaf
from .greedy import GreedyLeaf
from .greedy_budget import BudgetGreedyLeaf
from .policies import Claim, by_priority_then_seq


class LeafBook:
    """One leaf's claims, running sums over them, and its last result.

    A leaf whose cores cover every claim's want is *sated*: every policy gives each claim its
    want, so the result is kept claim by claim (``sate``: only the claims set since, if the
    last result was sated too). Otherwise the result is kept up to date by the leaf's
    ``GreedyLeaf`` (``fifo``, ``priority``: only the claims whose result moves are walked) or
    recomputed whole (``fairshare``: from its ``FairLeaf``, prepared once for the claims as
    they stand, so a leaf whose cores alone moved only rounds again; a leaf whose users' past
    usage decays: ``users.divide_leaf``).
    ``used_*`` and the claims below their want (in ``below``, which the arbiter's leaves
    share) follow the result claim by claim either way. When phase 1 cuts floors, the arbiter
    sets the cut claims here with their floors as cut: to the book they are claims like any
    other."""

    def __init__(self, below: BelowWant) -> None:
        self.below = below
        self._mine: dict[str, tuple[tuple, int]] = {}  # this leaf's in ``below``: key, cores
        self.claims: dict[str, Claim] = {}
        self._order = SortedList()  # rank keys of the claims, kept as they change
        self._ranked: list[Claim] | None = []  # claims in rank order, laid out when asked
        self.version = 0
        self.floor_cores = 0
        self.floor_mem_mib = 0
        self.want_cores = 0
        self.want_mem_mib = 0
        self.want_custom: Custom = ()  # custom resources of the wanted executors (``drf``)
        self.floor_custom: Custom = ()  # and of the floors
        self.want_custom_cores = 0  # the cores of the wanted executors that ask for one
        self.used_custom: Custom = ()  # custom resources of the result's executors
        self._want: tuple[int, tuple[Resources, int, Custom]] | None = None  # ``dom_want``
        # (cores, version, policy, users' past): what the result was computed for
        self.key: tuple | None = None
        self.result: dict[str, int] = {}
        self.greedy: GreedyLeaf | None = None
        self._fair: FairLeaf | None = None  # a fairshare leaf's sweep, for ``_fair_version``
        self._fair_version = -1
        self._dom: DomLeaf | None = None  # a fairshare leaf's by dominant share (``drf``)
        self._dom_version = -1
        self._dom_claims: ClaimInputs = {}  # each claim's figures for ``_dom`` (``drf``)
        self.used_cores = 0
        self.used_mem_mib = 0
        self.sated = False  # the result was set by ``sate``
        self._since: dict[str, None] = {}  # claims set or dropped since the last result

    def add(self, c: Claim, sign: int = 1) -> None:
        if sign > 0:
            self.claims[c.app_id] = c
            self._order.add(by_priority_then_seq(c))
            if self.greedy is not None:
                self.greedy.changed(None, c)
        else:
            del self.claims[c.app_id]
            self._order.remove(by_priority_then_seq(c))
            self._unresult(c)
            if self.greedy is not None:
                self.greedy.changed(c, None)
        self._sum(c, sign)

    def replace(self, old: Claim, new: Claim) -> None:
        """``add(old, -1)`` then ``add(new)`` for a claim whose rank is the same (its want or
        floor changed): its place in the rank order stays."""
        self.claims[new.app_id] = new
        self._unresult(old)
        if self.greedy is not None:
            self.greedy.changed(old, new)
        self._sum(old, -1)
        self._sum(new, 1)

    def _unresult(self, c: Claim) -> None:
        n = self.result.pop(c.app_id, None)  # so that a claim set again counts as changed
        if n is not None:
            self._count(c, n, -1)

    def _sum(self, c: Claim, sign: int) -> None:
        self.floor_cores += sign * c.floor * c.executor.cores
        self.floor_mem_mib += sign * c.floor * c.executor.mem_mib
        self.want_cores += sign * c.want * c.executor.cores
        self.want_mem_mib += sign * c.want * c.executor.mem_mib
        if c.executor.custom:
            self.want_custom = combine(self.want_custom, scaled(c.executor.custom, c.want), sign)
            self.want_custom_cores += sign * c.want * c.executor.cores
            self.floor_custom = combine(self.floor_custom, scaled(c.executor.custom, c.floor),
                                        sign)
        self.version += 1
        self._ranked = None
        self._since[c.app_id] = None

    def dom_want(self) -> tuple[Resources, int, Custom]:
        """The leaf's wants as ``drf_tree.Want``: the wanted executors summed, the cores of those
        that ask for a custom resource, the floors' custom resources (the same tuple while
        the claims stand)."""
        w = self._want
        if w is None or w[0] != self.version:
            w = self._want = (self.version, (
                Resources(self.want_cores, self.want_mem_mib, self.want_custom),
                self.want_custom_cores, self.floor_custom))
        return w[1]

    def _count(self, c: Claim, n: int, sign: int) -> None:
        """Put a claim's result ``n`` into the sums (``sign`` 1) or take it out (-1)."""
        size = c.executor
        self.used_cores += sign * n * size.cores
        self.used_mem_mib += sign * n * size.mem_mib
        if size.custom:
            self.used_custom = combine(self.used_custom, scaled(size.custom, n), sign)
        if n < c.want:
            if sign > 0:
                entry = self._mine[c.app_id] = (by_priority_then_seq(c), size.cores)
                self.below.add(*entry)
            else:
                self.below.remove(*self._mine.pop(c.app_id))

    @property
    def has_below(self) -> bool:
        """Some claim's result is below its want."""
        return bool(self._mine)

    def ranked(self) -> list[Claim]:
        if self._ranked is None:
            claims = self.claims
            self._ranked = [claims[k[2]] for k in self._order]
        return self._ranked

    def walk(self, key: tuple, policy: Policy, cores: int) -> list[str]:
        """Bring a greedy leaf's result up to date (``GreedyLeaf``); returns the apps whose
        result changed."""
        g = self.greedy
        if g is None or g.policy is not policy or type(g) is not GreedyLeaf:
            self._forget()
            g = self.greedy = GreedyLeaf(policy, self.claims, self.result)
        return self._walked(key, g.walk(cores, self.floor_cores))

    def walk_within(self, key: tuple, policy: Policy, cores: int,
                    budget: dict[str, int]) -> list[str]:
        """``walk`` within the leaf's custom ``budget`` too (``BudgetGreedyLeaf``: what
        ``custom_limits.greedy`` gives)."""
        names = tuple(sorted(budget))
        g = self.greedy
        if g is None or g.policy is not policy or getattr(g, "names", None) != names:
            self._forget()
            g = self.greedy = BudgetGreedyLeaf(policy, self.claims, self.result, names)
        return self._walked(key, g.walk_within(cores, self.floor_cores, budget,
                                               self.floor_custom))

    def _walked(self, key: tuple, walked) -> list[str]:
        changed = []
        for c, was, n in walked:
            if was is not None:
                self._count(c, was, -1)
            self._count(c, n, 1)
            changed.append(c.app_id)
        self._kept(key, sated=False)
        return changed

    def divide_fair(self, key: tuple, cores: int) -> list[str]:
        """A ``fairshare`` leaf's result for ``cores`` (``policies.fairshare``), from the
        leaf's ``FairLeaf``, prepared again only when its claims changed; returns the apps
        whose result changed."""
        if self._fair is None or self._fair_version != self.version:
            self._fair = FairLeaf(self.ranked())
            self._fair_version = self.version
        return self.settle(key, self._fair.divide(cores), self.ranked())

    def dom_leaf(self, totals: Resources) -> DomLeaf:
        """The leaf's ``drf.DomLeaf`` for its claims as they stand, prepared again only when
        they or the totals changed."""
        d = self._dom
        if d is None or self._dom_version != self.version or d.totals != totals:
            kept = self._dom_claims
            if d is None or d.totals != totals or len(kept) > 2 * len(self.claims) + 8:
                kept = self._dom_claims = {}  # other totals, or many claims gone since
            d = self._dom = DomLeaf(self.ranked(), totals, kept)
            self._dom_version = self.version
        return d

    def sate(self, key: tuple) -> list[str]:
        """The leaf's cores cover every claim's want: every claim gets its want (``fifo`` and
        ``priority`` serve each in turn up to its want and never run out; ``fairshare``'s
        water-fill gives everyone its ``hi``). Looks only at the claims set since the last
        result if that one was sated too - the common case on a cluster with room, where a
        leaf's cores follow its wants and change with every claim - else at every claim.
        Returns the apps whose result changed."""
        claims, result = self.claims, self.result
        changed = []
        for app_id in self._since if self.sated else claims:
            c = claims.get(app_id)
            if c is None:
                continue  # dropped: its result went with it (``add``)
            was = result.get(app_id)
            if was != c.want:
                if was is not None:
                    self._count(c, was, -1)
                result[app_id] = c.want
                self._count(c, c.want, 1)
                changed.append(app_id)
        if self.greedy is not None:
            self.greedy.forget_walk()  # its walk no longer matches the results
        self._kept(key, sated=True)
        return changed

    def _kept(self, key: tuple | None, sated: bool) -> None:
        self.key = key
        self.sated = sated
        self._since = {}

    def settle(self, key: tuple | None, result: dict[str, int],
               ranked: Iterable[Claim]) -> list[str]:
        """Keep a result computed whole from ``ranked`` (the claims, in rank order); returns
        the apps whose result differs from the last one (or that are new). Only those are
        counted again: the last result holds no claim set or dropped since (``_unresult``),
        so what it still holds was counted for the claims as they are."""
        last = self.result
        if self.greedy is not None or not result:  # count everything again (or nothing)
            self._forget()
            last_counted: dict[str, int] = {}
        else:
            last_counted = last
        changed = []
        count = self._count
        for c in ranked:
            app_id = c.app_id
            n = result[app_id]
            was = last_counted.get(app_id)
            if was != n:
                if was is not None:
                    count(c, was, -1)
                count(c, n, 1)
            if last.get(app_id) != n:
                changed.append(app_id)
        self.result = result
        self._kept(key, sated=False)
        return changed

    def _forget(self) -> None:
        """Drop the result, its sums and the greedy walk (the result is recomputed whole)."""
        self.greedy = None
        self.result = {}
        for entry in self._mine.values():
            self.below.remove(*entry)
        self._mine = {}
        self.used_cores = self.used_mem_mib = 0
        self.used_custom = ()


class BelowWant:
    """The claims whose result is below their want in every leaf of an arbiter, by rank key,
    and how many of each executor size: each leaf's book keeps its own here as it counts its
    results, so phase 4 reads them in rank order from the first (``exact_remainders``), not by
    merging every leaf's each cycle (behind several clusters every cluster's engine has a
    share of every leaf)."""

    __slots__ = ("keys", "sizes")

    def __init__(self) -> None:
        self.keys = SortedList()  # rank keys (the app id last)
        self.sizes: dict[int, int] = {}  # executor cores -> claims below their want

    def add(self, key: tuple, cores: int) -> None:
        self.keys.add(key)
        self.sizes[cores] = self.sizes.get(cores, 0) + 1

    def remove(self, key: tuple, cores: int) -> None:
        self.keys.remove(key)
        left = self.sizes[cores] - 1
        if left:
            self.sizes[cores] = left
        else:
            del self.sizes[cores]
