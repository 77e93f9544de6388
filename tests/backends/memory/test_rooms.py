"""The memory cluster's index of workers by free room picks the worker ``sorting.pick`` picks:
random clusters (workers of a few sizes, some with GPUs, some lost, partly used) and random
sizes, under both node sorts."""

from __future__ import annotations

import random

import pytest

from sessionsched.backends.memory.rooms import WorkerIndex
from sessionsched.engine.placement.sorting import pick
from sessionsched.model import NodeSort, Resources

ROOMS = [Resources(c, m, g) for c in (0, 1, 2, 4) for m in (0, 1024, 4096)
         for g in ((), (("gpu", 1),), (("gpu", 2),), (("fpga", 1), ("gpu", 1)))]
SIZES = [Resources(c, m, g) for c in (1, 2, 3) for m in (512, 1024, 4096)
         for g in ((), (("gpu", 1),), (("fpga", 1),))]


@pytest.mark.parametrize("seed", range(40))
def test_the_index_picks_what_sorting_picks(seed):
    rng = random.Random(seed)
    free = [None if rng.random() < 0.1 else rng.choice(ROOMS)
            for _ in range(rng.randint(1, 30))]
    index = WorkerIndex()
    for i, room in enumerate(free):
        if room is not None:
            index.add(i, room)
    for size in SIZES:
        for sort in NodeSort:
            assert index.pick(size, sort) == pick(free, size, sort), (size, sort, free)


def test_rooms_moved_and_removed_are_picked_as_they_are_now():
    index = WorkerIndex()
    rooms = [Resources(4, 4096), Resources(4, 4096), Resources(2, 4096, (("gpu", 1),))]
    for i, room in enumerate(rooms):
        index.add(i, room)
    one = Resources(1, 1024)
    assert index.pick(one, NodeSort.FAIR) == 0  # the freest, the first of equals
    index.remove(0, rooms[0])
    index.add(0, Resources(3, 3072))
    assert index.pick(one, NodeSort.FAIR) == 1
    assert index.pick(one, NodeSort.BINPACKING) == 0  # the fullest that holds it
    index.remove(1, rooms[1])
    index.remove(0, Resources(3, 3072))
    assert index.pick(one, NodeSort.FAIR) == 2  # kept off the GPU worker only while others hold it
    assert index.pick(Resources(3, 1024), NodeSort.FAIR) is None
