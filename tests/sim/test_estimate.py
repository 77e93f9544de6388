"""``sim.estimate``: the engine run forward from a live state - estimated starts, counter-offers,
dry runs and what can never fit - on small hand-built states."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sessionsched.config import QueueConfig, build_queue_tree
from sessionsched.model import AppSpec, AppState, Resources
from sessionsched.sim.estimate import (
    Live,
    Queued,
    Running,
    Timings,
    dry_run,
    estimate,
    much_sooner,
    never_fits,
)
from sessionsched.sim.queue_trees import QueueChange

LEAF = "root.default"
FAST = Timings(driver_start_s=1.0, executor_start_s=1.0, cycle_s=1.0, horizon_s=3600.0)


def tree(**leaf):
    return build_queue_tree([QueueConfig.model_validate(
        {"name": "root", "queues": [{"name": "default", "policy": "fifo", **leaf}]})])


def spec(i: int, min_executors: int = 0, max_executors: int | None = 2,
         cores: int = 1) -> AppSpec:
    return AppSpec(app_id=f"a{i}", queue=LEAF, seq=i, submitted_at=0.0,
                   executor=Resources(cores, 1024), min_executors=min_executors,
                   max_executors=max_executors)


def running(i: int, left_s: float, executors: int = 2, **kw) -> Running:
    return Running(spec(i, **kw), AppState.RUNNING, 5000, executors, left_s, 30.0, 29.0)


def live(run, queued, **leaf) -> Live:
    return Live(tree(**leaf), Resources(4, 8192), 8, tuple(run), tuple(queued), FAST)


def test_one_at_a_time_each_waits_for_the_one_before():
    # max_running_apps 1: a1 starts when a0 ends (100 s left), a2 when a1 ends (100 s more).
    state = live([running(0, 100.0)], [Queued(spec(1), 5000, 100.0),
                                       Queued(spec(2), 5000, 100.0)], max_running_apps=1)
    got = estimate(state)
    assert 100 <= got["a1"].start_in_s <= 110
    assert 200 <= got["a2"].start_in_s <= 220
    assert got["a1"].offer is None and got["a2"].offer is None  # one executor asked


def test_a_higher_priority_app_is_estimated_first():
    state = live([running(0, 100.0)], [Queued(spec(1), 5000, 100.0),
                                       Queued(spec(2), 9000, 100.0)], max_running_apps=1)
    got = estimate(state)
    assert got["a2"].start_in_s < got["a1"].start_in_s


def test_an_app_beyond_the_horizon_has_no_estimate():
    state = live([running(0, 7200.0)], [Queued(spec(1), 5000, 60.0)], max_running_apps=1)
    assert estimate(state)["a1"].start_in_s is None


@pytest.mark.parametrize("min_executors, max_executors, offered", [
    (3, 8, True),    # elastic, waits for 3 first executors: 2 are free now
    (3, 3, False),   # not elastic: maxExecutors = minExecutors
    (1, 8, False),   # one first executor: fewer is not possible
], ids=["elastic-offered", "fixed-size", "one-first-executor"])
def test_counter_offer(min_executors, max_executors, offered):
    # a0 holds 2 of the 4 cores as its floor for 600 s; a1's floor has room only after it.
    state = live([running(0, 600.0, min_executors=2)],
                 [Queued(spec(1, min_executors, max_executors), 5000, 60.0)])
    got = estimate(state)["a1"]
    if not offered:
        assert got.offer is None
        return
    assert got.start_in_s >= 600
    assert (got.offer.executors, got.offer.instead_of) == (2, 3)
    assert got.offer.start_in_s < 30
    assert much_sooner(got.start_in_s, got.offer.start_in_s)


@pytest.mark.parametrize("start_s, offer_s, sooner", [
    (600, 10, True), (600, 400, False),  # saves 590 s; saves 200 s: not half the wait
    (90, 20, True), (70, 20, False),     # saves 70 s; saves 50 s: under a minute
], ids=["most-of-the-wait", "a-third", "over-a-minute", "under-a-minute"])
def test_much_sooner(start_s, offer_s, sooner):
    assert much_sooner(start_s, offer_s) is sooner


def test_dry_run_says_place_reason_and_start_and_leaves_the_state_alone():
    state = live([running(0, 100.0)], [Queued(spec(1), 5000, 100.0)], max_running_apps=1)
    before = replace(state)
    answer = dry_run(state, Queued(spec(9), 5000, 100.0))
    assert answer.position == 2
    assert answer.reason.startswith("behind a1, the head of root.default (1 app(s) ahead of it), ")
    assert 200 <= answer.estimate.start_in_s <= 220
    assert state == before

    empty = live([], [])
    assert dry_run(empty, Queued(spec(9), 5000, 100.0)).position is None  # starts at once


@pytest.mark.parametrize("app, expected", [
    (spec(1), None),
    (spec(1, cores=8), "an executor of 8 cores/1024 MiB does not fit in the cluster "
                       "(4 cores/8192 MiB)"),
    (replace(spec(1), driver=Resources(16, 1024), driver_in_cluster=True),
     "a driver of 16 cores/1024 MiB does not fit in the cluster (4 cores/8192 MiB)"),
    (spec(1, min_executors=5, max_executors=5),
     "the driver and 5 first executor(s) need 5 cores/5120 MiB; the cluster "
     "(4 cores/8192 MiB) has less"),
], ids=["fits", "executor-too-big", "driver-too-big", "floor-too-big"])
def test_never_fits(app, expected):
    assert never_fits(app, Resources(4, 8192), 8) == expected


def test_a_plan_that_will_raise_a_queues_limit_starts_its_app_then_not_never():
    """a0 runs 2 hours under ``max_running_apps: 1``; a plan lets a second app run in 10
    minutes. The forward run changes the queues when the plan will: a1 starts then, not after
    a0 (and without the plan, not within the hour's horizon at all)."""
    state = live([running(0, 7200.0)], [Queued(spec(1), 5000, 60.0)], max_running_apps=1)
    assert estimate(state)["a1"].start_in_s is None
    later = QueueChange(600.0, tree(max_running_apps=2), "a plan")
    got = estimate(replace(state, queue_changes=(later,)))["a1"].start_in_s
    assert 600 <= got <= 600 + 2 * FAST.cycle_s, got
