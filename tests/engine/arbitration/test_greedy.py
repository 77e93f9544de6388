"""GreedyLeaf: fifo and priority kept up to date give the from-scratch policy's results, and
walk only where results move (a cycle's work follows what changed:
docs/design/bounded-cycles.md)."""

import random

import pytest

from sessionsched.engine.arbitration.greedy import GreedyLeaf
from sessionsched.engine.arbitration.policies import LEAF_POLICIES, Claim, by_priority_then_seq
from sessionsched.model import Policy, Resources


def claim(app_id, seq, *, want, priority=5000, floor=0, cores=1):
    return Claim(app_id, "root.q", priority, seq, Resources(cores, 1024), floor, want)


class Leaf:
    """A GreedyLeaf with the book-keeping its owner does (claims, floors), for the tests."""

    def __init__(self, policy: Policy, claims=()):
        self.policy = policy
        self.claims: dict[str, Claim] = {}
        self.result: dict[str, int] = {}
        self.g = GreedyLeaf(policy, self.claims, self.result)
        for c in claims:
            self.set(c)

    def set(self, c: Claim) -> None:
        old = self.claims.get(c.app_id)
        if old is not None:
            self.drop(old.app_id)
        self.claims[c.app_id] = c
        self.g.changed(None, c)

    def drop(self, app_id: str) -> None:
        old = self.claims.pop(app_id)
        self.result.pop(app_id, None)
        self.g.changed(old, None)

    def walk(self, cores: int) -> dict[str, tuple]:
        floors = sum(c.floor * c.executor.cores for c in self.claims.values())
        return {c.app_id: (was, n) for c, was, n in self.g.walk(cores, floors)}

    def from_scratch(self, cores: int) -> dict[str, int]:
        ranked = sorted(self.claims.values(), key=by_priority_then_seq)
        return LEAF_POLICIES[self.policy](cores, ranked)


def five(policy=Policy.PRIORITY):
    # a..e want 2 each, one-core executors, in this order (rank and submission alike)
    return Leaf(policy, [claim(a, i, want=2) for i, a in enumerate("abcde")])


@pytest.mark.parametrize(
    "change, cores, moved",
    [
        # 5 cores: a 2, b 2, c 1 (the cores run out at c), d 0, e 0
        (lambda leaf: None, 5, {}),
        # (a claim set again has no result until the walk: it is reported, with None before)
        (lambda leaf: leaf.set(claim("e", 4, want=1)), 5, {"e": (None, 0)}),  # still nothing
        (lambda leaf: leaf.set(claim("a", 0, want=1)), 5, {"a": (None, 1), "c": (1, 2)}),
        (lambda leaf: leaf.drop("b"), 5, {"c": (1, 2), "d": (0, 1)}),
        (lambda leaf: leaf.set(claim("f", 5, want=3, priority=9000)), 5,
         {"f": (None, 3), "b": (2, 0), "c": (1, 0)}),  # f outranks all: 5 - 3 = 2 left for a
        (lambda leaf: None, 7, {"c": (1, 2), "d": (0, 1)}),  # 2 more cores: c and d move
        (lambda leaf: None, 3, {"b": (2, 1), "c": (1, 0)}),
        (lambda leaf: leaf.set(claim("d", 3, want=2, floor=1)), 5,
         {"d": (None, 1), "c": (1, 0)}),  # d's floor comes first: 4 cores for the walk
    ],
    ids=[
        "nothing changed: nothing moves",
        "a claim behind where the cores ran out changes: nothing else moves",
        "the head wants less: the app where the cores ran out gets it",
        "a claim leaves: the ones behind it move up",
        "a new claim outranks everyone: it is served first",
        "the leaf's cores grow: only apps where the cores run out move",
        "the leaf's cores shrink: the same, the other way",
        "a floor rises: floors first, the rest from what is left",
    ],
)
def test_only_results_that_move_are_reported(change, cores, moved):
    leaf = five()
    assert leaf.walk(5) == {a: (None, n) for a, n in
                            {"a": 2, "b": 2, "c": 1, "d": 0, "e": 0}.items()}
    change(leaf)
    assert leaf.walk(cores) == moved
    assert leaf.result == leaf.from_scratch(cores)


def test_fifo_walks_in_submission_order():
    leaf = Leaf(Policy.FIFO, [claim("late", 2, want=3, priority=9000), claim("early", 1, want=3)])
    leaf.walk(4)
    assert leaf.result == {"early": 3, "late": 1}  # fifo: submission order, not priority
    leaf.set(claim("early", 1, want=1))
    assert leaf.walk(4) == {"early": (None, 1), "late": (1, 3)}


def test_a_big_executor_that_does_not_fit_is_passed_over():
    leaf = Leaf(Policy.PRIORITY, [claim("a", 1, want=2, cores=4), claim("b", 2, want=3)])
    leaf.walk(5)
    assert leaf.result == {"a": 1, "b": 1}  # a's second 4-core executor does not fit in 1
    leaf.set(claim("b", 2, want=3, cores=2))
    assert leaf.walk(5) == {"b": (None, 0)}
    assert leaf.result == leaf.from_scratch(5)


@pytest.mark.parametrize("seed", range(40), ids=[f"random history {s}" for s in range(40)])
def test_random_histories_match_the_policy_from_scratch(seed):
    """Claims set, replaced and dropped, floors, sizes and cores changing: after every walk
    the result is what the from-scratch policy gives, and a walk reports exactly the apps
    whose result differs from before it."""
    rnd = random.Random(seed)
    policy = rnd.choice([Policy.FIFO, Policy.PRIORITY])
    leaf = Leaf(policy)
    seq = 0
    cores = rnd.randint(0, 40)
    for _ in range(60):
        for _ in range(rnd.randint(0, 4)):
            op = rnd.random()
            if op < 0.25 and leaf.claims:
                leaf.drop(rnd.choice(sorted(leaf.claims)))
                continue
            if op < 0.6 and leaf.claims:
                app_id = rnd.choice(sorted(leaf.claims))
                s = leaf.claims[app_id].seq
            else:
                seq += 1
                app_id, s = f"app{seq:03d}", seq
            want = rnd.randint(0, 6)
            leaf.set(claim(app_id, s, want=want, floor=rnd.randint(0, want),
                           priority=rnd.choice((1, 5000, 9000)), cores=rnd.choice((1, 2, 3))))
        if rnd.random() < 0.4:
            cores = max(cores + rnd.randint(-8, 8), 0)
        before = dict(leaf.result)
        moved = leaf.walk(cores)
        assert leaf.result == leaf.from_scratch(cores)
        assert set(moved) == {a for a, n in leaf.result.items() if before.get(a) != n}
