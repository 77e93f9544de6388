"""Per-worker fit (engine/placement): room split across workers is not room.

Tables: what the workers hold (``Workers``), what never fits (``never_fits``), and the engine
deciding on workers: claims cut to what the workers hold, an app a lost worker makes
impossible held aside with ``does_not_fit_now`` while the apps behind it start, and started
in its turn once the worker is back."""

from __future__ import annotations

import time

import pytest

from sessionsched.engine import CapacityChanged, DemandChanged
from sessionsched.engine.placement import Workers, never_fits
from sessionsched.engine.tree import QueueTree
from sessionsched.model import Resources, Worker
from tests.engine.engine_builders import Run, app, launched, leaf, one_queue, set_targets, tree

GB = 1024


def workers(n: int, cores: int, mem_gb: int) -> tuple[Worker, ...]:
    size = Resources(cores, mem_gb * GB)
    return tuple(Worker(f"w{i}", size, size) for i in range(n))


TWO_BY_4 = Workers(workers(2, 4, 8))  # 2 workers x 4 cores x 8g: 8 cores in all, 4 on one


@pytest.mark.parametrize("ws, executor, holds", [
    (TWO_BY_4, Resources(1, GB), 8),  # 4 a worker, by cores
    (TWO_BY_4, Resources(3, GB), 2),  # 1 a worker: 8 cores, yet not 2 x 3 + 2 more
    (TWO_BY_4, Resources(1, 3 * GB), 4),  # by memory: 2 of 3g in 8g, on each
    (TWO_BY_4, Resources(8, GB), 0),  # fits the sum, no worker
    (TWO_BY_4, Resources(1, 10 * GB), 0),
    (Workers(workers(3, 3, 4)), Resources(2, GB), 3),  # 9 cores: 4 by the sum, 3 placed
    (Workers(workers(2, 4, 8) + workers(1, 16, 64)), Resources(8, 8 * GB), 2),  # the big one
], ids=["1-core", "3-core", "3g", "8-core", "10g", "3x3 cores, 2-core", "mixed sizes"])
def test_workers_hold_executors_per_worker(ws, executor, holds):
    assert ws.holds(executor) == holds
    assert ws.fits_one(executor) == (holds > 0)


def test_holds_beside_a_driver_on_the_worker_where_it_costs_least():
    # 2 x 4 cores, 2-core executors: 4; a 3-core driver takes one worker's 2 -> 2 beside it
    assert TWO_BY_4.holds_beside(Resources(3, GB), Resources(2, GB)) == 2
    # a 1-core driver: a worker keeps 3 cores, one 2-core executor -> 3
    assert TWO_BY_4.holds_beside(Resources(1, GB), Resources(2, GB)) == 3
    assert TWO_BY_4.holds_beside(Resources(5, GB), Resources(1, GB)) == -1  # fits no worker


def test_no_workers_named_is_one_worker_of_the_capacity_and_nothing_is_none():
    one = Workers((), Resources(8, 16 * GB))
    assert one.holds(Resources(3, GB)) == 2 and one.fits_one(Resources(8, GB))
    none = Workers((), Resources())
    assert none.holds(Resources(1, GB)) == 0 and none.describe() == "no alive worker"


def test_a_thousand_workers_cost_what_one_size_does():
    ws = Workers(workers(1000, 4, 8))
    assert ws.signature == ((Resources(4, 8 * GB), 1000),)
    t0 = time.perf_counter()
    for cores in range(1, 5):
        assert ws.holds(Resources(cores, GB)) == 1000 * (4 // cores)
    assert time.perf_counter() - t0 < 0.05  # grouped by size: four sums over one size


ROOT = tree(leaf("q"), leaf("small", max_cores=4), leaf("tiny", max_cores=2))
PATHS = QueueTree(ROOT).path
WHY_2x4 = "(2 workers of 4 cores/8192 MiB)"


@pytest.mark.parametrize("spec, queue, why", [
    (app("a").executor(8), "root.q", f"an executor of 8 cores/1024 MiB fits no worker {WHY_2x4}"),
    (app("a").executor(1, 10 * GB), "root.q",
     f"an executor of 1 cores/10240 MiB fits no worker {WHY_2x4}"),
    (app("a").in_cluster(1, 12 * GB), "root.q",
     f"the driver of 1 cores/12288 MiB fits no worker {WHY_2x4}"),
    (app("a").executor(3).min(3), "root.q",
     "3 executor(s) of 3 cores/1024 MiB (minExecutors 3) do not fit the cluster: its workers"
     f" hold 2 {WHY_2x4}"),
    (app("a").executor(3).min(2), "root.small",
     "2 executor(s) of 3 cores (minExecutors 2) need 6 cores, above max_cores 4 of queue"
     " root.small"),
    (app("a").in_cluster(3).executor(2).min(3), "root.q",
     "3 executor(s) of 2 cores/1024 MiB (minExecutors 3) do not fit the cluster: its workers"
     f" hold 2 beside the driver of 3 cores/1024 MiB {WHY_2x4}"),
    (app("a").executor(3), "root.tiny",  # the one executor demand admission sets aside
     "1 executor(s) of 3 cores (at least 1) need 3 cores, above max_cores 2 of queue root.tiny"),
    (app("a").executor(4, 8 * GB).min(2), "root.q", None),  # a whole worker each
    (app("a").in_cluster(4, 8 * GB).executor(4, 8 * GB).min(1), "root.q", None),
    (app("a").executor(8).max(0), "root.q", None),  # may hold no executor: its size is moot
], ids=["8-core executor", "10g executor", "12g driver", "floor above the workers",
        "floor above max_cores", "floor beside the driver", "one executor above max_cores",
        "a worker each", "driver and executor a worker each", "no executors"])
def test_never_fits(spec, queue, why):
    s = spec.queue(queue).spec()
    assert never_fits(s, PATHS[queue], TWO_BY_4) == why


def capacity(n: int, cores: int = 4, mem_gb: int = 8) -> CapacityChanged:
    return CapacityChanged.of_workers(workers(n, cores, mem_gb), 4)


def test_claims_are_cut_to_what_the_workers_hold():
    # 2 workers x 3 cores: 6 cores, but 2-core executors: one a worker, 2 in all
    run = Run(one_queue(admission="none"), cores=6)
    run.step(capacity(2, cores=3))
    run.submit(app("a").executor(2))
    out = run.step(DemandChanged("a", 3))
    assert set_targets(out)["a"][0] == 2  # the sum (6 cores) would say 3


def test_a_lost_worker_holds_the_app_aside_and_the_apps_behind_go_ahead():
    run = Run(one_queue(policy="fifo"), cores=8)
    run.step(capacity(2))
    run.step(capacity(1))  # a worker gone: 4 cores left
    out = run.submit(app("big").executor(3).min(2), app("small"))
    assert launched(out) == ["small"]
    held = run.sched.held["big"]
    assert held.code == "does_not_fit_now"
    assert held.text == ("does not fit the cluster as it is now: 2 executor(s) of 3 cores/1024"
                         " MiB (minExecutors 2) do not fit the cluster: its workers hold 1"
                         " (1 worker of 4 cores/8192 MiB)")
    assert run.sched.pending("root.q") == ["big"]
    assert "big" not in run.sched.waiting.get("root.q", ()) and run.sched.check() == []
    # the worker is back: big fits again and starts in its turn
    out = run.step(capacity(2))
    assert launched(out) == ["big"] and run.sched.held == {}

