"""``FairLeaf`` (a fairshare leaf's sweep prepared once) divides as ``policies.fairshare`` for
any cores; the Arbiter that keeps one per leaf gives the from-scratch targets over histories
where the leaves' cores move while their claims stay (the capacity moving every cycle, as while
a gang reserves), and where a leaf's policy swaps to a greedy one and back."""

import random

import pytest

from sessionsched.engine.arbitration import Arbiter, Claim, compute_targets, fairshare
from sessionsched.engine.arbitration.fairleaf import FairLeaf
from sessionsched.engine.arbitration.policies import by_priority_then_seq
from sessionsched.model import Resources
from tests.engine.engine_builders import leaf, next_claim, parent, tree


def _c(app_id, priority, floor, want, cores=1, seq=None):
    return Claim(app_id, "q", priority, seq if seq is not None else int(app_id[1:]),
                 Resources(cores, 1024), floor, want)


CASES = {
    "no claims": ([], [0, 5]),
    "no cores": ([_c("a1", 1, 0, 3), _c("a2", 5, 0, 3)], [0]),
    "floors above the cores": ([_c("a1", 1, 2, 4), _c("a2", 5, 3, 3, cores=2)], [1, 4, 7]),
    "cores cover every want": ([_c("a1", 1, 0, 3), _c("a2", 5, 1, 2)], [5, 9]),
    "shares by priority, remainders in rank order": (
        [_c("a1", 1, 0, 9), _c("a2", 2, 0, 9), _c("a3", 3, 0, 9, cores=2)], list(range(1, 40))),
    "equal priorities, one executor size apart": (
        [_c("a1", 7, 1, 5, cores=4), _c("a2", 7, 0, 5, cores=3), _c("a3", 7, 0, 1)],
        list(range(4, 36))),
}


@pytest.mark.parametrize("claims,cores_list", CASES.values(), ids=CASES.keys())
def test_divides_as_fairshare(claims, cores_list):
    ranked = sorted(claims, key=by_priority_then_seq)
    prepared = FairLeaf(ranked)
    for cores in cores_list:
        assert prepared.divide(cores) == fairshare(cores, ranked), cores


@pytest.mark.parametrize("seed", range(20), ids=[f"random claims {s}" for s in range(20)])
def test_random_claims_divide_as_fairshare_for_any_cores(seed):
    rnd = random.Random(seed)
    for _ in range(50):
        n = rnd.randint(1, 40)
        claims = []
        for i in range(n):
            floor = rnd.choice((0, 0, 1, 2))
            claims.append(_c(f"a{i}", rnd.choice((1, 3, 7, 9000, rnd.randint(1, 10000))),
                             floor, max(floor, rnd.randint(0, 12)),
                             cores=rnd.choice((1, 2, 3, 4))))
        ranked = sorted(claims, key=by_priority_then_seq)
        prepared = FairLeaf(ranked)
        for cores in range(0, 12 * n, max(1, n // 4)):
            assert prepared.divide(cores) == fairshare(cores, ranked), cores


def _root(swapped: bool):
    """Two fairshare leaves and a fifo one; ``swapped``: the first fairshare leaf is a
    priority leaf (its book's results then come from a greedy walk)."""
    return tree(
        parent("a", leaf("fair", policy="priority" if swapped else "fairshare"),
               leaf("fifo", policy="fifo")),
        parent("b", leaf("fair2", policy="fairshare", weight=2)),
    )


LEAVES = ["root.a.fair", "root.a.fifo", "root.b.fair2"]


@pytest.mark.parametrize("seed", range(20), ids=[f"cores moving, history {s}" for s in range(20)])
def test_arbiter_histories_with_cores_moving_match_the_targets_from_scratch(seed):
    rnd = random.Random(seed)
    arbiter = Arbiter()
    claims: dict[str, Claim] = {}
    seq = 0
    cores = rnd.randint(20, 80)
    swapped = False
    for _ in range(60):
        for _ in range(rnd.choice((0, 0, 0, 1, 3))):  # most cycles: the claims stay
            picked, seq = next_claim(rnd, claims, arbiter, LEAVES, seq)
            if picked is None:
                continue
            app_id, s, queue = picked
            want = rnd.randint(0, 8)
            c = Claim(app_id, queue, rnd.choice((1, 3, 5000, 9000)), s,
                      Resources(rnd.choice((1, 2, 3)), 1024), rnd.randint(0, min(want, 1)), want)
            claims[app_id] = c
            arbiter.set_claim(c)
        cores = max(cores + rnd.randint(-3, 3), 0)  # every cycle, by a little
        if rnd.random() < 0.1:
            swapped = not swapped
        root = _root(swapped)
        capacity = Resources(cores, 1 << 30)
        before = dict(arbiter.targets)
        moved = arbiter.compute(root, capacity)
        fresh = compute_targets(root, capacity, list(claims.values()))
        assert arbiter.targets == fresh
        assert set(moved) == {a for a, n in fresh.items() if before.get(a) != n}
