"""Node sorting (engine/placement/sorting): which worker a driver or an executor goes to.

Tables of named cases: ``pick`` by ``fair`` (most free first) and ``binpacking`` (fullest that
fits first), ``whole`` counting untouched workers, and a stream of placements showing what
each policy leaves whole."""

from __future__ import annotations

import pytest

from sessionsched.engine.placement.sorting import pick, whole
from sessionsched.model import NodeSort, Resources

FAIR, PACK = NodeSort.FAIR, NodeSort.BINPACKING
GB = 1024


def r(cores: int, gb: int) -> Resources:
    return Resources(cores, gb * GB)


@pytest.mark.parametrize("free, size, sort, index", [
    ([r(4, 8), r(2, 8), r(3, 8)], r(1, 1), FAIR, 0),  # most free cores
    ([r(4, 8), r(2, 8), r(3, 8)], r(1, 1), PACK, 1),  # fullest that fits
    ([r(4, 8), r(1, 8), r(3, 8)], r(2, 1), PACK, 2),  # the fullest (1 core) holds no 2 cores
    ([r(4, 2), r(4, 8)], r(1, 1), FAIR, 1),  # equal cores: more memory is more free
    ([r(4, 2), r(4, 8)], r(1, 1), PACK, 0),
    ([r(4, 8), r(4, 8)], r(1, 1), FAIR, 0),  # ties: the first
    ([r(4, 8), r(4, 8)], r(1, 1), PACK, 0),
    ([r(8, 1), r(2, 8)], r(1, 4), FAIR, 1),  # memory rules out the freest by cores
    ([None, r(2, 8)], r(1, 1), FAIR, 1),  # a lost worker takes nothing
    ([r(2, 8), r(3, 8)], r(4, 1), FAIR, None),  # 5 cores free, split: no room
    ([r(2, 8), r(3, 8)], r(4, 1), PACK, None),
    ([], r(1, 1), FAIR, None),
], ids=["fair: most free", "binpacking: fullest", "binpacking: fullest that fits",
        "fair: memory breaks ties", "binpacking: memory breaks ties", "fair: first of equals",
        "binpacking: first of equals", "fair: memory must fit", "lost worker skipped",
        "fair: split room is no room", "binpacking: split room is no room", "no workers"])
def test_pick(free, size, sort, index):
    assert pick(free, size, sort) == index


@pytest.mark.parametrize("free, size, n", [
    ([r(4, 8), r(4, 8)], [r(4, 8), r(4, 8)], 2),
    ([r(3, 8), r(4, 8)], [r(4, 8), r(4, 8)], 1),
    ([r(4, 7), r(4, 8)], [r(4, 8), r(4, 8)], 1),  # memory in use: not whole
    ([None, r(4, 8)], [r(4, 8), r(4, 8)], 1),  # a lost worker is not whole
], ids=["all whole", "a core used", "memory used", "lost"])
def test_whole(free, size, n):
    assert whole(free, size) == n


def _place_all(sort: NodeSort, sizes: list[Resources], n_workers: int) -> list[Resources]:
    free: list[Resources | None] = [r(8, 32)] * n_workers
    for s in sizes:
        i = pick(free, s, sort)
        assert i is not None
        free[i] = free[i] - s
    return free


@pytest.mark.parametrize("sort, whole_left", [(FAIR, 0), (PACK, 2)], ids=["fair", "binpacking"])
def test_a_stream_of_small_drivers_leaves_whole_workers_only_when_packed(sort, whole_left):
    # 4 workers of 8 cores, 12 drivers of 1 core: fair spreads 3 a worker, packing fills 1.5
    free = _place_all(sort, [r(1, 2)] * 12, 4)
    assert whole(free, [r(8, 32)] * 4) == whole_left
    # and an 8-core executor fits only where a worker stayed whole
    assert (pick(free, r(8, 4), sort) is not None) == (whole_left > 0)
