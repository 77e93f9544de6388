"""gang_properties.gang_from_conf: sessionsched's gang properties and YuniKorn's annotations,
each case a named row; malformed input is one line naming the property."""

from __future__ import annotations

import json

import pytest

from sessionsched.model import Gang, GangStyle
from sessionsched.spark.gang_properties import (
    DRIVER_GROUP_NAME,
    EXECUTOR_GROUP_NAME,
    POLICY_PARAMETERS,
    SIZE,
    STYLE,
    TASK_GROUPS,
    TIMEOUT,
    gang_from_conf,
)

# YuniKorn 1.6's Spark example ("Enable Gang scheduling for Spark jobs"), verbatim.
YUNIKORN_GROUPS = """[{
"name": "spark-driver",
"minMember": 1,
"minResource": {
"cpu": "1",
"memory": "2Gi"
},
"nodeSelector": {},
"tolerations": [],
"affinity": {},
"topologySpreadConstraints": []
},
{
"name": "spark-executor",
"minMember": 1,
"minResource": {
"cpu": "1",
"memory": "2Gi"
}
}]"""


def groups(executors: int = 4, *, exec_name: str = "spark-executor", driver: int = 1) -> str:
    return json.dumps([
        {"name": "spark-driver", "minMember": driver, "minResource": {"cpu": "1",
                                                                      "memory": "2Gi"}},
        {"name": exec_name, "minMember": executors, "minResource": {"cpu": "500m",
                                                                    "memory": "1000M"}},
    ])


GOOD = {
    "no gang": ({}, None),
    "policy parameters alone ask for nothing": (
        {POLICY_PARAMETERS: "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"}, None),
    "size alone: 15 min, soft": ({SIZE: "8"}, Gang(8, 900.0, GangStyle.SOFT)),
    "size, Spark time string, style any case": (
        {SIZE: "4", TIMEOUT: "15min", STYLE: "HARD"}, Gang(4, 900.0, GangStyle.HARD)),
    "bare timeout is seconds": ({SIZE: "2", TIMEOUT: "90"}, Gang(2, 90.0, GangStyle.SOFT)),
    "timeout in seconds suffix": ({SIZE: "2", TIMEOUT: "45s"}, Gang(2, 45.0, GangStyle.SOFT)),
    "timeout in hours": ({SIZE: "2", TIMEOUT: "1h"}, Gang(2, 3600.0, GangStyle.SOFT)),
    "YuniKorn's example annotations": (
        {TASK_GROUPS: YUNIKORN_GROUPS,
         POLICY_PARAMETERS: "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"},
        Gang(1, 30.0, GangStyle.HARD)),
    "task groups alone: YuniKorn's defaults": ({TASK_GROUPS: groups(6)}, Gang(6)),
    "executor group named by the executors' annotation": (
        {TASK_GROUPS: groups(3, exec_name="workers"), EXECUTOR_GROUP_NAME: "workers"}, Gang(3)),
    "style Soft": ({TASK_GROUPS: groups(2), POLICY_PARAMETERS: "gangSchedulingStyle=Soft"},
                   Gang(2, 900.0, GangStyle.SOFT)),
    "own properties win over the annotations": (
        {TASK_GROUPS: groups(2), SIZE: "5", STYLE: "soft",
         POLICY_PARAMETERS: "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"},
        Gang(5, 30.0, GangStyle.SOFT)),
}


@pytest.mark.parametrize("conf,want", GOOD.values(), ids=GOOD.keys())
def test_gang_from_conf(conf, want):
    assert gang_from_conf(conf) == want


BAD = {
    "size not a number": ({SIZE: "many"}, f"{SIZE}='many': expected a whole number >= 1"),
    "size zero": ({SIZE: "0"}, f"{SIZE}='0': expected a whole number >= 1"),
    "timeout not a time": ({SIZE: "2", TIMEOUT: "soon"}, f"{TIMEOUT}='soon': expected seconds"),
    "timeout unknown unit": ({SIZE: "2", TIMEOUT: "3weeks"}, f"{TIMEOUT}='3weeks'"),
    "timeout zero": ({SIZE: "2", TIMEOUT: "0"}, "expected a timeout above 0"),
    "style unknown": ({SIZE: "2", STYLE: "firm"}, f"{STYLE}='firm': expected hard or soft"),
    "timeout without a gang": ({TIMEOUT: "60"}, "no gang is asked for"),
    "task groups not JSON": ({TASK_GROUPS: "[{name: x}]"}, f"{TASK_GROUPS}: not JSON"),
    "task groups not a list": ({TASK_GROUPS: '{"name": "spark-executor"}'},
                               "expected a JSON list of task groups"),
    "no executor group": ({TASK_GROUPS: groups(2, exec_name="other")},
                          "no task group named 'spark-executor' for the executors "
                          "(groups: spark-driver, other)"),
    "minMember missing": ({TASK_GROUPS: '[{"name": "spark-executor"}]'}, "no minMember"),
    "minMember not a number": ({TASK_GROUPS: '[{"name": "spark-executor", "minMember": "x"}]'},
                               "minMember='x': expected a whole number >= 1"),
    "minResource malformed": (
        {TASK_GROUPS: '[{"name": "spark-executor", "minMember": 2, '
                      '"minResource": {"memory": "lots"}}]'},
        "minResource memory='lots': expected a Kubernetes quantity"),
    "driver group of two": ({TASK_GROUPS: groups(2, driver=2)}, "a Spark app has one driver"),
    "driver group named elsewhere": (
        {TASK_GROUPS: groups(2, driver=3), DRIVER_GROUP_NAME: "spark-driver"}, "one driver"),
    "duplicate group names": ({TASK_GROUPS: json.dumps(
        [{"name": "spark-executor", "minMember": 1}] * 2)}, "must be unique"),
    "parameter without value": ({TASK_GROUPS: groups(2), POLICY_PARAMETERS: "gangSchedulingStyle"},
                                "'gangSchedulingStyle' is not PARAM=VALUE"),
    "parameter unknown": ({TASK_GROUPS: groups(2), POLICY_PARAMETERS: "foo=1"},
                          "unknown parameter 'foo'"),
    "timeout parameter not a number": (
        {TASK_GROUPS: groups(2), POLICY_PARAMETERS: "placeholderTimeoutInSeconds=1m"},
        "placeholderTimeoutInSeconds='1m': expected a whole number >= 1"),
    "style parameter unknown": (
        {TASK_GROUPS: groups(2), POLICY_PARAMETERS: "gangSchedulingStyle=Medium"},
        "gangSchedulingStyle='Medium': expected hard or soft"),
}


@pytest.mark.parametrize("conf,fragment", BAD.values(), ids=BAD.keys())
def test_malformed_is_one_line_naming_the_problem(conf, fragment):
    with pytest.raises(ValueError) as err:
        gang_from_conf(conf)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)
