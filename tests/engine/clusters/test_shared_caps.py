"""``max_cores`` over every cluster (``engine.clusters.cores``): a queue's floors on all the
clusters together never pass its cap at admission, and arbitration keeps its executor cores
on all of them under it, shared by what each cluster's apps want.

Every case: clusters ``a`` and ``b`` of 8 cores each, one leaf ``root.q``; apps whose drivers
run on the scheduler's host (they take no cluster cores), with executors of one core.
"""

from __future__ import annotations

import random

import pytest

from sessionsched.engine import DemandChanged, QueuesChanged, Submitted, Tick
from sessionsched.engine.clusters import ClusterSpec, Federation, OnCluster, Placed
from sessionsched.engine.clusters.cores import CoresAt, water_fill
from sessionsched.engine.waits import WaitCode
from tests.engine.engine_builders import app, leaf, tree

from .test_federation import check, fed, held_as_granted, placed


def floored(app_id: str, n: int = 2, cluster: str | None = None):
    """An app whose first ``n`` executors are its floor (minExecutors = maxExecutors = n)."""
    a = app(app_id).executor(1).min(n).max(n)
    return a if cluster is None else a._set(clusters=(cluster,))


def elastic(app_id: str, cluster: str, most: int = 8):
    return app(app_id).executor(1).min(0).max(most)._set(clusters=(cluster,))


def targets(f: Federation) -> dict[str, int]:
    """Every admitted app's target, by the engine of its cluster."""
    return {a: r.target for e in f.engines.values() for a, r in e.apps.items()
            if r.state.admitted}


def on(f: Federation, cluster: str) -> int:
    """The executor cores root.q is granted on ``cluster``."""
    return sum(r.grant for r in f.engines[cluster].apps.values() if r.state.admitted)


@pytest.mark.parametrize("cap,expected", [
    (None, 8),
    (4, 2),
    (5, 2),
    (6, 3),
], ids=["no-cap: every app, on both clusters", "cap-4: two floors of 2 over both",
        "cap-5: still two (a third floor would pass it)", "cap-6: three"])
def test_admission_counts_the_floors_on_every_cluster(cap, expected):
    f = fed({"a": 8, "b": 8}, root=tree(leaf("q", max_cores=cap)))
    out = f.step(1.0, [Submitted(floored(f"x{i}").spec()) for i in range(8)])
    check(f, out)
    assert len(placed(out)) == expected
    if cap is not None:
        assert set(placed(out).values()) <= {"a", "b"}
        waits = [w for e in f.engines.values() for w in e.waiting.values()]
        assert any(w.code is WaitCode.QUEUE_MAX_CORES and "over every cluster" in w.text
                   for w in waits)


def test_the_wait_names_the_floors_on_the_other_clusters():
    f = fed({"a": 2, "b": 8}, root=tree(leaf("q", max_cores=4)))
    check(f, f.step(1.0, [Submitted(floored("x", cluster="a").spec()),
                          Submitted(floored("y", 4, cluster="b").spec())]))
    wait = f.engines["b"].waiting["root.q"]
    assert wait.code is WaitCode.QUEUE_MAX_CORES
    assert wait.text.endswith("the floors of its admitted apps hold 0 here and 2 on the"
                                 " others")


def test_a_per_cluster_cap_holds_beside_the_global_one():
    """max_cores 6 over both, at most 2 on a: a takes one floor of 2, b the next two."""
    f = fed({"a": 8, "b": 8}, root=tree(leaf("q", max_cores=6, cluster_max_cores=(("a", 2),))))
    out = f.step(1.0, [Submitted(floored(f"x{i}").spec()) for i in range(4)])
    check(f, out)
    assert sorted(placed(out).values()) == ["a", "b", "b"]


def run_elastic(cap: int | None, steps: list[tuple[str, int]]) -> Federation:
    """x on a and y on b, elastic; ``steps``: (app, demand) said one after another, each
    followed by a step in which every app holds what it is granted."""
    f = fed({"a": 8, "b": 8}, root=tree(leaf("q", max_cores=cap, reclaim_timeout_s=0)))
    check(f, f.step(1.0, [Submitted(elastic("x", "a").spec()),
                          Submitted(elastic("y", "b").spec())]))
    t = 2.0
    for app_id, demand in steps:
        f.step(t, [DemandChanged(app_id, demand)])
        for _ in range(3):  # granted, reclaimed, granted again: held as granted
            t += 1.0
            held = held_as_granted(f)
            f.step(t, held or [Tick()])
        assert f.check() == []
    return f


