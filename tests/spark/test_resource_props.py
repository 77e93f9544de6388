"""Custom resources an app asks for (``spark.resource_props``): the amounts read from
``spark.{driver,executor,task}.resource.{name}.amount``, Spark's checks as one line naming the
property, and tasks per executor by Spark's rule (the fewest any resource allows).

Each case: the properties, then what must come of them - (driver, executor, task) amounts, or
the line that refuses them."""

from __future__ import annotations

import pytest

from sessionsched.agent.spark_control import tasks_per_executor as agent_tasks
from sessionsched.spark.resource_props import ResourceAsk, resource_ask, tasks_per_executor

E, D, T = "spark.executor.resource.", "spark.driver.resource.", "spark.task.resource."

READ = {
    "none asked: nothing": ({"spark.executor.cores": "4"}, ((), (), {})),
    "executor gpus": ({E + "gpu.amount": "2"}, ((), (("gpu", 2),), {})),
    "driver, executor and task": (
        {D + "gpu.amount": "1", E + "gpu.amount": "2", T + "gpu.amount": "0.5"},
        ((("gpu", 1),), (("gpu", 2),), {"gpu": 0.5})),
    "two names, sorted": ({E + "gpu.amount": "1", E + "fpga.amount": "3"},
                          ((), (("fpga", 3), ("gpu", 1)), {})),
    "a zero amount is none": ({E + "gpu.amount": "0"}, ((), (), {})),
    "a whole task amount": ({E + "gpu.amount": "4", T + "gpu.amount": "2"},
                            ((), (("gpu", 4),), {"gpu": 2.0})),
    "other resource keys are not amounts": (
        {E + "gpu.discoveryScript": "/opt/gpus.sh", E + "gpu.vendor": "nvidia.com"},
        ((), (), {})),
}


@pytest.mark.parametrize("props, want", READ.values(), ids=READ.keys())
def test_amounts_read_from_the_properties(props, want):
    ask = resource_ask(props)
    assert (ask.driver, ask.executor, dict(ask.task)) == want


REFUSED = {
    "a task amount without an executor amount": (
        {T + "gpu.amount": "1"},
        "spark.task.resource.gpu.amount=1 needs spark.executor.resource.gpu.amount: no"
        " executor has gpu for its tasks"),
    "an executor amount that is not a number": (
        {E + "gpu.amount": "two"},
        "spark.executor.resource.gpu.amount='two': expected a whole number >= 0"),
    "a fractional executor amount": (
        {E + "gpu.amount": "1.5"},
        "spark.executor.resource.gpu.amount='1.5': expected a whole number >= 0"),
    "a driver amount that is not a number": (
        {D + "gpu.amount": "x"},
        "spark.driver.resource.gpu.amount='x': expected a whole number >= 0"),
    "a task amount that is not a number": (
        {E + "gpu.amount": "1", T + "gpu.amount": "half"},
        "spark.task.resource.gpu.amount='half': expected a number > 0"),
    "a zero task amount": (
        {E + "gpu.amount": "1", T + "gpu.amount": "0"},
        "spark.task.resource.gpu.amount='0': expected a number > 0"),
    "a task amount above 1 not whole": (
        {E + "gpu.amount": "4", T + "gpu.amount": "1.5"},
        "spark.task.resource.gpu.amount='1.5': a task amount must be at most 1 or a whole number"),
    "an executor amount below the task amount": (
        {E + "gpu.amount": "1", T + "gpu.amount": "2"},
        "spark.executor.resource.gpu.amount=1 is below spark.task.resource.gpu.amount=2: no task"
        " could run"),
}


@pytest.mark.parametrize("props, line", REFUSED.values(), ids=REFUSED.keys())
def test_spark_refusals_as_one_line(props, line):
    with pytest.raises(ValueError) as e:
        resource_ask(props)
    assert str(e.value) == line


TASKS = {
    "cores only: 4 // 1": (4, 1, {}, 4),
    "cores only: task.cpus 2": (4, 2, {}, 2),
    "one gpu a task, 2 gpus: 2 of 4 cores": (
        4, 1, {E + "gpu.amount": "2", T + "gpu.amount": "1"}, 2),
    "half a gpu a task: two share one": (8, 1, {E + "gpu.amount": "2", T + "gpu.amount": "0.5"}, 4),
    "a third of a gpu": (8, 1, {E + "gpu.amount": "1", T + "gpu.amount": "0.33"}, 3),
    "cores fewer than the gpus allow": (2, 1, {E + "gpu.amount": "4", T + "gpu.amount": "0.25"}, 2),
    "two gpus a task": (8, 1, {E + "gpu.amount": "5", T + "gpu.amount": "2"}, 2),
    "the fewest of two resources": (
        8, 1, {E + "gpu.amount": "4", T + "gpu.amount": "1", E + "fpga.amount": "1",
               T + "fpga.amount": "0.5"}, 2),
}


@pytest.mark.parametrize("cores, cpus, props, want", TASKS.values(), ids=TASKS.keys())
def test_tasks_per_executor_by_sparks_rule(cores, cpus, props, want):
    assert tasks_per_executor(cores, cpus, resource_ask(props)) == want
    # the agent's own copy of the rule (it ships alone) says the same
    conf = {"spark.executor.cores": str(cores), "spark.task.cpus": str(cpus), **props}
    assert agent_tasks(conf) == want


def test_nothing_asked_is_the_empty_ask():
    assert resource_ask({}) == ResourceAsk()
