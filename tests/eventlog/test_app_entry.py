"""One app's facts -> its workload entry: queue and priority (properties, rules, defaults),
sizes, executor bounds, stages, conf (named cases)."""

from __future__ import annotations

import json

import pytest
from eventlog_builders import T0, app_log, stage

from sessionsched.eventlog.app_entry import Defaults, app_entry, parse_rule, quantiles
from sessionsched.eventlog.events import parse_app


def entry(defaults: Defaults | None = None, queue_rules=(), priority_rules=(), **log):
    facts = parse_app(app_log(**log))
    return app_entry(facts, 0.0, facts.name, tuple(parse_rule(r) for r in queue_rules),
                     tuple(parse_rule(r) for r in priority_rules), defaults)


QUEUE_PRIORITY = {
    "properties": (dict(props={"spark.sessionsched.queue": "etl", "spark.ego.priority": "7000"},
                        queue_rules=["user:*=adhoc"]), ("etl", 7000)),
    "rule-by-user": (dict(user="bob", queue_rules=["user:alice=a", "user:b*=b"]), ("b", 5000)),
    "rule-by-name": (dict(name="nightly-3", priority_rules=["name:nightly-*=2000"]),
                     (None, 2000)),
    "defaults": (dict(defaults=Defaults("root.default", 3000)), ("root.default", 3000)),
    "nothing": ({}, (None, 5000)),
    "bad-priority": (dict(props={"spark.ego.priority": "high"}), (None, 5000)),
}


@pytest.mark.parametrize("case", sorted(QUEUE_PRIORITY))
def test_queue_and_priority(case):
    kwargs, (queue, priority) = QUEUE_PRIORITY[case]
    app = entry(**kwargs).app
    assert (app.get("queue"), app["priority"]) == (queue, priority)


SIZES = {
    "spark-defaults": ({}, {"driver": {"cores": 1, "memory": "1024m", "in_cluster": False},
                            "executor": {"cores": 2, "memory": "1024m"},  # cores as seen
                            "min_executors": 1, "max_executors": 1}),
    "cluster-mode": ({"spark.submit.deployMode": "cluster", "spark.driver.cores": "2",
                      "spark.driver.memory": "2g", "spark.executor.cores": "4",
                      "spark.executor.memory": "8g", "spark.executor.instances": "3"},
                     {"driver": {"cores": 2, "memory": "2048m", "in_cluster": True},
                      "executor": {"cores": 4, "memory": "8192m"},
                      "min_executors": 3, "max_executors": 3}),
    "dynamic": ({"spark.dynamicAllocation.enabled": "true",
                 "spark.dynamicAllocation.minExecutors": "1",
                 "spark.dynamicAllocation.maxExecutors": "6", "spark.ego.slots.max": "8"},
                {"min_executors": 1, "max_executors": 6, "slots_max": 8}),
    "local-mode": ({"spark.master": "local[3]"}, {"executor": {"cores": 3, "memory": "1024m"}}),
    "dynamic-uncapped": ({"spark.dynamicAllocation.enabled": "true",
                          "spark.dynamicAllocation.maxExecutors": str(2**31 - 1)},
                         {"min_executors": 0, "max_executors": None}),
}


@pytest.mark.parametrize("case", sorted(SIZES))
def test_sizes_and_bounds(case):
    props, want = SIZES[case]
    app = entry(props=props, executors=[] if case == "local-mode" else None).app
    assert {k: app.get(k) for k in want} == want


def test_stages_in_order_with_quantiles_and_waits():
    app = entry(stages=[stage(3, [1000, 2000, 3000, 4000, 5000]), stage(5, [500], parents=[3]),
                        stage(6, [700, 700], parents=[3, 4, 5])], first_stage_at=4500).app
    assert app["startup_s"] == 4.5
    assert app["stages"] == [
        {"id": 3, "tasks": 5, "task_s": 3.0, "task_s_quantiles": [1.0, 2.0, 3.0, 4.0, 5.0]},
        {"id": 5, "tasks": 1, "task_s": 0.5, "after": [3]},
        {"id": 6, "tasks": 2, "task_s": 0.7, "after": [3, 5]},  # 4 was skipped: not a wait
    ]


def test_deciles_for_a_stage_of_many_tasks():
    (s,) = entry(stages=[stage(0, [100 * k for k in range(1, 102)])]).app["stages"]
    assert s["task_s_quantiles"] == [0.1, 1.1, 2.1, 3.1, 4.1, 5.1, 6.1, 7.1, 8.1, 9.1, 10.1]


def test_a_stage_without_task_ends_takes_its_span():
    (s,) = entry(stages=[stage(0, [], tasks=8)]).app["stages"]
    assert (s["tasks"], s["task_s"]) == (8, 0.001)


def test_conf_carries_resources_and_a_gang_that_parses():
    props = {"spark.executor.resource.gpu.amount": "1", "spark.task.cpus": "2",
             "spark.sessionsched.gang.size": "2", "spark.sql.shuffle.partitions": "8"}
    e = entry(props=props)
    assert e.app["conf"] == {"spark.executor.resource.gpu.amount": "1",
                             "spark.sessionsched.gang.size": "2", "spark.task.cpus": "2"}


