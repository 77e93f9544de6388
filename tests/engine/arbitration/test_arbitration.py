"""Arbitration: leaf policies, the queue hierarchy, floors, caps, memory, remainders."""

import copy
import itertools
import math

import pytest

from sessionsched.engine import DemandChanged, ExecutorsChanged, PriorityChanged
from sessionsched.engine.arbitration import Claim, compute_targets, water_fill
from sessionsched.model import Resources
from tests.engine.engine_builders import Run, app, leaf, one_queue, parent, set_targets, tree

_seq = itertools.count(1)


def claim(app_id, *, want, priority=5000, floor=0, cores=1, mem_mib=1024, queue="root.q"):
    """A claim; submission order is the order claims are made in."""
    return Claim(app_id, queue, priority, next(_seq), Resources(cores, mem_mib), floor, want)


def targets(root, cores, claims, mem_mib=1 << 30):
    before = copy.deepcopy(claims)
    out = compute_targets(root, Resources(cores, mem_mib), claims)
    assert claims == before  # inputs untouched
    return out


# --- leaf policies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy, cores, claims, expected",
    [
        ("fifo", 10, [claim("a", want=6), claim("b", want=6)], {"a": 6, "b": 4}),
        (
            "fifo",
            5,
            [claim("a", want=2, cores=4), claim("b", want=3)],
            {"a": 1, "b": 1},  # a's second 4-core executor does not fit in 1 core: b gets it
        ),
        (
            "priority",
            10,
            [claim("a", want=6), claim("b", want=6, priority=9000)],
            {"b": 6, "a": 4},
        ),
        (
            "priority",
            10,
            [claim("a", want=10, priority=9000), claim("b", want=3, floor=3, priority=1)],
            {"a": 7, "b": 3},  # floors come first, even under priority
        ),
        ("fairshare", 10, [claim("a", want=10), claim("b", want=10)], {"a": 5, "b": 5}),
        (
            "fairshare",
            12,
            [claim("a", want=20, priority=5000), claim("b", want=20, priority=10000)],
            {"a": 4, "b": 8},  # 12 x 1/3 = 4, 12 x 2/3 = 8
        ),
        (
            "fairshare",
            12,
            [claim("a", want=2), claim("b", want=10), claim("c", want=10)],
            {"a": 2, "b": 5, "c": 5},  # a returns 2 of its 4: (12 - 2) / 2 = 5 each
        ),
        (
            "fairshare",
            7,
            [claim("a", want=9, cores=2), claim("b", want=9, cores=2)],
            {"a": 2, "b": 1},  # 3.5 cores each = 1 executor; 3 left: one more to the older
        ),
        (
            "fairshare",
            7,
            [claim("a", want=9, cores=2), claim("b", want=9, cores=2, priority=5001)],
            {"a": 1, "b": 2},  # the remainder goes by priority first
        ),
        (
            "fairshare",
            10,
            [claim("a", want=10, floor=4), claim("b", want=10)],
            {"a": 5, "b": 5},  # the floor counts inside the fair share, not on top of it
        ),
        (
            "fairshare",
            10,
            [claim("a", want=10, floor=8), claim("b", want=10)],
            {"a": 8, "b": 2},  # a floor above the share is still kept
        ),
    ],
    ids=[
        "fifo: oldest first",
        "fifo: whole executors, a smaller one fills the gap",
        "priority: highest gets all it wants",
        "priority: floors first",
        "fairshare: equal",
        "fairshare: weights follow priority 1:2",
        "fairshare: unused share redistributed",
        "fairshare: remainder by age",
        "fairshare: remainder by priority",
        "fairshare: floor inside the share",
        "fairshare: floor above the share",
    ],
)
def test_leaf_policies(policy, cores, claims, expected):
    assert targets(one_queue(policy=policy), cores, claims) == expected


# --- hierarchy ----------------------------------------------------------------------------


def two_queues(a: dict, b: dict):
    return tree(leaf("A", **a), leaf("B", **b))


