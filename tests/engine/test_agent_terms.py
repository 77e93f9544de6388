"""The launch terms the engine decides (``engine.agent_terms``): dynamic allocation on or off,
the executor ceiling handed to the agent, and the ``LaunchDriver`` that carries both."""

from __future__ import annotations

from dataclasses import replace

import pytest
from engine_builders import Run, app, executors, one_queue

from sessionsched.engine import DemandChanged, ExecutorsChanged, LaunchDriver, LaunchTerms, Witness
from sessionsched.engine.agent_terms import (
    demand_after_report,
    dynamic_allocation,
    executor_ceiling,
    launch_decision,
)
from sessionsched.model import Resources

DYNAMIC = [
    # name, spark.dynamicAllocation.enabled as asked (None: unset), via Spark REST -> on?
    ("native, unset: on (the agent steers it)", None, False, True),
    ("native, turned off: a static app", False, False, False),
    ("native, turned on", True, False, True),
    ("Spark REST, unset: off (a JVM app, no agent can steer it)", None, True, False),
    ("Spark REST, turned on: kept", True, True, True),
    ("Spark REST, turned off", False, True, False),
]


@pytest.mark.parametrize("asked,via_rest,on", [r[1:] for r in DYNAMIC],
                         ids=[r[0] for r in DYNAMIC])
def test_dynamic_allocation(asked, via_rest, on):
    assert dynamic_allocation(asked, via_spark_rest=via_rest) is on


CEILING = [
    # name, cluster cores, executor cores -> ceiling
    ("one-core executors: the cluster's cores", 16, 1, 16),
    ("4-core executors: 16 / 4", 16, 4, 4),
    ("rounded down: 10 / 4", 10, 4, 2),
    ("not one executor fits: none handed", 2, 4, None),
    ("no capacity known yet: none handed", 0, 1, None),
    ("a 0-core executor counts as one core", 8, 0, 8),
]


@pytest.mark.parametrize("cores,executor_cores,ceiling", [r[1:] for r in CEILING],
                         ids=[r[0] for r in CEILING])
def test_executor_ceiling(cores, executor_cores, ceiling):
    assert executor_ceiling(Resources(cores, 1 << 20), Resources(executor_cores, 1024)) == ceiling


def test_the_launch_decision_carries_the_apps_dynamic_allocation_and_the_ceiling():
    spec = app("a").executor(2).spec()
    static = replace(app("b").spec(), dynamic_allocation=False)
    assert launch_decision(spec, Resources(8, 1 << 20)).terms == LaunchTerms(True, 4)
    assert launch_decision(static, Resources(8, 1 << 20)).terms == LaunchTerms(False, 8)
    # The terms are the decision's facts: decisions compare by app, as before.
    assert launch_decision(spec, Resources(8, 1 << 20)) == LaunchDriver("a")


def test_the_engine_launches_on_terms_decided_with_the_capacity_of_the_step():
    run = Run(one_queue(), cores=12)
    (launch,) = [d for d in run.submit(app("a").executor(3)) if isinstance(d, LaunchDriver)]
    assert launch.terms == LaunchTerms(dynamic_allocation=True, executor_ceiling=4)  # 12 / 3


RULE = [
    # name, who reported the list, executors listed, demand before -> demand after
    ("no agent speaks (none, not yet, silent): what it holds", Witness.CLUSTER_ALONE, 3, 7, 3),
    ("no agent speaks, holds nothing: wants nothing", Witness.CLUSTER_ALONE, 0, 7, 0),
    ("the cluster's view beside an agent that speaks: its demand stands",
     Witness.CLUSTER, 3, 7, 7),
    ("the agent's own list: its demand stands", Witness.AGENT, 3, 7, 7),
]


@pytest.mark.parametrize("seen_by,listed,before,after", [r[1:] for r in RULE],
                         ids=[r[0] for r in RULE])
def test_demand_after_report(seen_by, listed, before, after):
    assert demand_after_report(seen_by, listed, before) == after


def test_the_engine_applies_it_to_the_books():
    run = Run(one_queue(), cores=8)
    run.submit(app("a"))
    run.step(DemandChanged("a", 6), ExecutorsChanged("a", executors("a", 2), Witness.AGENT))
    assert run.sched.apps["a"].demand == 6  # the agent spoke
    run.step(ExecutorsChanged("a", executors("a", 2), Witness.CLUSTER))
    assert run.sched.apps["a"].demand == 6  # the cluster's view beside it: no change
    run.step(ExecutorsChanged("a", executors("a", 1), Witness.CLUSTER_ALONE))
    assert run.sched.apps["a"].demand == 1  # silent: what the cluster says it holds
    assert run.sched.check() == []
