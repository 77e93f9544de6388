"""Gangs in the service, stepped by hand on a 6-core memory cluster (``stepped_service.py``):
a gang reserves room as the running apps give theirs back and launches with all N executors
at once (N its floor while it runs); ``hard`` ends FAILED at its timeout and its room goes to
the others; ``soft`` goes on as an ordinary app and finishes; two gangs in two queues both
finish; a gang the cluster can never hold is refused at submission with its numbers; a
malformed YuniKorn annotation is refused with its line (docs/design/gangs.md)."""

from __future__ import annotations

import pytest

from sessionsched.backends.memory import WORK, MemoryCluster
from sessionsched.model import Resources
from sessionsched.spark.gang_properties import POLICY_PARAMETERS, SIZE, STYLE, TASK_GROUPS, TIMEOUT
from tests.support.stepped_service import Clock, Stepped, stepped_service

CORES = 6
ONE_CORE = {"spark.executor.cores": "1", "spark.executor.memory": "512m"}
QUEUES = [{"name": "root", "queues": [
    {"name": "fair", "policy": "fairshare", "reclaim_timeout": 0},
    {"name": "other", "policy": "fairshare", "reclaim_timeout": 0},
]}]


@pytest.fixture
def s(state_dir, tmp_path):
    cluster = MemoryCluster(Resources(CORES, 8192), driver_slots=6, driver_start_s=1.0,
                            executor_start_s=1.0, executor_idle_timeout_s=5)
    with stepped_service(state_dir, cluster, tmp_path, Clock(), QUEUES,
                         defaults={"queue": "root.fair"}) as stepped:
        yield stepped


def submit(s: Stepped, name: str, queue: str, work: str, **conf: str) -> str:
    return s.submit(name, queue=queue, **ONE_CORE, **{WORK: work}, **conf)


def engine(s: Stepped):
    return s.service.view.engine


def held_cores(s: Stepped, app_id: str) -> int | None:
    res = engine(s).reservation(app_id)
    return None if res is None else res.held.cores


def test_a_gang_accumulates_launches_whole_and_keeps_n(s):
    a = submit(s, "a", "root.other", "2x20")
    b = submit(s, "b", "root.other", "4x60")
    s.until_true(lambda: s.executors(a, b) == (2, 4), "A and B to fill the cluster")
    g = submit(s, "g", "root.fair", "4x30", **{SIZE: "4"})
    s.cycle()
    seen = s.app(g)
    assert seen["state"] == "ACCEPTED" and seen["reason_code"] == "gang_reserving", seen
    assert "holds 0 cores/0 MiB of the 4 cores/2048 MiB" in seen["reason"], seen
    # A small app behind the gang in its queue waits behind it (strict head-of-line).
    small = submit(s, "small", "root.fair", "1x5")
    s.cycle()
    assert s.app(small)["reason_code"] == "behind_app", (s.app(small), s.app(g))
    # A's tasks end at 20 s: its 2 cores are set aside for the gang, not given to B or small.
    s.until_true(lambda: held_cores(s, g) == 2, "the gang to hold A's two cores", cycles=200)
    assert s.app(small)["state"] == "ACCEPTED"
    assert "holds 2 cores/1024 MiB of the 4 cores/2048 MiB" in s.app(g)["reason"]
    for _ in range(10):  # held, not handed out: B keeps 4 and nobody starts meanwhile
        s.cycle(1.0)
        assert s.executors(b) == (4,) and held_cores(s, g) == 2
        assert s.app(g)["state"] == "ACCEPTED" and s.app(small)["state"] == "ACCEPTED"
    # B ends: the gang is whole, launches, and gets its 4 executors together.
    s.until(g, "RUNNING", cycles=400)
    facts = engine(s).apps[g]
    assert facts.target >= 4, facts
    s.until_true(lambda: s.executors(g) == (4,), "the gang's 4 executors")
    assert held_cores(s, g) is None
    # N is its floor: the small app behind it starts beside it and takes none of its four.
    s.until(small, "RUNNING", cycles=200)
    assert engine(s).apps[g].target >= 4
    for app_id in (g, small):
        done = s.until(app_id, "FINISHED", cycles=400)
        assert done["exit_code"] == 0