@pytest.mark.parametrize("cap,steps,expected", [
    (None, [("x", 6), ("y", 6)], {"x": 6, "y": 6}),
    (6, [("x", 6)], {"x": 6, "y": 0}),
    (6, [("x", 6), ("y", 6)], {"x": 3, "y": 3}),
    (6, [("x", 6), ("y", 2)], {"x": 4, "y": 2}),
    (6, [("x", 6), ("y", 6), ("x", 0)], {"x": 0, "y": 6}),
    (6, [("x", 2), ("y", 6)], {"x": 2, "y": 4}),
], ids=["no-cap: each its demand", "one wants: the whole cap on its cluster",
        "both want: an even split", "one wants less: the other the rest",
        "one stops wanting: the other takes it all", "the first wants less: the second the rest"])
def test_arbitration_shares_the_cap_between_the_clusters(cap, steps, expected):
    f = run_elastic(cap, steps)
    assert targets(f) == expected
    if cap is not None:
        assert on(f, "a") + on(f, "b") <= cap


def test_a_floor_on_one_cluster_takes_cores_back_from_the_others_elastic_apps():
    """x holds the whole cap on a; y, admitted on b with a floor of 2, gets it, and x is cut to
    what is left (reclaimed), as on one cluster a new floor takes from the others' shares."""
    f = run_elastic(6, [("x", 8)])
    assert targets(f)["x"] == 6
    check(f, out := f.step(100.0, [Submitted(floored("z", 2, cluster="b").spec())]))
    assert placed(out) == {"z": "b"}
    for t in range(101, 105):
        held = held_as_granted(f)
        f.step(float(t), held or [Tick()])
    assert targets(f) == {"x": 4, "y": 0, "z": 2}
    assert on(f, "a") + on(f, "b") == 6


def test_one_cluster_keeps_its_whole_cap_without_shared_caps():
    f = Federation(tree(leaf("q", max_cores=4)), [ClusterSpec("a")], driver_slots=None)
    f.step(0.0, [OnCluster("a", Tick())])
    assert f.engines["a"].arbitration_caps is None


def test_a_new_tree_shares_its_new_caps():
    f = run_elastic(6, [("x", 8), ("y", 8)])
    assert targets(f) == {"x": 3, "y": 3}
    f.step(50.0, [QueuesChanged(tree(leaf("q", max_cores=2, reclaim_timeout_s=0)))])
    for t in range(51, 55):
        held = held_as_granted(f)
        f.step(float(t), held or [Tick()])
    assert targets(f) == {"x": 1, "y": 1}


@pytest.mark.parametrize("seed", range(6))
def test_random_demands_never_pass_the_cap_once_settled(seed):
    """Apps on both clusters, floors and demands at random: once every app holds what it is
    granted, the grants on both clusters together stay under the cap, and every floor is
    granted."""
    rnd = random.Random(seed)
    cap = rnd.randint(4, 10)
    f = fed({"a": 8, "b": 8}, root=tree(leaf("q", max_cores=cap, reclaim_timeout_s=0)))
    specs = [app(f"x{i}").executor(1).min(rnd.randint(0, 2)).max(rnd.randint(2, 6))
             ._set(clusters=(rnd.choice("ab"),)).spec() for i in range(6)]
    out = f.step(1.0, [Submitted(s) for s in specs])
    t = 1.0
    for _ in range(12):
        t += 1.0
        admitted = [(a, r) for e in f.engines.values() for a, r in e.apps.items()
                    if r.state.admitted]
        events = [DemandChanged(a, rnd.randint(0, 6)) for a, _ in admitted if rnd.random() < .5]
        out += f.step(t, events or [Tick()])
        for _ in range(3):
            t += 1.0
            held = held_as_granted(f)
            out += f.step(t, held or [Tick()])
        assert on(f, "a") + on(f, "b") <= cap
        recs = [r for e in f.engines.values() for r in e.apps.values() if r.state.admitted]
        assert sum(r.floor for r in recs) <= cap
        assert all(r.grant >= r.floor for r in recs)
    assert len([d for d in out if isinstance(d, Placed)]) == len(set(placed(out)))


@pytest.mark.parametrize("room,wants,expected", [
    (6, {"a": 6, "b": 6}, {"a": 3, "b": 3}),
    (6, {"a": 6, "b": 2}, {"a": 4, "b": 2}),
    (5, {"a": 6, "b": 6}, {"a": 3, "b": 2}),
    (5, {"a": 0, "b": 6}, {"a": 0, "b": 5}),
    (0, {"a": 3, "b": 3}, {"a": 0, "b": 0}),
    (9, {"a": 1, "b": 2, "c": 9}, {"a": 1, "b": 2, "c": 6}),
], ids=["even", "the smaller want first", "an odd core to the first", "none wanted",
        "no room", "three"])
def test_water_fill(room, wants, expected):
    assert water_fill(room, wants) == expected


