"""The cluster of a workload from logs: given as ``workers=N,cores=C,memory=M``, or inferred
from the executors the logs show (one worker per host, the most held at once on one)."""

from __future__ import annotations

import pytest
from eventlog_builders import T0, app_log

from sessionsched.eventlog.events import parse_app
from sessionsched.eventlog.shape import Need, Shape, infer_shape, parse_shape


def test_a_given_shape():
    assert parse_shape("workers=3, cores=8,memory=16g") == Shape(3, 8, 16384)


@pytest.mark.parametrize("text,why", [
    ("workers=3,cores=8", "memory missing"),
    ("workers=3,cores=8,memory=16g,disk=1", "expected workers=N,cores=C,memory=M"),
    ("workers=x,cores=8,memory=1g", "whole numbers"),
    ("workers=0,cores=8,memory=1g", "above 0"),
    ("workers=99999999999999999999,cores=1,memory=1g", "at most 100000 workers"),
    ("workers=1,cores=8,memory=lots", "not a size"),
    # int() refused it: "invalid literal for int() with base 10: '²'"
    ("workers=²,cores=8,memory=1g", "whole numbers"),
    # the last one won without a word
    ("workers=2,cores=8,memory=1g,workers=3", "workers given twice"),
])
def test_bad_shapes(text, why):
    with pytest.raises(ValueError, match=why):
        parse_shape(text)


def _need(cores=1, mib=1024, first=1, in_cluster=False, driver_cores=1):
    return Need(cores, mib, driver_cores, 1024, in_cluster, first)


def test_the_most_held_at_once_on_one_host():
    # two apps overlapping on host a (2 + 2 cores), one alone on host b (1 core)
    a = parse_app(app_log(executors=[("1", "a", 2)], start=T0))
    b = parse_app(app_log(app_id="app-2", executors=[("1", "a", 2), ("2", "b", 1)],
                          start=T0 + 500))
    shape = infer_shape([a, b], [1024, 2048], [_need(2), _need(2)])
    assert shape == Shape(workers=2, cores=4, mem_mib=3072)


def test_apps_one_after_another_share_the_room():
    a = parse_app(app_log(executors=[("1", "a", 2)], start=T0, end=T0 + 10_000))
    b = parse_app(app_log(app_id="app-2", executors=[("1", "a", 2)], start=T0 + 20_000))
    assert infer_shape([a, b], [1024, 1024], [_need(2), _need(2)]) == Shape(1, 2, 1024)


def test_raised_until_every_app_could_start():
    a = parse_app(app_log(executors=[]))
    shape = infer_shape([a], [4096], [_need(cores=3, mib=4096, first=2, in_cluster=True,
                                             driver_cores=2)])
    assert shape.workers == 1 and shape.cores >= 8 and shape.mem_mib >= 9216


@pytest.mark.timeout(10)
def test_a_floor_beyond_float_precision_is_counted_not_walked():
    # 10**29 first executors: the per-worker share, rounded as a float, fell 8.6e12 executors
    # short, and the workers then grew by one executor at a time
    a = parse_app(app_log(executors=[]))
    shape = infer_shape([a], [1024], [_need(first=10**29)])
    assert min(shape.cores, shape.mem_mib // 1024) == 10**29