@pytest.mark.parametrize(
    "root, want_a, want_b, expected",
    [
        (two_queues({"weight": 3}, {"weight": 1}), 100, 100, {"a": 6, "b": 2}),  # 8 x 3/4, 8 x 1/4
        (two_queues({"max_cores": 2}, {}), 100, 100, {"a": 2, "b": 6}),
        (two_queues({}, {}), 2, 100, {"a": 2, "b": 6}),  # a's unused share goes to b
        (two_queues({"min_share_cores": 6}, {"weight": 3}), 100, 100, {"a": 6, "b": 2}),
        (two_queues({"min_share_cores": 6}, {}), 1, 100, {"a": 1, "b": 7}),
        (two_queues({}, {}), 0, 0, {"a": 0, "b": 0}),
    ],
    ids=[
        "weights 3:1",
        "max_cores caps a queue",
        "water-filling: unused share to the sibling",
        "min_share guaranteed above the weighted share",
        "min_share only as far as the queue wants it",
        "nobody wants anything",
    ],
)
def test_queue_hierarchy(root, want_a, want_b, expected):
    claims = [claim("a", want=want_a, queue="root.A"), claim("b", want=want_b, queue="root.B")]
    assert targets(root, 8, claims) == expected


def test_nested_queues_share_level_by_level():
    root = tree(parent("p", leaf("x"), leaf("y")), leaf("z"))
    claims = [
        claim("x", want=100, queue="root.p.x"),
        claim("y", want=100, queue="root.p.y"),
        claim("z", want=100, queue="root.z"),
    ]
    assert targets(root, 8, claims) == {"x": 2, "y": 2, "z": 4}  # p: 8/2, then 4/2 each


def test_parent_max_cores_caps_its_subtree():
    root = tree(parent("p", leaf("x"), leaf("y"), max_cores=3), leaf("z"))
    claims = [
        claim("x", want=100, queue="root.p.x"),
        claim("y", want=100, queue="root.p.y"),
        claim("z", want=2, queue="root.z"),
    ]
    out = targets(root, 10, claims)
    assert out["x"] + out["y"] == 3 and out["z"] == 2


def test_floors_are_cut_to_a_queues_max_cores():
    root = tree(leaf("A", max_cores=4))
    out = targets(root, 100, [claim("a", want=6, floor=6, queue="root.A")])
    assert out == {"a": 4}


def test_rounding_remainders_cross_queues_by_rank():
    root = two_queues({}, {})
    claims = [
        claim("a", want=9, queue="root.A", priority=9000),
        claim("b", want=9, queue="root.B", priority=1),
    ]
    assert targets(root, 3, claims) == {"a": 2, "b": 1}  # 1.5 cores each: 1 + 1, remainder to a


def test_remainders_respect_max_cores():
    root = tree(leaf("A", max_cores=1), leaf("B"))
    claims = [
        claim("a", want=9, queue="root.A", priority=9000),
        claim("b", want=1, queue="root.B"),
    ]
    assert targets(root, 5, claims) == {"a": 1, "b": 1}  # 3 cores stay unused


# --- floors, caps and memory --------------------------------------------------------------


@pytest.mark.parametrize(
    "cores, claims, expected",
    [
        (5, [claim("a", want=3, floor=3), claim("b", want=10)], {"a": 3, "b": 2}),
        (
            2,
            [claim("a", want=3, floor=3, priority=1), claim("b", want=3, floor=3, priority=9)],
            {"a": 0, "b": 2},  # the cluster shrank: floors by rank as far as they go
        ),
        (
            3,
            [
                claim("elastic", want=3, floor=3, priority=9000),
                Claim("reserved", "root.q", 1, 99, Resources(1, 1024), 2, 2, guaranteed=True),
            ],
            {"elastic": 1, "reserved": 2},  # reservations before other floors
        ),
    ],
    ids=["floors first", "floors cut by rank when they do not fit", "reservations first"],
)
def test_floors(cores, claims, expected):
    assert targets(one_queue(policy="fairshare"), cores, claims) == expected


@pytest.mark.parametrize(
    "spec, expected",
    [
        (app("a").max(3), 3),
        (app("a").executor(2).slots_max(5), 2),  # 5 cores / 2 per executor
        (app("a").max(3).executor(2).slots_max(4), 2),  # the lower of the two
        (app("a").min(2), 10),
    ],
    ids=["maxExecutors", "spark.ego.slots.max", "both: the lower", "no cap"],
)
def test_caps(spec, expected):
    run = Run(one_queue(), cores=100)
    run.submit(spec)
    run.step(DemandChanged("a", 10))
    assert run.targets()["a"] == (expected, expected)