RAMPS = {
    "Spark's defaults where it set none": ({}, ("1s", "1s")),
    "its own, the sustained one as the first by default": (
        {"spark.dynamicAllocation.schedulerBacklogTimeout": "500ms"}, ("0.5s", "0.5s")),
    "both its own": ({"spark.dynamicAllocation.schedulerBacklogTimeout": "2s",
                      "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout": "5s"},
                     ("2s", "5s")),
}


@pytest.mark.parametrize("props,timeouts", RAMPS.values(), ids=RAMPS.keys())
def test_an_elastic_app_carries_the_backlog_timeouts_it_ramped_by(props, timeouts):
    conf = entry(props={"spark.dynamicAllocation.enabled": "true", **props}).app["conf"]
    assert (conf["spark.dynamicAllocation.schedulerBacklogTimeout"],
            conf["spark.dynamicAllocation.sustainedSchedulerBacklogTimeout"]) == timeouts


def test_a_static_app_carries_none_and_a_bad_timeout_is_noted():
    assert "conf" not in entry(props={"spark.dynamicAllocation.enabled": "false"}).app
    e = entry(props={"spark.dynamicAllocation.enabled": "true",
                     "spark.dynamicAllocation.schedulerBacklogTimeout": "soon"})
    assert e.app["conf"]["spark.dynamicAllocation.schedulerBacklogTimeout"] == "1s"
    assert any("spark.dynamicAllocation.schedulerBacklogTimeout='soon'" in n for n in e.notes)


def test_a_gang_that_does_not_parse_is_left_out_with_a_note():
    e = entry(props={"spark.sessionsched.gang.size": "many"})
    assert "conf" not in e.app
    assert any(n.startswith("gang properties left out") for n in e.notes)


def test_every_entry_says_its_submit_is_its_start():
    e = entry(exit_code=3, start=T0)
    assert "submit is its start" in e.notes[0]
    assert e.app["exit_code"] == 3


@pytest.mark.parametrize("text", ["queue=etl", "host:a=b", "user:=b", "user:a=", "user:a"])
def test_bad_rules(text):
    with pytest.raises(ValueError, match="expected user:PATTERN=VALUE"):
        parse_rule(text)


def test_quantiles_of_one_and_of_many():
    assert quantiles([2.0], 4) == [2.0] * 5
    assert quantiles([4.0, 0.0, 2.0], 4) == [0.0, 1.0, 2.0, 3.0, 4.0]


def on_executors(tasks: list[tuple], stage_id: int = 0) -> list[str]:
    """An app whose stage ran ``tasks``: (executor, launch s, seconds, end reason[, index])
    each, the index its place unless given; its executor 1 added at 1 s, its stage submitted
    at 2 s (``app_log``)."""
    lines = app_log(stages=[stage(stage_id, [])])
    ends = [json.dumps({"Event": "SparkListenerTaskEnd", "Stage ID": stage_id,
                        "Task End Reason": {"Reason": task[3]},
                        "Task Info": {"Index": task[4] if len(task) > 4 else i,
                                      "Executor ID": task[0],
                                      "Launch Time": T0 + task[1] * 1000,
                                      "Finish Time": T0 + (task[1] + task[2]) * 1000,
                                      "Failed": task[3] != "Success"}})
            for i, task in enumerate(tasks)]
    return lines[:-2] + ends + lines[-2:]


OK, LOST = "Success", "ExecutorLostFailure"
WARM_UPS = {
    # each executor's first task 3 and 2 s longer than the stage's usual 2 s: 2.5, and the
    # first tasks leave the stage's task times
    "each executor's first task": ([("1", 0, 5, OK), ("2", 0, 4, OK), ("1", 5, 2, OK),
                                    ("2", 4, 2, OK), ("1", 7, 2, OK), ("2", 6, 2, OK)],
                                   2.5, 2.0),
    # a first task killed with its executor says only that it ran so long: not counted; the
    # task it lost reran on executor 1, after its own first
    "a killed first task": ([("1", 0, 5, OK), ("3", 0, 9, LOST), ("1", 5, 2, OK),
                             ("1", 7, 2, OK)], 3.0, 2.0),
    # executor 1 (added at 1 s, the stage submitted at 2 s) got its first task at 3 s: that
    # second counts too, 1 + 5 - 2
    "offered its first task late": ([("1", 3, 5, OK), ("1", 8, 2, OK), ("1", 10, 2, OK)],
                                    4.0, 2.0),
    # executor 2's first task (index 1) ran again, and its second run is the stage's time:
    # only executor 1's first counts
    "a first task run again": ([("1", 0, 5, OK), ("2", 0, 7, OK), ("1", 5, 2, OK),
                                ("1", 7, 2, OK, 1)], 3.0, 2.0),
    # every task the first on its executor: nothing to compare with, the tasks kept as they ran
    "only first tasks": ([("1", 0, 5, OK), ("2", 0, 4, OK)], None, 4.5),
    # a log without executor ids (local mode): no first tasks known
    "no executor ids": ([("", 0, 5, OK), ("", 5, 2, OK)], None, 3.5),
}


@pytest.mark.parametrize("tasks, warmup_s, task_s", WARM_UPS.values(), ids=WARM_UPS.keys())
def test_an_executors_first_task_is_its_warm_up(tasks, warmup_s, task_s):
    app = app_entry(parse_app(on_executors(tasks)), 0.0, "a").app
    assert (app.get("warmup_s"), app["stages"][0]["task_s"]) == (warmup_s, task_s)
