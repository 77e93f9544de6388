"""A driver's room now is a per-worker question (engine/placement/free_now): an in-cluster
driver of a ``stateaware`` or ``none`` queue starts only where one worker has its cores and
memory free, by the backend's last report (``Worker.free``) less the drivers the engine
launched since, each placed where its queue's ``node_sort`` puts it."""

from __future__ import annotations

import pytest

from sessionsched.engine import CapacityChanged
from sessionsched.model import Resources, Worker
from tests.engine.engine_builders import WORKER, Run, app, launched, one_queue, worker_report

GB = 1024


def drivers(*cores: int) -> list[app]:
    return [app(f"d{i}").in_cluster(c) for i, c in enumerate(cores)]


# (admission, node_sort, free cores per worker, drivers' cores in submission order, launched)
CASES = {
    "split 2+2 holds no 3-core driver": ("none", "fair", (2, 2), (3,), []),
    "3+1 holds it": ("none", "fair", (3, 1), (3,), ["d0"]),
    "one a worker, the third waits": ("none", "fair", (3, 3), (3, 3, 3), ["d0", "d1"]),
    "stateaware alike": ("stateaware", "fair", (2, 2), (3,), []),
    # a 2-core driver, then a 4-core one: fair puts the first on the freest worker (4 -> 2+2
    # left), binpacking on the fullest that fits (2 -> 4+0 left): the second fits only then
    "fair spreads the first: no worker left for 4": ("none", "fair", (4, 2), (2, 4), ["d0"]),
    "binpacking keeps one whole for 4": ("none", "binpacking", (4, 2), (2, 4), ["d0", "d1"]),
    "one worker: the sum says it": ("none", "fair", (3,), (3,), ["d0"]),
}


@pytest.mark.parametrize("mode, sort, free, cores, expected", CASES.values(), ids=CASES.keys())
def test_a_driver_needs_its_room_free_on_one_worker(mode, sort, free, cores, expected):
    run = Run(one_queue(admission=mode, policy="fifo", node_sort=sort), cores=4 * len(free))
    run.step(worker_report(*free))
    out = run.submit(*drivers(*cores))
    assert launched(out) == expected
    assert run.sched.check() == []


def test_the_wait_says_the_most_free_on_one_worker():
    run = Run(one_queue(admission="none"), cores=8)
    run.step(worker_report(2, 2))
    run.submit(app("big").in_cluster(3))
    wait = run.sched.waiting["root.q"]
    assert wait.code == "driver_room"
    assert wait.text == ("no room for its driver on any one worker: it needs 3 cores/1024 MiB,"
                         " the most free on one worker is 2 cores/8192 MiB (4 cores/16384 MiB"
                         " free in all, split across workers)")


def test_drivers_launched_since_the_report_are_taken_off_until_the_next():
    run = Run(one_queue(admission="none", policy="fifo"), cores=8)
    run.step(worker_report(3, 3))
    assert launched(run.submit(app("a").in_cluster(3))) == ["a"]
    # no report since: a's 3 cores are taken off one worker, b takes the other, c waits
    assert launched(run.submit(app("b").in_cluster(3), app("c").in_cluster(3))) == ["b"]
    # the backend's report: a and b are there (1 core left on each), and a third worker
    ws = tuple(Worker(f"w{i}", WORKER, Resources(c, 5 * GB)) for i, c in enumerate((1, 1, 4)))
    assert launched(run.step(CapacityChanged.of_workers(ws, 4, Resources(2, 0)))) == ["c"]


def test_a_driver_short_of_a_custom_resource_waits_for_it_by_name():
    """The cores fit on a worker, the GPU does not: the reason names the GPU and its numbers."""
    gpu = (("gpu", 1),)
    size = Resources(4, 8 * GB, gpu)
    run = Run(one_queue(admission="none"), cores=8)
    run.step(CapacityChanged.of_workers(
        (Worker("w0", size, Resources(4, 8 * GB)), Worker("w1", size, Resources(4, 8 * GB))),
        4, Resources()))
    run.submit(app("gpu-driver").in_cluster(1, custom=(("gpu", 1),)))
    wait = run.sched.waiting["root.q"]
    assert wait.code == "driver_room"
    assert wait.text == ("waiting for gpu: its driver needs 1 gpu on one worker, the most free"
                         " on one worker is 0 (0 free in all, 2 in the cluster)")
