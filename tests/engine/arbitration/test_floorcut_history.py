"""Phase 1 kept between cycles (``arbitration.floor_cut.FloorCut``): over random histories its
cut is the from-scratch one (``oracle.phase1_floors``) every cycle, and the Arbiter that holds
the cut claims in its leaf books gives the oracle's targets and reports exactly the apps whose
target moved.

The histories are made to move the boundary (the first claim not given its whole floor) both
ways: many small floors so the fitting prefix is long, the cores and memory nudged up and down
around the floors' sums, claims whose floor, priority (their place in the order) or
``guaranteed`` changes on either side of the boundary, executors of several memory sizes (0 MiB
among them: not held back by memory, even when the memory left is below 0), and the queue
tree swapped for one whose ``max_cores`` bind elsewhere (the prefix's sums are kept by leaf,
the caps read from the tree of the cycle).
"""

import random
from dataclasses import replace

import pytest

from sessionsched.engine.arbitration import Arbiter, Claim, compute_targets
from sessionsched.engine.arbitration.floor_cut import FloorCut
from sessionsched.engine.arbitration.oracle import phase1_floors
from sessionsched.engine.arbitration.policies import by_priority_then_seq
from sessionsched.engine.tree import QueueTree
from sessionsched.model import Resources
from tests.engine.engine_builders import leaf, parent, tree

LEAVES = ["root.a.fifo", "root.a.prio", "root.b.fair", "root.b.capped"]
UNCAPPED = tree(
    parent("a", leaf("fifo", policy="fifo"), leaf("prio", policy="priority", weight=2)),
    parent("b", leaf("fair", policy="fairshare"), leaf("capped", policy="priority")),
)
CAPPED = tree(  # the same leaves; caps on a parent and on two leaves
    parent("a", leaf("fifo", policy="fifo", max_cores=9), leaf("prio", policy="priority"),
           max_cores=25),
    parent("b", leaf("fair", policy="fairshare"), leaf("capped", policy="priority",
                                                       max_cores=6)),
)
SIZES = [Resources(1, 1024), Resources(2, 1024), Resources(1, 3072), Resources(2, 0)]

# name -> (claims to start with, claims changed per cycle, how far the capacity moves, trees,
# the lowest capacity: below 0 where in-cluster drivers hold more than a shrunk cluster has)
CASES = {
    "long prefix, capacity nudged": (60, 2, 3, [UNCAPPED], 0),
    "long prefix, many changes a cycle": (60, 8, 3, [UNCAPPED], 0),
    "capacity swings widely": (40, 3, 25, [UNCAPPED], 0),
    "caps bind, tree swapped": (50, 3, 4, [UNCAPPED, CAPPED], 0),
    "caps bind, small cluster": (20, 2, 2, [CAPPED], 0),
    "capacity below 0 at times": (15, 2, 6, [UNCAPPED, CAPPED], -8),
}


def _claim(rnd: random.Random, app_id: str, seq: int, queue: str) -> Claim:
    want = rnd.randint(0, 5)
    return Claim(app_id, queue, rnd.choice((1, 5000, 9000)), seq, rnd.choice(SIZES),
                 rnd.randint(0, min(want, 2)), want, guaranteed=rnd.random() < 0.3)


