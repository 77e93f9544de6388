"""The Arbiter kept up to date over a history gives the from-scratch targets every cycle, and
reports exactly the apps whose target moved - with leaves going from having room for every
want (``sated``: only changed claims are looked at) to short of cores and back."""

import random
from dataclasses import replace

import pytest

from sessionsched.engine.arbitration import Arbiter, Claim, compute_targets
from sessionsched.model import Resources
from tests.engine.engine_builders import leaf, next_claim, parent, tree

ROOT = tree(
    parent("a", leaf("fifo", policy="fifo"), leaf("prio", policy="priority", weight=2)),
    parent("b", leaf("fair", policy="fairshare"), leaf("capped", policy="priority", max_cores=6)),
)
LEAVES = ["root.a.fifo", "root.a.prio", "root.b.fair", "root.b.capped"]


@pytest.mark.parametrize("seed", range(30), ids=[f"random history {s}" for s in range(30)])
def test_random_histories_match_the_targets_from_scratch(seed):
    _play(random.Random(seed), floors_cut=False)


@pytest.mark.parametrize("seed", range(30), ids=[f"floors cut, history {s}" for s in range(30)])
def test_histories_where_floors_are_cut_match_the_targets_from_scratch(seed):
    """Floors (some guaranteed) often more than the cores or the memory: phase 1 cuts them in
    some leaves, and the leaves it cut nothing in keep their results from cycle to cycle."""
    _play(random.Random(seed), floors_cut=True)


def _play(rnd: random.Random, floors_cut: bool) -> None:
    arbiter = Arbiter()
    claims: dict[str, Claim] = {}
    seq = 0
    cores = rnd.randint(0, 60)
    memory = rnd.randint(0, 40) * 1024 if floors_cut else 1 << 30
    for _ in range(50):
        # Where floors are cut, often one claim changes and the capacity stays: another
        # leaf's floors are then cut anew while its cores stay.
        for _ in range(rnd.randint(0, 2 if floors_cut else 5)):
            picked, seq = next_claim(rnd, claims, arbiter, LEAVES, seq)
            if picked is None:
                continue
            app_id, s, queue = picked
            want = rnd.randint(0, 6)
            floor = rnd.randint(0, min(want, 3 if floors_cut else 1))
            c = Claim(app_id, queue, rnd.choice((1, 5000, 9000)), s,
                      Resources(rnd.choice((1, 2)), 1024), floor, want,
                      guaranteed=floors_cut and rnd.random() < 0.3)
            claims[app_id] = c
            arbiter.set_claim(c)
        if rnd.random() < 0.5:  # often enough to move leaves in and out of room for all
            cores = max(cores + rnd.randint(-15, 15), 0)
        if floors_cut and rnd.random() < 0.3:
            memory = rnd.randint(0, 40) * 1024
        capacity = Resources(cores, memory)
        before = dict(arbiter.targets)
        moved = arbiter.compute(ROOT, capacity)
        fresh = compute_targets(ROOT, capacity, list(claims.values()))
        assert arbiter.targets == fresh
        assert set(moved) == {a for a, n in fresh.items() if before.get(a) != n}


def test_the_remainders_follow_each_leafs_first_claim_below_its_want():
    """Phase 4 keeps each leaf's first claim below its want from one compute to the next:
    a claim there becoming short again, ending, or moving up in rank must move the remainder
    (one core left after the leaves' 2 + 2)."""
    root = tree(leaf("A", policy="priority"), leaf("B", policy="priority"))
    claims: dict[str, Claim] = {}
    arbiter = Arbiter()

    def step(*changed: Claim, drop: str | None = None) -> dict[str, int]:
        for c in changed:
            claims[c.app_id] = c
            arbiter.set_claim(c)
        if drop is not None:
            del claims[drop]
            arbiter.drop(drop)
        arbiter.compute(root, Resources(5, 1 << 30))
        assert arbiter.targets == compute_targets(root, Resources(5, 1 << 30),
                                                  list(claims.values()))
        return arbiter.targets

    def claim(app_id, queue, priority, seq, want):
        return Claim(app_id, f"root.{queue}", priority, seq, Resources(1, 1024), 0, want)

    a1, a2, b = claim("a1", "A", 9000, 1, 1), claim("a2", "A", 5000, 2, 9), claim(
        "b", "B", 7000, 3, 9)
    assert step(a1, a2, b) == {"a1": 1, "a2": 1, "b": 3}  # A's first short claim: a2
    assert step(replace(a1, want=9)) == {"a1": 3, "a2": 0, "b": 2}  # a1, ahead, short again
    assert step(drop="a1") == {"a2": 2, "b": 3}  # A's first short claim ended
    assert step(replace(a2, priority=9500)) == {"a2": 3, "b": 2}  # and a2 moved up past b


def test_a_parents_split_follows_the_wants_below_it():
    """Phase 2 keeps each parent's split while the figures it came from stand: a want that
    moves under one parent moves the split above it, and the other parent's share."""
    root = tree(parent("a", leaf("x"), leaf("y")), parent("b", leaf("z")))
    arbiter = Arbiter()
    claims = {c.app_id: c for c in (
        Claim("x1", "root.a.x", 5000, 1, Resources(1, 1024), 0, 2),
        Claim("y1", "root.a.y", 5000, 2, Resources(1, 1024), 0, 2),
        Claim("z1", "root.b.z", 5000, 3, Resources(1, 1024), 0, 10))}

    def step(*changed: Claim) -> dict[str, int]:
        for c in changed:
            claims[c.app_id] = c
            arbiter.set_claim(c)
        arbiter.compute(root, Resources(12, 1 << 30))
        assert arbiter.targets == compute_targets(root, Resources(12, 1 << 30),
                                                  list(claims.values()))
        return dict(arbiter.targets)

    assert step(*claims.values()) == {"x1": 2, "y1": 2, "z1": 8}
    assert step() == {"x1": 2, "y1": 2, "z1": 8}  # nothing moved: the splits kept
    assert step(replace(claims["x1"], want=6)) == {"x1": 4, "y1": 2, "z1": 6}  # a: 6, b: 6
    assert step(replace(claims["z1"], want=2)) == {"x1": 6, "y1": 2, "z1": 2}