def test_hard_fails_at_its_timeout_and_its_room_goes_to_others(s):
    a = submit(s, "a", "root.other", "2x5")
    s.until_true(lambda: s.executors(a) == (2,), "A to hold two cores")
    b = submit(s, "b", "root.other", "6x600")  # wants all six cores, gets the four left
    s.until_true(lambda: s.executors(a, b) == (2, 4), "A and B to fill the cluster")
    g = submit(s, "g", "root.fair", "4x30", **{SIZE: "4", TIMEOUT: "20s", STYLE: "HARD"})
    s.until_true(lambda: held_cores(s, g) == 2, "the gang to hold A's two cores", cycles=100)
    since = engine(s).reservation(g).since
    assert s.executors(b) == (4,)  # B wants them, but they are the gang's
    failed = s.until(g, "FAILED", step_s=1.0, cycles=60)
    assert "gang of 4 executor(s) not whole after its 20s timeout (hard)" in failed["reason"]
    assert "it held 2 cores/1024 MiB of the 4 cores/2048 MiB" in failed["reason"], failed
    assert s.clock.now - since == pytest.approx(20.0, abs=1.5)
    # The room is back at once: B grows into the two cores within seconds.
    s.until_true(lambda: s.executors(b) == (6,), "B to take the gang's room", step_s=0.5,
                 cycles=20)


def test_soft_goes_on_as_an_ordinary_app_and_finishes(s):
    a = submit(s, "a", "root.other", "2x5")
    b = submit(s, "b", "root.other", "4x40")
    s.until_true(lambda: s.executors(a, b) == (2, 4), "A and B to fill the cluster")
    g = submit(s, "g", "root.fair", "4x10", **{
        TASK_GROUPS: '[{"name": "spark-executor", "minMember": 4, '
                     '"minResource": {"cpu": "1", "memory": "512Mi"}}]',
        POLICY_PARAMETERS: "placeholderTimeoutInSeconds=15 gangSchedulingStyle=Soft"})
    s.until_true(lambda: held_cores(s, g) == 2, "the gang to hold A's two cores", cycles=100)
    # At its timeout the reservation is given up and it starts as an ordinary app, with the
    # room there is (B still holds four).
    s.until_true(lambda: s.app(g)["state"] != "ACCEPTED", "the gang to fall back",
                 step_s=1.0, cycles=30)
    assert held_cores(s, g) is None
    assert s.executors(b) == (4,)
    done = s.until(g, "FINISHED", cycles=400)
    assert done["exit_code"] == 0


def test_two_gangs_in_two_queues_both_finish(s):
    a = submit(s, "a", "root.fair", "3x10")
    b = submit(s, "b", "root.other", "3x20")
    s.until_true(lambda: s.executors(a, b) == (3, 3), "A and B to fill the cluster")
    g1 = submit(s, "g1", "root.fair", "4x10", **{SIZE: "4"})
    g2 = submit(s, "g2", "root.other", "4x10", **{SIZE: "4"})
    s.cycle()
    assert {s.app(g)["reason_code"] for g in (g1, g2)} == {"gang_reserving"}
    for app_id in (g1, g2):
        done = s.until(app_id, "FINISHED", cycles=600)
        assert done["exit_code"] == 0


def test_a_gang_the_cluster_can_never_hold_is_refused_with_its_numbers(s):
    s.cycle()  # the cluster's workers seen
    body = {"argv": [f"--conf={SIZE}=7", "--conf=spark.executor.cores=1", "job.py"],
            "cwd": str(s.cwd), "name": "big"}
    r = s.client.post("/api/v1/apps", json=body)
    assert r.status_code == 400, r.text
    assert "7 executor(s) of 1 cores/1024 MiB (a gang of 7) do not fit the cluster" in r.text
    assert all(a["name"] != "big" for a in s.client.get("/api/v1/apps").json())  # not stored


@pytest.mark.parametrize("conf, fragment", [
    ({TASK_GROUPS: "[{"}, "task-groups: not JSON"),
    ({SIZE: "4", STYLE: "firm"}, "expected hard or soft"),
    ({TASK_GROUPS: '[{"name": "spark-executor", "minMember": 2}]',
      POLICY_PARAMETERS: "gangSchedulingStyle"}, "is not PARAM=VALUE"),
])
def test_a_malformed_gang_is_refused_with_one_line(s, conf, fragment):
    argv = [f"--conf={k}={v}" for k, v in conf.items()] + ["job.py"]
    r = s.client.post("/api/v1/apps", json={"argv": argv, "cwd": str(s.cwd), "name": "bad"})
    assert r.status_code == 400, r.text
    assert fragment in r.text and "\\n" not in r.text
