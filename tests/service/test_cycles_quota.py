"""A lowered queue cap is enforced with nobody waiting, and a raised one starts the queue's
waiting apps: the service stepped by hand on a 6-core memory cluster (``stepped_service.py``),
the caps changed by the time-of-day plans' own entry point (``service.plans.Plans.apply``, what
their cron trigger calls)."""

from __future__ import annotations

import pytest
from test_cycles_sharing import CORES, ONE_CORE, settle

from sessionsched.backends.memory import WORK, MemoryCluster
from sessionsched.model import Resources
from tests.support.stepped_service import Clock, stepped_service

QUEUES = [{"name": "root", "queues": [
    {"name": "capped", "policy": "fifo", "admission": "reserve", "reclaim_timeout": 0,
     "max_cores": CORES},
]}]
# Both fire once a year and never during the test: it applies them by hand. At start the one
# that fired last (2 January) is in force: the configured cap.
LOWER, RAISE = 0, 1
PLANS = [{"cron": "0 0 1 1 *", "queues": {"root.capped": {"max_cores": 2}}},
         {"cron": "0 0 2 1 *", "queues": {"root.capped": {"max_cores": CORES}}}]
MIN_TWO = {**ONE_CORE, "spark.dynamicAllocation.minExecutors": "2"}


@pytest.fixture
def s(state_dir, tmp_path):
    cluster = MemoryCluster(Resources(CORES, 8192), driver_slots=4, driver_start_s=1.0,
                            executor_start_s=1.0, executor_idle_timeout_s=60)
    with stepped_service(state_dir, cluster, tmp_path, Clock(), QUEUES, plans=PLANS,
                         defaults={"queue": "root.capped"}) as stepped:
        yield stepped


def test_a_lowered_cap_takes_executors_back_and_a_raised_one_starts_the_waiting_apps(s):
    a = s.submit("busy", **MIN_TWO, **{WORK: "30x120"})  # wants 30 executors for minutes
    s.until_true(lambda: s.executors(a) == (CORES,), "A to take the whole idle cluster")

    s.service.plans.apply(LOWER)  # max_cores 6 -> 2; nobody else wants a core
    settle(s, (a,), (2,), "A down to the new cap (reclaim_timeout 0: killed at once)")
    assert s.app(a)["state"] == "RUNNING" and s.app(a)["target"] == 2

    b = s.submit("next", **MIN_TWO, **{WORK: "2x5"})
    s.cycle(1.0)
    waiting = s.app(b)
    assert waiting["state"] == "ACCEPTED" and waiting["reason_code"] == "queue_max_cores", waiting
    assert "whose max_cores is 2" in waiting["reason"], waiting

    s.service.plans.apply(RAISE)  # back to 6: B's two reserved executors fit beside A's floor
    done = s.until(b, "FINISHED", cycles=200)
    assert done["exit_code"] == 0 and done["first_executor_at"]
    settle(s, (a,), (CORES,), "A back to the whole cluster once B is done")
