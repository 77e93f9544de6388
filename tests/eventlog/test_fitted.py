"""What ``workload from-eventlogs`` fits from the logs themselves: the submission sessionsched
stamped, the driver's own work between and after stages, and the cluster's latencies
(sessionsched/eventlog/fitted.py; docs/operator/simulator.md)."""

from __future__ import annotations

import json

import pytest
import yaml

from sessionsched.eventlog.app_entry import app_entry
from sessionsched.eventlog.build import Source, build
from sessionsched.eventlog.events import AppFacts, ExecutorFacts, StageFacts
from sessionsched.eventlog.fitted import (
    driver_spans,
    executor_spans,
    fitted_cluster,
    idle_timeouts_s,
    work_s,
)
from sessionsched.eventlog.shape import parse_shape
from tests.eventlog.eventlog_builders import T0, app_log, stage

DYNAMIC = {"spark.dynamicAllocation.enabled": "true"}


def facts(stages=(), executors=(), props=None, start=T0, end=T0 + 60_000) -> AppFacts:
    return AppFacts("app-1", "a", "alice", start, end, 0, "4.0.1", props or {}, tuple(stages),
                    tuple(executors), None)


def entry_of(f: AppFacts) -> dict:
    return app_entry(f, 0.0, f.name).app


def test_the_stamped_submission_is_the_submit_and_the_logs_fit_the_driver_start(tmp_path):
    # b was submitted 2 s after a but waited 30 s in a queue: its start says 32, its stamp 2.
    a = app_log("a", "app-a", start=T0 + 5000, props={
        "spark.sessionsched.submitTime": str(T0), "spark.sessionsched.launchTime": str(T0)})
    b = app_log("b", "app-b", start=T0 + 38_000, props={
        "spark.sessionsched.submitTime": str(T0 + 2000),
        "spark.sessionsched.launchTime": str(T0 + 31_000)})
    for name, lines in (("a", a), ("b", b)):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    built = build([tmp_path])
    data = yaml.safe_load(built.text)
    assert [(x["name"], x["submit"]) for x in data["apps"]] == [("a", 0.0), ("b", 2.0)]
    assert data["cluster"]["driver_start_s"] == 6.0  # the median of 5 and 7
    assert "submit is its submission, as sessionsched stamped it" in built.text
    assert "driver_start_s 6: the median of 2" in built.text


def test_an_unstamped_app_keeps_its_start_and_no_driver_start_is_fitted(tmp_path):
    (tmp_path / "a").write_text("\n".join(app_log("a", "app-a", start=T0 + 5000)) + "\n")
    built = build([tmp_path])
    data = yaml.safe_load(built.text)
    assert data["apps"][0]["submit"] == 0.0 and "driver_start_s" not in data["cluster"]
    assert "submit is its start (a log holds no submission)" in built.text


def test_the_drivers_own_work_between_stages_and_after_the_last(tmp_path):
    lines = app_log("a", stages=[stage(0, [1000, 2000]), stage(1, [500], gap_ms=4000)],
                    end=None)
    (tmp_path / "a").write_text("\n".join(lines) + "\n")
    app = yaml.safe_load(build([tmp_path]).text)["apps"][0]
    assert "gap_s" not in app["stages"][0]  # the first stage's is startup_s
    assert app["stages"][1]["gap_s"] == 4.0
    assert app["tail_s"] == 1.0  # the builder's app ends 1 s after its last stage


def test_a_stage_submitted_while_another_ran_has_no_gap():
    stages = (StageFacts(0, "s0", 1, (), T0, T0 + 9000, (9000,)),
              StageFacts(1, "s1", 1, (), T0 + 1000, T0 + 3000, (2000,)),
              StageFacts(2, "s2", 1, (), T0 + 12_000, T0 + 13_000, (1000,)))
    app = entry_of(facts(stages, end=T0 + 15_000))
    assert [s.get("gap_s") for s in app["stages"]] == [None, None, 3.0]
    assert app["tail_s"] == 2.0


def test_driver_start_needs_the_launch_stamp():
    stamped = facts(props={"spark.sessionsched.launchTime": str(T0 - 8000)})
    assert driver_spans([stamped, facts()]) == [(T0 - 8000, T0)]
    assert fitted_cluster([stamped, facts()])[0]["driver_start_s"] == 8.0


def test_executor_start_is_from_the_later_of_the_demand_and_a_freed_core():
    # a's stage at +2 s; its executor 1 added at +12 s: 10 s. b's executor 2 is added at
    # +40 s; its stage came at +20 s, but a core was freed (a's executor 1 removed) at +37 s: 3 s.
    a = facts([StageFacts(0, "s", 1, (), T0 + 2000, T0 + 30_000, (1000,))],
              [ExecutorFacts("1", "h", 1, T0 + 12_000, T0 + 37_000)])
    b = facts([StageFacts(0, "s", 1, (), T0 + 20_000, T0 + 50_000, (1000,))],
              [ExecutorFacts("2", "h", 1, T0 + 40_000, None)])
    assert executor_spans([a, b]) == [(T0 + 2000, T0 + 12_000), (T0 + 37_000, T0 + 40_000)]
    assert work_s(executor_spans([a, b]), [], None) == [10.0, 3.0]


