"""Custom resources (GPUs) in placement: a driver or an executor fits only on a worker that has
every resource it asks for, in the amounts it asks for; the never-fits line names the resource
no worker has enough of; an app without custom resources places as before.

Tables: the arithmetic of ``Resources`` with custom amounts, what the workers hold
(``Workers``), what never fits (``never_fits``), where node sorting puts a GPU executor (the
engine's ``Rooms``, the backends' ``sorting.pick``), and the engine cutting claims to the GPUs
the workers have."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from sessionsched.engine import CapacityChanged, DemandChanged, DriverExited
from sessionsched.engine.placement import Workers, never_fits
from sessionsched.engine.placement.free_now import Rooms
from sessionsched.engine.placement.sorting import pick
from sessionsched.engine.tree import QueueTree
from sessionsched.model import NodeSort, Resources, Worker
from tests.engine.engine_builders import Run, app, launched, leaf, one_queue, set_targets, tree

GB = 1024


def gpu(n: int) -> tuple:
    return (("gpu", n),) if n else ()


def size(cores: int, gpus: int = 0, mem_gb: int = 8) -> Resources:
    return Resources(cores, mem_gb * GB, gpu(gpus))


ARITHMETIC = {
    "sum": (size(4, 2) + size(4, 1), size(8, 3, 16)),
    "sum with none": (size(4, 2) + size(4), size(8, 2, 16)),
    "difference to zero leaves none": (size(4, 2) - size(1, 2, 1), size(3, 0, 7)),
    "difference below zero": (size(4) - size(1, 1, 1), Resources(3, 7 * GB, (("gpu", -1),))),
    "times": (size(1, 2, 1).times(3), size(3, 6, 3)),
    "times 0": (size(1, 2, 1).times(0), Resources()),
    "names merged in order": (Resources(0, 0, (("gpu", 1),)) + Resources(0, 0, (("fpga", 2),)),
                              Resources(0, 0, (("fpga", 2), ("gpu", 1)))),
}


@pytest.mark.parametrize("got, want", ARITHMETIC.values(), ids=ARITHMETIC.keys())
def test_arithmetic_carries_custom_amounts(got, want):
    assert got == want and hash(got) == hash(want)


FITS = {
    "no gpu asked, none there": (size(1), size(4), True),
    "no gpu asked, gpus there": (size(1), size(4, 2), True),
    "a gpu asked, none there": (size(1, 1), size(4), False),
    "2 asked, 2 there": (size(1, 2), size(4, 2), True),
    "3 asked, 2 there": (size(1, 3), size(4, 2), False),
    "another name there": (size(1, 1), Resources(4, 8 * GB, (("fpga", 4),)), False),
    "gpus there, cores not": (size(8, 1), size(4, 2), False),
}


@pytest.mark.parametrize("ask, room, fits", FITS.values(), ids=FITS.keys())
def test_fits_in_needs_every_resource(ask, room, fits):
    assert ask.fits_in(room) is fits


def workers(*sizes: Resources) -> Workers:
    return Workers(tuple(Worker(f"w{i}", s, s) for i, s in enumerate(sizes)))


MIXED = workers(size(4, 2), size(4, 2), size(8))  # 2 GPU workers of 4 cores, one 8-core plain
HOLDS = {
    "1 gpu each: 2 a gpu worker": (size(1, 1, 1), 4),
    "2 gpus each: 1 a gpu worker": (size(1, 2, 1), 2),
    "3 gpus: none": (size(1, 3, 1), 0),
    "no gpu: every worker by cores": (size(1, 0, 1), 16),
    "4 cores and a gpu": (size(4, 1, 1), 2),
}


@pytest.mark.parametrize("executor, holds", HOLDS.values(), ids=HOLDS.keys())
def test_workers_hold_executors_only_where_the_gpus_are(executor, holds):
    assert MIXED.holds(executor) == holds
    assert MIXED.fits_one(executor) == (holds > 0)


ROOT = tree(leaf("q"))
PATH = QueueTree(ROOT).path["root.q"]
MIXED_TEXT = "1 worker of 8 cores/8192 MiB, 2 workers of 4 cores/8192 MiB/2 gpu"  # largest first


def spec(executor: Resources, driver: Resources | None = None, min_executors: int = 0):
    s = app("a").queue("root.q").min(min_executors).spec()
    s = replace(s, executor=executor)
    return s if driver is None else replace(s, driver=driver, driver_in_cluster=True)


NEVER = {
    "3 gpus, at most 2 on one": (
        spec(size(1, 3, 1)), MIXED,
        "an executor of 1 cores/1024 MiB/3 gpu fits no worker: at most 2 gpu on one"
        f" ({MIXED_TEXT})"),
    "a gpu, no worker has any": (
        spec(size(1, 1, 1)), workers(size(4), size(4)),
        "an executor of 1 cores/1024 MiB/1 gpu fits no worker: no worker has gpu"
        " (2 workers of 4 cores/8192 MiB)"),
    "a driver of 4 gpus": (
        spec(size(1, 0, 1), driver=size(1, 4, 1)), MIXED,
        "the driver of 1 cores/1024 MiB/4 gpu fits no worker: at most 2 gpu on one"
        f" ({MIXED_TEXT})"),
    "too many cores for the gpu workers: cores named as before": (
        spec(size(8, 1, 1)), MIXED,
        f"an executor of 8 cores/1024 MiB/1 gpu fits no worker ({MIXED_TEXT})"),
    "a floor above the gpus": (
        spec(size(1, 1, 1), min_executors=5), MIXED,
        "5 executor(s) of 1 cores/1024 MiB/1 gpu (minExecutors 5) do not fit the cluster: its"
        f" workers hold 4 ({MIXED_TEXT})"),
    "a floor the gpus hold": (spec(size(1, 1, 1), min_executors=4), MIXED, None),
    "gpu driver and gpu executors": (
        spec(size(1, 1, 1), driver=size(1, 2, 1), min_executors=2), MIXED, None),
}


@pytest.mark.parametrize("s, ws, why", NEVER.values(), ids=NEVER.keys())
def test_never_fits_names_the_resource(s, ws, why):
    assert never_fits(s, PATH, ws) == why


# free rooms: a plain 8-core worker and a 2-core worker with 2 gpus
FREE = (size(8), size(2, 2))
PLACED = {
    "fair: a gpu executor to the only gpu worker": (size(1, 1, 1), NodeSort.FAIR, 1),
    "binpacking alike": (size(1, 1, 1), NodeSort.BINPACKING, 1),
    "fair: a plain one to the freest": (size(1, 0, 1), NodeSort.FAIR, 0),
    # Keep-off (docs/design/placement.md): a plain one goes to the gpu worker only when no
    # other worker has room for it.
    "binpacking: a plain one keeps off the gpu worker while another has room": (
        size(1, 0, 1), NodeSort.BINPACKING, 0),
    "3 gpus: nowhere": (size(1, 3, 1), NodeSort.FAIR, None),
}


@pytest.mark.parametrize("ask, sort, where", PLACED.values(), ids=PLACED.keys())
def test_node_sorting_places_on_a_worker_with_the_gpus(ask, sort, where):
    assert pick(FREE, ask, sort) == where
    rooms = Rooms(Counter(FREE))
    assert rooms.take(ask, sort) is (where is not None)


# Keep-off: free rooms of a 2-core plain worker, a 6-core worker with 2 gpus free and one
# whose gpus are all taken (a worker like any other then).
KEEP_OFF_FREE = (size(2), size(6, 2), size(4))
KEEP_OFF = {
    "fair: a plain one to the freest plain worker, not the freer gpu one": (
        size(1), NodeSort.FAIR, 2),
    "binpacking: a plain one to the fullest plain worker": (size(1), NodeSort.BINPACKING, 0),
    "a plain one no plain worker holds goes to the gpu worker": (size(5), NodeSort.FAIR, 1),
    "binpacking alike": (size(5), NodeSort.BINPACKING, 1),
    "a gpu one to the gpu worker": (size(1, 1), NodeSort.FAIR, 1),
}


@pytest.mark.parametrize("ask, sort, where", KEEP_OFF.values(), ids=KEEP_OFF.keys())
def test_plain_drivers_and_executors_keep_off_gpu_workers_while_others_have_room(
        ask, sort, where):
    assert pick(KEEP_OFF_FREE, ask, sort) == where
    rooms = Rooms(Counter(KEEP_OFF_FREE))
    assert rooms.take(ask, sort)
    left = Counter(KEEP_OFF_FREE)
    left[KEEP_OFF_FREE[where]] -= 1
    left[KEEP_OFF_FREE[where] - ask] += 1
    assert +rooms.count == +Counter({(r.cores, r.mem_mib, r.custom): n
                                     for r, n in left.items()})


def test_rooms_spend_the_gpus_they_place():
    rooms = Rooms(Counter(FREE))
    one = size(1, 1, 1)
    assert rooms.take_up_to(one, 5, NodeSort.FAIR) == 2  # two gpus, on one worker
    assert not rooms.fits(one) and rooms.fits(size(1, 0, 1))


def test_claims_are_cut_to_the_gpus_the_workers_have():
    # 16 cores, but 2 gpus on each of two workers: executors of a gpu each, 4 at most
    run = Run(one_queue(admission="none"), cores=16)
    ws = tuple(Worker(f"w{i}", s, s) for i, s in enumerate((size(4, 2), size(4, 2), size(8))))
    run.step(CapacityChanged.of_workers(ws, 4))
    run.submit(app("a").executor(1, GB, gpu(1)))
    out = run.step(DemandChanged("a", 10))
    assert set_targets(out)["a"][0] == 4


@pytest.mark.parametrize("mode", ["none", "stateaware", "demand", "reserve"])
def test_gpu_drivers_in_the_cluster_are_admitted_where_the_gpus_are(mode):
    # 2 GPU workers of 4 cores/2 gpus and a plain one: three drivers of 1 core and 1 gpu each
    # (no executors): two GPU workers hold four such drivers, so all three start
    run = Run(one_queue(admission=mode, starting_limit=3), cores=16)
    ws = tuple(Worker(f"w{i}", s, s) for i, s in enumerate((size(4, 2), size(4, 2), size(8))))
    run.step(CapacityChanged.of_workers(ws, 4))
    out = run.submit(*(app(f"d{i}").in_cluster(1, GB, gpu(1)).max(0) for i in range(3)))
    assert launched(out) == ["d0", "d1", "d2"], run.sched.held


def test_no_more_gpu_drivers_start_than_the_workers_have_gpus():
    run = Run(one_queue(admission="none"), cores=16)
    ws = tuple(Worker(f"w{i}", s, s) for i, s in enumerate((size(4, 2), size(4, 2), size(8))))
    run.step(CapacityChanged.of_workers(ws, 4))
    out = run.submit(*(app(f"d{i}").in_cluster(1, GB, gpu(1)).max(0) for i in range(5)))
    assert launched(out) == ["d0", "d1", "d2", "d3"]  # 4 gpus: the fifth waits for one


@pytest.mark.parametrize("mode", ["demand", "reserve"])
def test_an_app_waits_for_the_gpus_its_first_executors_need_beside_the_admitted_floors(mode):
    """A GPU worker of 8 cores/2 gpus beside a plain one: ``a`` holds both GPUs as its floor
    (minExecutors 2 of 1 gpu); ``b`` asks 1 GPU for its first executor. Cores are plenty, so
    ``b`` would start a driver that waits for a GPU no floor gives back: it waits queued with
    the GPU named, and starts when ``a`` ends. ``c`` asks no GPU, in a queue of its own; ``d``
    asks none behind ``b``: it does not need the room ``b`` waits for, so it starts past it."""
    run = Run(tree(leaf("g", admission=mode), leaf("c", admission=mode)), cores=16)
    ws = (Worker("gpu", size(8, 2, 32), size(8, 2, 32)), Worker("cpu", size(8), size(8)))
    run.step(CapacityChanged.of_workers(ws, 4))
    out = run.submit(app("a").queue("root.g").executor(1, GB, gpu(1)).min(2).max(2))
    assert launched(out) == ["a"]
    out = run.submit(app("b").queue("root.g").executor(1, GB, gpu(1)).min(1).max(1),
                     app("c").queue("root.c").executor(1, GB).min(1).max(1),
                     app("d").queue("root.g").executor(1, GB).min(1).max(1))
    assert sorted(launched(out)) == ["c", "d"]
    wait = run.sched.view().waiting["root.g"]
    assert wait.text == ("waiting for gpu: its first 1 executor(s) need 1 gpu; 0 of the cluster's 2"
                         " gpu is left beside the in-cluster drivers and executor floors of 3"
                         " admitted app(s)"), wait
    out = run.step(DriverExited("a", 0))
    assert launched(out) == ["b"]
