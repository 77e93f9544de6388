"""Executors per resource profile (stage-level scheduling, engine/placement/profiles.py): the
queue's policy decides how many executors an app gets; the app's grant is split over its
profiles by their demand, each profile's executors placed by their own shape (a GPU profile's
only where a worker has the GPU), and held executors counted by their own shape."""

from __future__ import annotations

import pytest

from sessionsched.engine import CapacityChanged, DemandChanged, ExecutorsChanged, SetTarget
from sessionsched.engine.placement import profiles
from sessionsched.model import Executor, Resources, Worker
from sessionsched.model.profiles import Profile
from tests.engine.engine_builders import Run, app, one_queue, reclaims, set_targets

GB = 1024
GPU_EXECUTOR = Resources(1, 2 * GB, (("gpu", 1),))


def gpu_profile(demand: int, executor: Resources = GPU_EXECUTOR) -> Profile:
    return Profile(1, executor, demand)


def demand(app_id: str, default: int, gpu: int) -> DemandChanged:
    return DemandChanged(app_id, default + gpu, (Profile(0, Resources(2, 4 * GB), default),
                                                 gpu_profile(gpu)))


def grants(decisions: list) -> dict[str, tuple[tuple[int, int], ...]]:
    return {d.app_id: d.grants for d in decisions if isinstance(d, SetTarget)}


# (n to share, weights by profile id) -> the share
SHARES = {
    "every want met, the rest to the default": (5, {0: 1, 1: 2}, {0: 3, 1: 2}),
    "in proportion": (3, {0: 2, 1: 4}, {0: 1, 1: 2}),
    "remainder to the largest fraction": (2, {0: 1, 1: 2}, {0: 1, 1: 1}),
    "tie to the lower id": (1, {0: 1, 1: 1}, {0: 1, 1: 0}),
    "nothing to share": (0, {0: 3, 1: 3}, {0: 0, 1: 0}),
    "a stage of the GPU profile alone": (4, {0: 0, 1: 4}, {0: 0, 1: 4}),
}


@pytest.mark.parametrize("n, weights, expected", SHARES.values(), ids=SHARES.keys())
def test_share(n, weights, expected):
    assert profiles.share(n, weights) == expected


# (workers' free (cores, gpus), default demand, GPU-profile demand, (target, grant), split)
CASES = {
    "GPU stage: every executor of the GPU profile":
        (((8, 2),), 0, 2, (2, 2), ((0, 0), (1, 2))),
    "both stages: split by demand": (((8, 4),), 2, 2, (4, 4), ((0, 2), (1, 2))),
    "a GPU executor only where a worker has the GPU":
        (((8, 0), (8, 1)), 0, 3, (3, 1), ((0, 0), (1, 1))),
    "no GPU anywhere: the default profile's part still placed":
        (((8, 0), (8, 0)), 1, 2, (3, 1), ((0, 1), (1, 0))),
}


def gpu_workers(*free: tuple[int, int]) -> CapacityChanged:
    ws = tuple(Worker(f"w{i}", Resources(8, 32 * GB, (("gpu", g),) if g else ()),
                      Resources(c, 32 * GB, (("gpu", g),) if g else ()))
               for i, (c, g) in enumerate(free))
    return CapacityChanged.of_workers(ws, 4, Resources())


@pytest.mark.parametrize("free, default, gpu, expected, split", CASES.values(), ids=CASES.keys())
def test_the_grant_is_split_over_the_profiles_and_placed_by_their_shapes(
        free, default, gpu, expected, split):
    run = Run(one_queue(admission="none", policy="fifo"), cores=8 * len(free), mem_mib=64 * GB)
    run.step(gpu_workers(*free))
    run.submit(app("a").executor(2, 4 * GB))
    out = run.step(demand("a", default, gpu))
    assert set_targets(out)["a"] == expected
    assert grants(out)["a"] == split
    assert run.sched.check() == []


def test_an_app_without_other_profiles_gets_no_split():
    run = Run(one_queue(admission="none", policy="fifo"))
    run.submit(app("a"))
    out = run.step(DemandChanged("a", 2, (Profile(0, Resources(1, GB), 2),)))
    assert set_targets(out)["a"] == (2, 2)
    assert grants(out)["a"] == ()


def test_the_split_follows_the_stages_within_the_grant():
    """A GPU stage, then a default-profile stage, the app's grant 2 (its ``max_executors``):
    the GPU executors it holds keep their part while they are busy (the app never holds more
    than its grant); once idle they are released at once, and the grant goes to the
    default profile."""
    run = Run(one_queue(admission="none", policy="fifo"), cores=8, mem_mib=64 * GB)
    run.step(gpu_workers((8, 2)))
    run.submit(app("a").executor(2, 4 * GB).max(2))
    assert grants(run.step(demand("a", 0, 2)))["a"] == ((0, 0), (1, 2))
    gpus = tuple(Executor(f"g{i}", i, False, profile=1) for i in range(2))
    run.step(ExecutorsChanged("a", gpus))
    out = run.step(demand("a", 2, 0))  # the GPU stage's last tasks still run
    assert grants(out).get("a", run.sched.apps["a"].grants) == ((0, 0), (1, 2))
    assert reclaims(out) == []
    idle = tuple(Executor(e.executor_id, e.started_at, True, profile=1) for e in gpus)
    out = run.step(ExecutorsChanged("a", idle))
    assert [(d.executor_ids, d.mode.value) for d in reclaims(out)] == [(("g1", "g0"), "idle")]
    out = run.step(ExecutorsChanged("a", ()))
    assert grants(out)["a"] == ((0, 2), (1, 0))
    assert run.sched.check() == []


def test_held_executors_are_counted_by_their_own_shape():
    run = Run(one_queue(admission="none", policy="fifo"), cores=16, mem_mib=64 * GB)
    run.submit(app("a").executor(4, 8 * GB))
    run.step(demand("a", 0, 2))
    held = tuple(Executor(f"g{i}", i, False, profile=1) for i in range(2))
    run.step(ExecutorsChanged("a", held))
    totals = run.sched.books.ledger.total
    assert (totals.executor_cores, totals.executor_mem_mib) == (2, 4 * GB)  # 2 x (1 core, 2g)
    assert run.sched.check() == []