@pytest.mark.parametrize("caps,custom", [
    ({}, {}),
    ({"root.p": 3}, {}),
    ({"root.p.x": 1}, {}),
    ({"root.p": 5, "root.p.x": 2, "root.r": 9}, {}),
    ({"root.p": 50}, {}),
    ({}, {"root.p.y": (("gpu", 1),)}),
    ({"root.p.x": 1}, {"root.p": (("gpu", 2), ("fpga", 9)), "root.s": (("gpu", 3),)}),
    ({}, {"root.p.y": (("gpu", 5),), "root.s": (("fpga", 1),)}),
], ids=["none", "a parent", "a leaf", "several, one above its own", "above its own: unchanged",
        "a leaf's gpus", "cores and gpus, a resource it does not cap", "gpus above its own"])
def test_a_recapped_index_reads_as_one_built_from_scratch(caps, custom):
    from sessionsched.engine.tree import Caps, QueueTree, with_caps
    from tests.engine.engine_builders import parent

    root = tree(parent("p", leaf("x", max_cores=4), leaf("y", max_resources=(("gpu", 4),)),
                       max_cores=6, max_resources=(("gpu", 6),)),
                leaf("r", max_cores=8), leaf("s", max_resources=(("gpu", 4),)))
    base = QueueTree.of(root)
    fast, slow = base.recapped(Caps(caps, custom)), QueueTree(with_caps(root, caps, custom))
    assert QueueTree.of(fast.root) is fast
    assert (fast is base) == (slow.root is root)

    def caps_of(q):
        return q.max_cores, q.max_resources

    assert {n: caps_of(q) for n, q in fast.node.items()} == {
        n: caps_of(q) for n, q in slow.node.items()}
    for leaf_name in slow.leaves:
        assert [(q.name, caps_of(q)) for q in fast.path[leaf_name]] == [
            (q.name, caps_of(q)) for q in slow.path[leaf_name]]
        assert [(q.name, q.max_cores) for q in fast.capped_path(leaf_name)] == [
            (q.name, q.max_cores) for q in slow.capped_path(leaf_name)]
    assert caps_of(fast.root.children[0]) == caps_of(slow.root.children[0])
    assert [caps_of(c) for c in fast.root.children[0].children] == [
        caps_of(c) for c in slow.root.children[0].children]


@pytest.mark.parametrize("last,b,expected", [
    (None, CoresAt(2, 1, 10), 2 + 9),
    (8, CoresAt(2, 1, 10), 8),
    (8, CoresAt(2, 5, 10), 2 + 5),
    (6, CoresAt(2, 1, 10), 2 + 9),
    (None, CoresAt(3, 0, 0), 2 + 9),
    (None, CoresAt(2, 0, 0), None),
], ids=["first: floors and the larger of share and what b leaves unused",
        "a cap given stands while b holds no more of it",
        "b took room a was left: worked out again",
        "below a's floors and share: worked out again",
        "b wants nothing: all but b's floors",
        "everything wanted fits: no cap given"])
def test_a_cap_given_stands_until_another_cluster_takes_room_or_this_one_is_owed_more(
        last, b, expected):
    """max_cores 14; a holds floors of 2 and wants 10 more; b as the case says. The room
    above every floor is 10: a's share 5 when both want more."""
    from sessionsched.engine.clusters.cores import caps

    a = CoresAt(2, 0, 10)
    out = caps({"root.q": (14, ("root.q",))}, {"a": {"root.q": a}, "b": {"root.q": b}},
               ["a", "b"], "a", {"root.q": a}, {} if last is None else {"root.q": last})
    assert out == ({} if expected is None else {"root.q": expected})


@pytest.mark.parametrize("guarantees,expected", [
    ({"root.p.y": (("gpu", 1),)}, {"root.p": 3, "root.p.y": 1, "root.s": 4}),
    ({"root.p": (("gpu", 1),), "root.s": (("gpu", 9),)}, {"root.p": 1, "root.p.y": 2,
                                                         "root.s": 4}),
], ids=["a leaf's guarantee", "a parent's, and one above its own: unchanged"])
def test_a_recapped_index_lowers_guarantees_as_one_built_from_scratch(guarantees, expected):
    from sessionsched.engine.tree import Caps, QueueTree, with_caps
    from tests.engine.engine_builders import parent

    root = tree(parent("p", leaf("x"), leaf("y", min_resources=(("gpu", 2),)),
                       min_resources=(("gpu", 3),)),
                leaf("s", min_resources=(("gpu", 4),)))
    fast = QueueTree.of(root).recapped(Caps(guarantees=guarantees))
    slow = QueueTree(with_caps(root, {}, None, guarantees))
    assert {n: q.min_resources for n, q in fast.node.items()} == {
        n: q.min_resources for n, q in slow.node.items()}
    for leaf_name in slow.leaves:
        assert [(q.name, q.min_resources) for q in fast.path[leaf_name]] == [
            (q.name, q.min_resources) for q in slow.path[leaf_name]]
    assert {n: dict(fast.node[n].min_resources)["gpu"] for n in expected} == expected