@pytest.mark.parametrize(
    "policy, prio_a, prio_b, gib, expected",
    [
        ("fairshare", 5000, 5000, 8, {"a": 1, "b": 1}),
        ("fairshare", 5000, 10000, 12, {"a": 1, "b": 2}),
        ("fifo", 5000, 5000, 8, {"a": 2, "b": 0}),
        ("priority", 5000, 9000, 8, {"a": 0, "b": 2}),
    ],
    ids=["fairshare: even split of what memory allows", "fairshare: 1:2 by priority",
         "fifo: the older first", "priority: the higher first"],
)
def test_a_memory_bound_cluster_is_shared_by_the_queues_policy(policy, prio_a, prio_b, gib,
                                                               expected):
    claims = [
        claim("a", want=4, mem_mib=4096, priority=prio_a),
        claim("b", want=4, mem_mib=4096, priority=prio_b),
    ]
    # 100 cores but only `gib` GiB: memory, not cores, limits the 4 GiB executors
    assert targets(one_queue(policy=policy), 100, claims, mem_mib=gib * 1024) == expected


def test_memory_bound_queues_share_by_weight():
    root = tree(leaf("a", weight=1), leaf("b", weight=2))
    claims = [claim("x", want=10, mem_mib=2048, queue="root.a"),
              claim("y", want=10, mem_mib=2048, queue="root.b")]
    # 64 cores, 12 GiB: six 2 GiB executors, split 1:2 by the queues' weights
    assert targets(root, 64, claims, mem_mib=12 * 1024) == {"x": 2, "y": 4}


def test_mixed_executor_sizes_never_overcommit_memory():
    claims = [claim("small", want=8, mem_mib=1024), claim("big", want=8, mem_mib=4096)]
    out = targets(one_queue(policy="fairshare"), 100, claims, mem_mib=10 * 1024)
    assert out["small"] * 1024 + out["big"] * 4096 <= 10 * 1024
    assert out["small"] >= 1 and out["big"] >= 1  # both get a part, not the oldest alone


# --- water-filling ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "total, weights, lo, hi, expected",
    [
        (10, [1, 1], [0, 0], [math.inf, math.inf], [5, 5]),
        (12, [1, 2], [0, 0], [math.inf, math.inf], [4, 8]),
        (10, [1, 1], [0, 0], [2, math.inf], [2, 8]),
        (10, [1, 1], [7, 0], [math.inf, math.inf], [7, 3]),
        (10, [1, 1], [0, 0], [3, 4], [3, 4]),
        (4, [1, 1], [6, 6], [9, 9], [2, 2]),
        (0, [1, 1], [0, 0], [5, 5], [0, 0]),
    ],
    ids=["equal", "weighted 1:2", "capped", "guarantee", "everyone satisfied",
         "guarantees do not fit", "nothing to share"],
)
def test_water_fill(total, weights, lo, hi, expected):
    assert water_fill(total, weights, lo, hi) == pytest.approx(expected)


# --- through the scheduler ----------------------------------------------------------------


def test_targets_are_only_sent_when_they_change():
    run = Run(one_queue(), cores=8)
    run.submit(app("a"), app("b"))
    run.hold("a", 1)
    out = run.step(DemandChanged("a", 8), DemandChanged("b", 8))
    assert set_targets(out) == {"a": (4, 4), "b": (4, 4)}  # 8 / 2
    assert run.step() == []  # nothing changed: nothing decided


def test_fairshare_priority_change_moves_the_split():
    run = Run(one_queue(admission="none"), cores=12)
    run.submit(app("a").priority(5000), app("b").priority(10000))
    run.step(DemandChanged("a", 20), DemandChanged("b", 20))
    assert {a: t for a, (t, _) in run.targets().items()} == {"a": 4, "b": 8}  # 1:2
    run.step(PriorityChanged("a", 10000))
    assert {a: t for a, (t, _) in run.targets().items()} == {"a": 6, "b": 6}  # 1:1


def test_rounding_remainder_moves_when_priorities_change():
    root = tree(leaf("A", admission="none"), leaf("B", admission="none"))
    run = Run(root, cores=3)
    run.submit(app("a").queue("A").priority(9000), app("b").queue("B").priority(1))
    run.step(DemandChanged("a", 9), DemandChanged("b", 9))
    assert {a: t for a, (t, _) in run.targets().items()} == {"a": 2, "b": 1}  # 1.5 + 1.5 cores
    run.step(PriorityChanged("b", 10000))
    assert {a: t for a, (t, _) in run.targets().items()} == {"a": 1, "b": 2}
    assert run.sched.check() == []


def test_executors_of_each_app_are_of_its_own_size():
    run = Run(one_queue(admission="none", policy="priority"), cores=10)
    run.submit(app("big").executor(4).priority(9000), app("small"))
    run.step(DemandChanged("big", 2), DemandChanged("small", 10))
    run.step(ExecutorsChanged("big", ()))
    assert {a: t for a, (t, _) in run.targets().items()} == {"big": 2, "small": 2}  # 8 + 2 cores
