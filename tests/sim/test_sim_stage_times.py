"""Stages read from event logs: ``task_s_quantiles`` (each task's time drawn from them by the
memory cluster) and ``id``/``after`` (a stage waits only for earlier ones: the simulator runs
stages in the order given)."""

from __future__ import annotations

import re

import pytest
from sim_builders import app, workload

from sessionsched.backends.base import Launch
from sessionsched.backends.memory import WORK, Stage, job_from_launch
from sessionsched.config import ConfigError, parse_model
from sessionsched.sim import simulate
from sessionsched.sim.workload import WorkloadConfig


def test_task_times_spread_over_the_quantiles_deterministically():
    s = Stage(1000, 5.0, (1.0, 2.0, 9.0))
    times = [s.task_time(k) for k in range(1000)]
    assert times == [s.task_time(k) for k in range(1000)]
    assert min(times) >= 1.0 and max(times) <= 9.0
    assert sum(times) / len(times) == pytest.approx(3.5, abs=0.05)  # the mean of the spread
    # any run of tasks covers the spread: the first ten already reach both halves
    assert min(times[:10]) < 2.0 < 5.0 < max(times[:10])
    assert Stage(3, 5.0).task_time(7) == 5.0


def test_work_property_round_trip():
    stages = (Stage(4, 1.5, (0.5, 1.0, 4.0)), Stage(2, 3.0))
    launch = Launch("a", "a", argv=("app.py",),
                    conf={WORK: ",".join(s.work() for s in stages)})
    assert job_from_launch(launch, 1.0).stages == stages


@pytest.mark.parametrize("work", ["4x1~2", "4x1~0/1", "4x1~a/b"])
def test_bad_quantiles_in_the_work_property(work):
    with pytest.raises(ValueError, match="times from quantiles"):
        job_from_launch(Launch("a", "a", argv=("app.py",), conf={WORK: work}), 1.0)


def test_a_spread_stage_ends_with_its_longest_task():
    # 2 tasks on 2 one-core executors: together, so the stage lasts its longer task
    even = app("even", max_executors=2, stages=[{"tasks": 2, "task_s": 5}])
    spread = app("spread", max_executors=2,
                 stages=[{"tasks": 2, "task_s": 5, "task_s_quantiles": [1, 9]}])
    finished = {}
    for a in (even, spread):
        (r,) = simulate(workload(a)).apps
        finished[r.name] = r.finished - r.first_executor
    longest = max(Stage(2, 5, (1.0, 9.0)).task_time(k) for k in range(2))
    assert finished["spread"] - finished["even"] == pytest.approx(longest - 5, abs=1.01)


REFUSED = {
    "after a later stage": ([{"id": 1, "tasks": 1, "task_s": 1, "after": [2]},
                             {"id": 2, "tasks": 1, "task_s": 1}],
                            "apps[0].stages[0].after: 2 is not the id of an earlier stage"),
    "after an unknown stage": ([{"id": 1, "tasks": 1, "task_s": 1, "after": [7]}],
                               "apps[0].stages[0].after: 7 is not the id"),
    "an id twice": ([{"id": 1, "tasks": 1, "task_s": 1}, {"id": 1, "tasks": 1, "task_s": 1}],
                    "apps[0].stages[1].id: 1 is already an earlier stage's id"),
    "one quantile": ([{"tasks": 1, "task_s": 1, "task_s_quantiles": [1]}],
                     "at least 2 times above 0, shortest to longest"),
    "quantiles down": ([{"tasks": 1, "task_s": 1, "task_s_quantiles": [2, 1]}],
                       "at least 2 times above 0, shortest to longest"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused(case):
    stages, why = REFUSED[case]
    with pytest.raises(ConfigError, match=re.escape(why)):
        parse_model(WorkloadConfig, {"apps": [app("a", stages=stages)]}, "w")


def test_stages_with_waits_run_in_order():
    a = app("a", stages=[{"id": 0, "tasks": 2, "task_s": 1},
                         {"id": 3, "tasks": 1, "task_s": 1, "after": [0]}])
    (r,) = simulate(workload(a)).apps
    assert r.state == "FINISHED"
