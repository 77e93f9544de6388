"""``max_resources`` over every cluster (``engine.clusters.resources``): arbitration keeps a
queue's GPUs on all the clusters together under its cap, shared by what each cluster's apps
want, as ``max_cores`` is (``test_shared_caps``).

Every case: clusters ``a`` and ``b`` of 8 cores and 4 GPUs each, one leaf ``root.q``; apps
whose drivers run on the scheduler's host, with executors of one core and one GPU.
"""

from __future__ import annotations

import random

import pytest

from sessionsched.engine import (
    CapacityChanged,
    DemandChanged,
    QueuesChanged,
    Submitted,
    Tick,
)
from sessionsched.engine.clusters import ClusterSpec, Federation, OnCluster
from sessionsched.model import AppState, Resources
from tests.engine.engine_builders import app, leaf, tree

from .test_federation import check, held_as_granted

GPU = (("gpu", 1),)


def fed(cap: int | None, **queue) -> Federation:
    limits = {} if cap is None else {"max_resources": (("gpu", cap),)}
    f = Federation(tree(leaf("q", reclaim_timeout_s=0, **limits, **queue)),
                   [ClusterSpec("a"), ClusterSpec("b")], driver_slots=None)
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(8, 8 * 4096, (("gpu", 4),))))
                 for n in "ab"])
    return f


def gpu_app(app_id: str, cluster: str, least: int = 0, custom: tuple = GPU):
    return app(app_id).executor(1, 1024, custom).min(least).max(8)._set(clusters=(cluster,))


def settle(f: Federation, t: float) -> float:
    """Steps in which every app comes to hold what it is granted (granted, reclaimed,
    granted again)."""
    for _ in range(3):
        t += 1.0
        f.step(t, held_as_granted(f) or [Tick()])
    assert f.check() == []
    return t


def grants(f: Federation) -> dict[str, int]:
    return {a: r.grant for e in f.engines.values() for a, r in e.apps.items()
            if r.state.admitted}


def gpus(f: Federation) -> int:
    """The GPUs granted to root.q's apps on both clusters together."""
    return sum(r.grant * dict(r.spec.executor.custom).get("gpu", 0)
               for e in f.engines.values() for r in e.apps.values() if r.state.admitted)


def run(f: Federation, apps, steps: list[tuple[str, int]]) -> Federation:
    check(f, f.step(1.0, [Submitted(a.spec()) for a in apps]))
    t = 2.0
    for app_id, demand in steps:
        f.step(t, [DemandChanged(app_id, demand)])
        t = settle(f, t) + 1.0
    return f


@pytest.mark.parametrize("cap,steps,expected", [
    (None, [("x", 6), ("y", 6)], {"x": 4, "y": 4}),
    (4, [("x", 6)], {"x": 4, "y": 0}),
    (4, [("x", 6), ("y", 6)], {"x": 2, "y": 2}),
    (4, [("x", 6), ("y", 1)], {"x": 3, "y": 1}),
    (4, [("x", 6), ("y", 6), ("x", 0)], {"x": 0, "y": 4}),
    (3, [("x", 6), ("y", 6)], {"x": 2, "y": 1}),
], ids=["no-cap: each its cluster's 4 GPUs", "one wants: the whole cap on its cluster",
        "both want: an even split", "one wants less: the other the rest",
        "one stops wanting: the other takes it all", "an odd GPU to the first cluster"])
def test_arbitration_shares_the_gpu_cap_between_the_clusters(cap, steps, expected):
    f = run(fed(cap), [gpu_app("x", "a"), gpu_app("y", "b")], steps)
    assert grants(f) == expected
    if cap is not None:
        assert gpus(f) <= cap


def test_apps_asking_no_gpu_are_not_held_by_the_gpu_cap():
    """x (GPUs) has the whole cap of 2 on a; y on b asks cores alone and gets its demand."""
    f = run(fed(2), [gpu_app("x", "a"), gpu_app("y", "b", custom=())], [("x", 6), ("y", 6)])
    assert grants(f) == {"x": 2, "y": 6}


def test_a_queue_on_one_cluster_keeps_its_whole_cap_there():
    f = run(fed(3), [gpu_app("x", "a"), gpu_app("y", "a")], [("x", 6), ("y", 6)])
    assert sum(grants(f).values()) == 3
    assert gpus(f) == 3


