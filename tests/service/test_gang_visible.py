"""A gang's reservation is visible where a waiting app is (docs/design/gangs.md): the app object's
``gang`` (native API, ``status``), the apps table's GANG column, and
``sessionsched_gang_reserved_cores{queue}`` -- all read through ``EngineView.reservation``, the
service stepped by hand on a 4-core memory cluster (``stepped_service.py``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from sessionsched.backends.memory import WORK, MemoryCluster
from sessionsched.commands.gang_text import gang_line, gang_mark
from sessionsched.model import Resources
from tests.support.stepped_service import Clock, stepped_service

CORES = 4
ONE_CORE = {"spark.executor.cores": "1", "spark.executor.memory": "512m"}
QUEUES = [{"name": "root", "queues": [{"name": "etl", "policy": "fifo"}]}]
GANG = {"spark.sessionsched.gang.size": "3", "spark.sessionsched.gang.timeout": "120",
        "spark.sessionsched.gang.style": "hard"}


@pytest.fixture
def s(state_dir, tmp_path):
    cluster = MemoryCluster(Resources(CORES, 8192), driver_slots=4, driver_start_s=1.0,
                            executor_start_s=1.0, executor_idle_timeout_s=60)
    with stepped_service(state_dir, cluster, tmp_path, Clock(), QUEUES,
                         defaults={"queue": "root.etl"}) as stepped:
        yield stepped


def reserved_cores(s) -> float:
    for line in s.client.get("/metrics").text.splitlines():
        if line.startswith('sessionsched_gang_reserved_cores{queue="root.etl"}'):
            return float(line.split()[-1])
    pytest.fail("no sessionsched_gang_reserved_cores for root.etl")


def test_a_reserving_gang_shows_held_needed_since_and_deadline_then_nothing_once_whole(s):
    # A holds 2 of the 4 cores (its floor: minExecutors 2) while it works; the gang of 3
    # one-core executors (a client-mode driver: a driver slot, no core) can reserve 2 only.
    a = s.submit("hog", **ONE_CORE, **{"spark.dynamicAllocation.minExecutors": "2",
                                       "spark.dynamicAllocation.maxExecutors": "2",
                                       WORK: "2x20"})
    s.until_true(lambda: s.executors(a) == (2,), "A to hold its 2 executors")
    g = s.submit("gang", **ONE_CORE, **GANG, **{WORK: "3x1"})
    reserving = s.until_true(lambda: (s.app(g)["gang"] or {}).get("reservation")
                             and s.app(g), "the gang reserving")
    gang = reserving["gang"]
    assert (gang["executors"], gang["timeout_s"], gang["style"]) == (3, 120.0, "hard")
    res = gang["reservation"]
    assert (res["held_cores"], res["needed_cores"]) == (2, 3), res
    assert (res["held_memory_mib"], res["needed_memory_mib"]) == (2 * 512, 3 * 512), res
    since = datetime.fromisoformat(res["since"].replace("Z", "+00:00"))
    deadline = datetime.fromisoformat(res["deadline"].replace("Z", "+00:00"))
    assert deadline - since == timedelta(seconds=120)
    assert reserving["state"] == "ACCEPTED"
    assert reserved_cores(s) == 2

    # What `status` and `apps` print of it, 30 s into the wait.
    now = since + timedelta(seconds=30)
    assert gang_line(gang, now) == (
        "3 executors, hard, timeout 120s; reserved 2/3 cores, 1024/1536 MiB since "
        f"{since.astimezone().strftime('%H:%M:%S')}, 1m30s left")
    assert gang_mark(gang, now) == "3 2/3c 1m30s"

    # A ends: the gang is whole, launches, and reserves no more.
    s.until(a, "FINISHED", cycles=200)
    started = s.until_true(lambda: (a_ := s.app(g))["state"] != "ACCEPTED" and a_,
                           "the gang launched", cycles=50)
    assert started["gang"]["reservation"] is None
    assert reserved_cores(s) == 0
    assert s.until(g, "FINISHED", cycles=200)["exit_code"] == 0


def test_an_app_without_a_gang_has_gang_null_and_no_mark(s):
    a = s.submit("plain", **ONE_CORE, **{WORK: "1x1"})
    assert s.app(a)["gang"] is None
    assert gang_line(None) == gang_mark(None) == "-"


def test_before_the_first_reserved_core_no_clock_is_shown():
    gang = {"executors": 8, "style": "soft", "timeout_s": 60.0, "reservation": {
        "held_cores": 0, "needed_cores": 9, "held_memory_mib": 0, "needed_memory_mib": 9,
        "since": None, "deadline": None}}
    assert gang_mark(gang) == "8 0/9c"
    assert gang_line(gang) == ("8 executors, soft, timeout 60s; reserved 0/9 cores, 0/9 MiB "
                               "(its timeout starts at the first reserved core)")


def test_time_left_never_goes_below_zero():
    gang = {"executors": 8, "style": "soft", "timeout_s": 60.0, "reservation": {
        "held_cores": 1, "needed_cores": 9, "held_memory_mib": 1, "needed_memory_mib": 9,
        "since": "2026-01-01T00:00:00Z", "deadline": "2026-01-01T00:01:00Z"}}
    late = datetime(2026, 1, 1, 0, 5, tzinfo=timezone.utc)
    assert gang_mark(gang, late) == "8 1/9c 0s"