CPU_TIME = {  # (span, the starts under way, CPUs) -> the CPU time the span had, in seconds
    "alone": ((0, 4000), [(0, 4000)], 2, 4.0),
    "as many as the CPUs": ((0, 4000), [(0, 4000)] * 2, 2, 4.0),
    "four on two CPUs": ((0, 4000), [(0, 4000)] * 4, 2, 2.0),
    # 2 s alone, then 2 s beside another on 1 CPU
    "joined half-way": ((0, 4000), [(0, 4000), (2000, 6000)], 1, 3.0),
    "no CPUs given: its length": ((0, 4000), [(0, 4000)] * 4, None, 4.0),
}


@pytest.mark.parametrize("span, crowd, cpus, expected", CPU_TIME.values(), ids=CPU_TIME.keys())
def test_with_the_host_cpus_a_start_is_the_cpu_time_it_had(span, crowd, cpus, expected):
    assert work_s([span], crowd, cpus) == [expected]


def test_the_host_cpus_go_into_the_workload_and_its_fitted_starts(tmp_path):
    # Two apps launched together, each driver 8 s to its start, beside each other on 1 CPU:
    # 4 s of CPU each.
    for name in ("a", "b"):
        props = {"spark.sessionsched.launchTime": str(T0 - 8000)}
        (tmp_path / name).write_text("\n".join(app_log(name, app_id=f"app-{name}",
                                                         props=props)) + "\n")
    shape = parse_shape("workers=1,cores=2,memory=4g")
    plain = build([tmp_path], Source(shape=shape))
    assert yaml.safe_load(plain.text)["cluster"]["driver_start_s"] == 8.0
    assert "host_cpus" not in yaml.safe_load(plain.text)["cluster"]
    shared = build([tmp_path], Source(shape=shape, host_cpus=1))
    cluster = yaml.safe_load(shared.text)["cluster"]
    assert (cluster["driver_start_s"], cluster["host_cpus"]) == (4.0, 1)
    assert "as CPU time of 1 shared with the starts beside it" in shared.text


def test_the_idle_timeout_is_the_apps_own():
    apps = [facts(props={**DYNAMIC, "spark.dynamicAllocation.executorIdleTimeout": "5s"}),
            facts(props={**DYNAMIC, "spark.dynamicAllocation.executorIdleTimeout": "5"}),
            facts(props=DYNAMIC), facts()]  # Spark's 60 s; a static app has none
    assert idle_timeouts_s(apps) == [5.0, 5.0, 60.0]
    assert fitted_cluster(apps)[0]["executor_idle_timeout_s"] == 5.0


def test_calibrate_keeps_the_executor_start_whose_simulated_apps_end_as_logged(tmp_path):
    # One app: its executor was added 20 s after its stage (the fit says 20), but its task
    # ran only 40 s after the stage: the app ended as if its executor had taken 40 s, and the
    # calibration follows the ends.
    props = {"spark.dynamicAllocation.enabled": "true",
             "spark.dynamicAllocation.maxExecutors": "1", "spark.executor.cores": "1",
             "spark.sessionsched.submitTime": str(T0), "spark.sessionsched.launchTime": str(T0)}
    stage_at, ran_at = T0 + 7000, T0 + 47_000
    events = [json.loads(line) for line in app_log(
        "a", start=T0 + 5000, props=props, stages=[stage(0, [1000])], executors=[],
        end=ran_at + 2000)]
    for ev in events:
        if ev["Event"] == "SparkListenerTaskEnd":
            ev["Task Info"].update({"Launch Time": ran_at, "Finish Time": ran_at + 1000})
        if ev["Event"] == "SparkListenerStageCompleted":
            ev["Stage Info"]["Completion Time"] = ran_at + 1000
    events.insert(3, {"Event": "SparkListenerExecutorAdded", "Timestamp": stage_at + 20_000,
                      "Executor ID": "1", "Executor Info": {"Host": "h", "Total Cores": 1}})
    (tmp_path / "a").write_text("\n".join(json.dumps(ev) for ev in events) + "\n")
    shape = parse_shape("workers=1,cores=2,memory=4g")
    plain = yaml.safe_load(build([tmp_path], Source(shape=shape)).text)["cluster"]
    built = build([tmp_path], Source(shape=shape, calibrate=True))
    assert plain["executor_start_s"] == 20.0
    assert yaml.safe_load(built.text)["cluster"]["executor_start_s"] == 40.0  # 2 x the fit
    assert "executor_start_s 40: calibrated, of 9 values 10-60" in built.text