def test_a_new_tree_shares_its_new_gpu_cap():
    f = run(fed(4), [gpu_app("x", "a"), gpu_app("y", "b")], [("x", 6), ("y", 6)])
    assert grants(f) == {"x": 2, "y": 2}
    f.step(50.0, [QueuesChanged(tree(leaf("q", reclaim_timeout_s=0,
                                          max_resources=(("gpu", 2),))))])
    settle(f, 50.0)
    assert grants(f) == {"x": 1, "y": 1}


@pytest.mark.parametrize("seed", range(6))
def test_random_demands_never_pass_the_gpu_cap_once_settled(seed):
    """Apps on both clusters, some asking no GPU, floors and demands at random: once every
    app holds what it is granted, the GPUs on both clusters together stay under the cap (or
    the floors, which come first: admission does not hold them to it), and every floor is
    granted."""
    rnd = random.Random(seed)
    cap = rnd.randint(2, 6)
    f = fed(cap)
    apps = [gpu_app(f"x{i}", rnd.choice("ab"), rnd.randint(0, 1),
                    GPU if rnd.random() < 0.7 else ()) for i in range(6)]
    check(f, f.step(1.0, [Submitted(a.spec()) for a in apps]))
    t = 1.0
    for _ in range(10):
        t += 1.0
        admitted = [a for e in f.engines.values() for a, r in e.apps.items()
                    if r.state.admitted]
        f.step(t, [DemandChanged(a, rnd.randint(0, 6)) for a in admitted if rnd.random() < .5]
               or [Tick()])
        t = settle(f, t)
        recs = [r for e in f.engines.values() for r in e.apps.values() if r.state.admitted]
        floors = sum(r.floor * dict(r.spec.executor.custom).get("gpu", 0) for r in recs)
        assert gpus(f) <= max(cap, floors)
        assert all(r.grant >= r.floor for r in recs)


def guaranteed_fed(g_on: str) -> Federation:
    """root.g (weight 1, min_resources {gpu: 2}) and root.o (weight 3) on both clusters; an
    elastic GPU app of o on each cluster, and one of g on each cluster in ``g_on``; each wants
    all 4 GPUs of its cluster. By weight, g's share of a cluster's 4 GPUs is 1."""
    f = Federation(tree(leaf("g", reclaim_timeout_s=0, min_resources=(("gpu", 2),)),
                        leaf("o", reclaim_timeout_s=0, weight=3)),
                   [ClusterSpec("a"), ClusterSpec("b")], driver_slots=None)
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(8, 8 * 4096, (("gpu", 4),))))
                 for n in "ab"])
    apps = [gpu_app(f"o-{n}", n)._set(queue="root.o") for n in "ab"]
    apps += [gpu_app(f"g-{n}", n)._set(queue="root.g") for n in g_on]
    return run(f, apps, [(a.spec().app_id, 4) for a in apps])


@pytest.mark.parametrize("g_on,expected", [
    ("ab", {"g-a": 1, "g-b": 1, "o-a": 3, "o-b": 3}),
    ("a", {"g-a": 2, "o-a": 2, "o-b": 4}),
], ids=["g on both: its guarantee of 2 split 1 and 1", "g on a only: its 2 there"])
def test_a_gpu_guarantee_is_one_over_every_cluster_not_one_on_each(g_on, expected):
    assert grants(guaranteed_fed(g_on)) == expected


@pytest.mark.parametrize("cap,on_a,expected", [
    (None, 1, {"x": 1, "y": 4}),
    (4, 1, {"x": 1, "y": 3}),
    (4, 0, {"y": 4}),
], ids=["a cap on a alone", "beside the cap over both: a's part, b the rest",
        "none on a: x, asking for a, is never admitted"])
def test_max_resources_per_cluster_caps_one_cluster(cap, on_a, expected):
    """``max_resources_per_cluster: {a: {gpu: N}}`` (``Queue.cluster_max_resources``)."""
    f = run(fed(cap, cluster_max_resources=(("a", (("gpu", on_a),)),)),
            [gpu_app("x", "a"), gpu_app("y", "b")], [("y", 6)] + [("x", 6)] * bool(on_a))
    assert grants(f) == expected
    assert f.apps["x"].state is (AppState.RUNNING if on_a else AppState.ACCEPTED)