def _history(seed: int, case: str):
    """Yields (root, capacity, claims) cycle after cycle, with the claim changes of each."""
    start, per_cycle, swing, roots, lowest = CASES[case]
    rnd = random.Random(seed)
    claims: dict[str, Claim] = {}
    seq = 0
    changes: list[tuple[str, Claim | None]] = []  # the first cycle's: every claim
    for _ in range(start):
        seq += 1
        c = _claim(rnd, f"app{seq:03d}", seq, rnd.choice(LEAVES))
        claims[c.app_id] = c
        changes.append((c.app_id, c))
    floor_cores = sum(c.floor * c.executor.cores for c in claims.values())
    floor_mem = sum(c.floor * c.executor.mem_mib for c in claims.values())
    cores, mem = floor_cores * 9 // 10, floor_mem * 9 // 10  # a cut from the first cycle
    root = roots[0]
    for _ in range(60):
        for _ in range(rnd.randint(0, per_cycle)):
            op = rnd.random()
            if op < 0.15 and claims:
                app_id = rnd.choice(sorted(claims))
                del claims[app_id]
                changes.append((app_id, None))
                continue
            if op < 0.45 and claims:  # the same claim, another floor/want (same place)
                old = claims[rnd.choice(sorted(claims))]
                want = rnd.randint(0, 5)
                c = replace(old, want=want, floor=rnd.randint(0, min(want, 2)))
            elif op < 0.7 and claims:  # another priority or guaranteed: another place
                old = claims[rnd.choice(sorted(claims))]
                c = replace(old, priority=rnd.choice((1, 5000, 9000)),
                            guaranteed=rnd.random() < 0.5)
            else:
                seq += 1
                c = _claim(rnd, f"app{seq:03d}", seq, rnd.choice(LEAVES))
            claims[c.app_id] = c
            changes.append((c.app_id, c))
        if rnd.random() < 0.7:
            cores = max(cores + rnd.randint(-swing, swing), lowest)
        if rnd.random() < 0.7:
            mem = max(mem + rnd.randint(-swing, swing) * 1024, lowest * 1024)
        if rnd.random() < 0.2:
            root = rnd.choice(roots)
        yield root, Resources(cores, mem), dict(claims), changes
        changes = []


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", range(8))
def test_the_kept_cut_is_the_cut_from_scratch(case, seed):
    cut = FloorCut()
    fed: dict[str, Claim] = {}
    cuts = 0
    for root, capacity, claims, changes in _history(seed, case):
        for app_id, c in changes:
            if app_id in fed:
                cut.add(fed.pop(app_id), -1)
            if c is not None:
                cut.add(c)
                fed[app_id] = c
        t = QueueTree.of(root)
        ranked = sorted(claims.values(), key=by_priority_then_seq)
        fresh, was_cut = phase1_floors(t, capacity, ranked)
        assert cut.fits(t, capacity) is not was_cut
        if not was_cut:
            continue
        cuts += 1
        got = cut.cut(t, capacity)
        assert got.floors == {a: n for a, n in fresh.items() if n != claims[a].floor}
        given = [(fresh[c.app_id], c.executor) for c in ranked]
        assert got.left == Resources(capacity.cores - sum(n * s.cores for n, s in given),
                                     capacity.mem_mib - sum(n * s.mem_mib for n, s in given))
    assert cuts >= 10  # the history is about cuts: most cycles have one


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", range(4))
def test_the_arbiter_over_kept_cuts_gives_the_targets_from_scratch(case, seed):
    arbiter = Arbiter()
    for root, capacity, claims, changes in _history(seed, case):
        for app_id, c in changes:
            if c is None:
                arbiter.drop(app_id)
            else:
                arbiter.set_claim(c)
        before = dict(arbiter.targets)
        moved = arbiter.compute(root, capacity)
        fresh = compute_targets(root, capacity, list(claims.values()))
        assert arbiter.targets == fresh
        assert set(moved) == {a for a, n in fresh.items() if before.get(a) != n}


def test_cycles_with_no_core_above_the_cut_floors_move_only_the_claims_set_between_them():
    # Floors of 4 x 2 cores on 5 cores: the third is cut to 1, the fourth to 0, and no core is
    # left above the floors (a burst's drivers took the room), so every target is its floor as
    # cut, cycle after cycle; what moves in between is the claims set then and the cut they
    # shift.
    root = UNCAPPED
    claims = {f"app{i}": Claim(f"app{i}", "root.a.fifo", 5000, i, Resources(1, 1024), 2, 4)
              for i in range(1, 5)}
    arbiter = Arbiter()
    for c in claims.values():
        arbiter.set_claim(c)
    capacity = Resources(5, 64 * 1024)
    assert sorted(arbiter.compute(root, capacity)) == ["app1", "app2", "app3", "app4"]
    assert arbiter.targets == {"app1": 2, "app2": 2, "app3": 1, "app4": 0}
    assert arbiter.compute(root, capacity) == []  # nothing set: nothing moves
    claims["app1"] = replace(claims["app1"], floor=1, want=1)  # gives a core back...
    arbiter.set_claim(claims["app1"])
    assert sorted(arbiter.compute(root, capacity)) == ["app1", "app3"]
    assert arbiter.targets == {"app1": 1, "app2": 2, "app3": 2, "app4": 0}  # ...to the cut one
    assert arbiter.targets == compute_targets(root, capacity, list(claims.values()))
    arbiter.drop("app2")
    assert arbiter.compute(root, capacity) == ["app4"]  # 5 cores of floors on 5: not cut
    assert arbiter.targets == {"app1": 1, "app3": 2, "app4": 2}
