"""A server config's time-of-day plans in the simulator (``sim.queue_trees``,
``simulate --config --start``): which plan runs from the run's 0, when each later one fires,
and a run whose queues change as they do."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from sessionsched.config import ServerConfig
from sessionsched.model import Admission
from sessionsched.sim import simulate
from sessionsched.sim.queue_trees import planned, upcoming, with_admission
from sessionsched.sim.replay import replay
from tests.sim.sim_builders import BIG_AND_SMALL

MONDAY = datetime(2026, 11, 23, tzinfo=timezone.utc)
H = 3600.0
CONFIG = {
    "queues": [{"name": "root", "queues": [{"name": "default"},
                                           {"name": "etl", "max_cores": 6}]}],
    "plans": [
        {"cron": "0 9 * * *", "timezone": "UTC", "queues": {"etl": {"max_cores": 2}}},
        {"cron": "0 18 * * *", "timezone": "UTC", "queues": {"etl": {"max_cores": 4}}},
    ],
}
DAY, NIGHT = "plan '0 9 * * *': etl max_cores=2", "plan '0 18 * * *': etl max_cores=4"


def etl_cap(root) -> int | None:
    return next(q.max_cores for q in root.walk() if q.name == "root.etl")


PLANNED = [
    # name, start (hours after Monday 00:00), span (hours) -> (at, etl's max_cores, plan)
    ("the plan that fired last runs from 0, the next from its time", 8.5, 2,
     [(0, 4, NIGHT), (0.5 * H, 2, DAY)]),
    ("one plan all along", 10, 2, [(0, 2, DAY)]),
    ("over two days, each change", 8, 48,
     [(0, 4, NIGHT), (H, 2, DAY), (10 * H, 4, NIGHT), (25 * H, 2, DAY), (34 * H, 4, NIGHT)]),
]


@pytest.mark.parametrize("start,span,expected", [r[1:] for r in PLANNED],
                         ids=[r[0] for r in PLANNED])
def test_planned(start, span, expected):
    config = ServerConfig.model_validate(CONFIG)
    changes = planned(config, MONDAY + timedelta(hours=start), span * H)
    assert [(c.at_s, etl_cap(c.root), c.plan) for c in changes] == expected


def test_a_plan_firing_over_itself_changes_nothing_and_one_not_yet_fired_waits_for_its_time():
    config = ServerConfig.model_validate({**CONFIG, "plans": [
        CONFIG["plans"][0], {"at": "2026-11-23T12:00:00Z", "queues": {"etl": {"max_cores": 5}}}]})
    changes = planned(config, MONDAY + timedelta(hours=10), 30 * H)
    assert [(c.at_s, etl_cap(c.root)) for c in changes] == [(0, 2), (2 * H, 5), (23 * H, 2)]
    at_the_start = ServerConfig.model_validate({**CONFIG, "plans": [config.plans[1]]})
    changes = planned(at_the_start, MONDAY + timedelta(hours=10), 30 * H)  # not fired at 10:00
    assert [(c.at_s, etl_cap(c.root)) for c in changes] == [(2 * H, 5)]


@pytest.fixture
def files(tmp_path):
    w, c = tmp_path / "w.yaml", tmp_path / "c.yaml"
    w.write_text(yaml.safe_dump(BIG_AND_SMALL))
    c.write_text(yaml.safe_dump(CONFIG))
    return w, c


def held_cores(result, app: str, since: float) -> int:
    """The most executor cores ``app`` held at any time from ``since`` on."""
    s = result.timeline.executor_cores[app]
    ends = [*s.times[1:], float("inf")]  # each value holds until the next time
    return max(v for end, v in zip(ends, s.values, strict=True) if end > since)


def test_a_run_under_plans_follows_their_caps(files):
    """``big`` (64 tasks of 10 s on 2-core executors) in ``etl``: 6 cores before 09:00 on the
    config alone; from 08:59 on, the night plan's 4, then the day plan's 2 from 09:00 on."""
    w, c = files
    alone = simulate(replay(w, c).workload)
    planned_run = replay(w, c, MONDAY + timedelta(hours=8, minutes=59))
    assert [(ch.at_s, etl_cap(ch.root)) for ch in planned_run.workload.queue_changes] == [
        (0, 4), (60, 2), (9 * H + 60, 4)]  # within the cluster's max_time_s (a day)
    result = simulate(planned_run.workload)
    assert result.plans == ((0.0, NIGHT), (60.0, DAY))  # the run ended before 18:00
    assert result.to_json()["plans"] == [{"at": 0.0, "plan": NIGHT}, {"at": 60.0, "plan": DAY}]
    assert held_cores(alone, "big", 0) == 6
    assert held_cores(result, "big", 0) == 4
    # From the cycle the day plan fired in, 2 cores at most (the queue's reclaim_timeout is 0:
    # the executors above the cap are killed at once): the run takes longer.
    assert held_cores(result, "big", 60) == 2
    assert result.summary["makespan"] > alone.summary["makespan"]
    assert "plans" not in alone.to_json()


def test_admission_for_every_leaf_holds_under_each_plan_too(files):
    w, c = files
    run = replay(w, c, MONDAY + timedelta(hours=8, minutes=59))
    changed = with_admission(run.workload, Admission.NONE)
    assert [q.admission for ch in changed.queue_changes for q in ch.root.leaves()] == [
        Admission.NONE] * 6  # 2 leaves, 3 trees
    assert replace(changed, queue_changes=()).root.leaves()[0].admission is Admission.NONE


def test_the_workloads_start_runs_the_plans_and_start_given_wins(files):
    """A workload from event logs knows what its 0 stands for (``start:``, the first app's
    time): the config's plans fire from there unless the caller says otherwise."""
    w, c = files
    w.write_text(yaml.safe_dump({**BIG_AND_SMALL, "start": "2026-11-23T08:59:00Z"}))
    own = replay(w, c)
    assert own.started
    assert [(ch.at_s, etl_cap(ch.root)) for ch in own.workload.queue_changes][:2] == [
        (0, 4), (60, 2)]
    given = replay(w, c, MONDAY + timedelta(hours=10))
    assert [(ch.at_s, etl_cap(ch.root)) for ch in given.workload.queue_changes][:1] == [(0, 2)]
    w.write_text(yaml.safe_dump(BIG_AND_SMALL))
    assert not replay(w, c).started and replay(w, c).workload.queue_changes == ()


def test_upcoming_leaves_out_the_plan_in_force_now():
    """The estimates run forward from the queues as they are, which the plan in force made."""
    config = ServerConfig.model_validate(CONFIG)
    now = (MONDAY + timedelta(hours=8, minutes=30)).timestamp()
    assert [(c.at_s, etl_cap(c.root)) for c in upcoming(config, now, 12 * H)] == [
        (0.5 * H, 2), (9.5 * H, 4)]
