"""BudgetGreedyLeaf: a fifo or priority leaf's walk within a custom budget, kept up to date,
gives ``custom_limits.greedy``'s results from scratch, and reports exactly what moved."""

import random

import pytest

from sessionsched.engine.arbitration.custom_limits import greedy
from sessionsched.engine.arbitration.greedy import ORDERS
from sessionsched.engine.arbitration.greedy_budget import BudgetGreedyLeaf
from sessionsched.engine.arbitration.policies import Claim, by_priority_then_seq
from sessionsched.model import Policy, Resources
from sessionsched.model.custom import combine, scaled


def claim(app_id, seq, *, want, floor, priority, cores, gpus, fpgas):
    custom = tuple((k, v) for k, v in (("fpga", fpgas), ("gpu", gpus)) if v)
    return Claim(app_id, "root.q", priority, seq, Resources(cores, 1024, custom), floor, want)


@pytest.mark.parametrize("seed", range(40), ids=[f"random history {s}" for s in range(40)])
def test_random_histories_match_the_walk_from_scratch(seed):
    rnd = random.Random(seed)
    policy = rnd.choice([Policy.FIFO, Policy.PRIORITY])
    names = rnd.choice([("gpu",), ("fpga", "gpu")])
    claims: dict[str, Claim] = {}
    result: dict[str, int] = {}
    leaf = BudgetGreedyLeaf(policy, claims, result, names)
    seq = 0
    cores = rnd.randint(0, 40)
    budget = {k: rnd.randint(0, 10) for k in names}
    for _ in range(60):
        for _ in range(rnd.randint(0, 4)):
            op = rnd.random()
            if op < 0.25 and claims:
                old = claims.pop(rnd.choice(sorted(claims)))
                result.pop(old.app_id, None)
                leaf.changed(old, None)
                continue
            if op < 0.6 and claims:
                app_id = rnd.choice(sorted(claims))
                s = claims[app_id].seq
            else:
                seq += 1
                app_id, s = f"app{seq:03d}", seq
            want = rnd.randint(0, 6)
            new = claim(app_id, s, want=want, floor=rnd.randint(0, want),
                        priority=rnd.choice((1, 5000, 9000)), cores=rnd.choice((1, 2, 3)),
                        gpus=rnd.choice((0, 0, 1, 2)), fpgas=rnd.choice((0, 1)))
            old = claims.get(app_id)
            if old is not None:
                result.pop(app_id, None)
                leaf.changed(old, None)
            claims[app_id] = new
            leaf.changed(None, new)
        if rnd.random() < 0.4:
            cores = max(cores + rnd.randint(-8, 8), 0)
        if rnd.random() < 0.4:
            budget = {k: max(v + rnd.randint(-3, 3), 0) for k, v in budget.items()}
        floor_cores = sum(c.floor * c.executor.cores for c in claims.values())
        floor_custom: tuple = ()
        for c in claims.values():
            floor_custom = combine(floor_custom, scaled(c.executor.custom, c.floor), 1)
        before = dict(result)
        moved = {c.app_id for c, _, _ in leaf.walk_within(cores, floor_cores, budget,
                                                          floor_custom)}
        ranked = sorted(claims.values(), key=by_priority_then_seq)
        expected = greedy(cores, ranked, budget,
                          ORDERS[policy] if policy is Policy.FIFO else None)
        assert result == expected
        assert moved == {a for a, n in result.items() if before.get(a) != n}
