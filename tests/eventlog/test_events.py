"""One app's event log lines -> its facts; a log that is not one app's whole run is refused
with a reason (named cases)."""

from __future__ import annotations

import json

import pytest
from eventlog_builders import T0, app_log, stage

from sessionsched.eventlog.codecs import UnreadableLog
from sessionsched.eventlog.events import parse_app


def test_the_facts_of_one_app():
    lines = app_log(name="etl", app_id="app-7", user="bob", props={"spark.executor.cores": "2"},
                    stages=[stage(0, [1000, 3000, 2000]), stage(1, [500], parents=[0])],
                    executors=[("1", "h1", 2), ("2", "h2", 2)])
    f = parse_app(lines)
    assert (f.name, f.app_id, f.user, f.start_ms, f.exit_code, f.spark_version) == (
        "etl", "app-7", "bob", T0, 0, "4.0.1")
    assert f.properties["spark.executor.cores"] == "2"
    assert [(s.stage_id, s.tasks, s.parents, s.durations_ms) for s in f.stages] == [
        (0, 3, (), (1000, 3000, 2000)), (1, 1, (0,), (500,))]
    assert [(e.executor_id, e.host, e.cores, e.removed_ms) for e in f.executors] == [
        ("1", "h1", 2, None), ("2", "h2", 2, None)]
    assert f.first_job_ms == T0 + 2000
    assert f.end_ms == T0 + 2000 + 3000 + 500 + 1000


def _with(lines: list[str], *events: dict, at: int = -1) -> list[str]:
    return lines[:at] + [json.dumps(e) for e in events] + lines[at:]


def test_failed_and_retried_tasks_count_their_last_success_once():
    lines = _with(app_log(stages=[stage(0, [1000, 1000])]),
                  {"Event": "SparkListenerTaskEnd", "Stage ID": 0,
                   "Task End Reason": {"Reason": "ExceptionFailure"},
                   "Task Info": {"Index": 0, "Launch Time": 0, "Finish Time": 9000,
                                 "Failed": True}},
                  {"Event": "SparkListenerTaskEnd", "Stage ID": 0,
                   "Task End Reason": {"Reason": "Success"},
                   "Task Info": {"Index": 1, "Launch Time": 0, "Finish Time": 4000}},
                  at=-2)
    assert parse_app(lines).stages[0].durations_ms == (1000, 4000)


def test_a_removed_executor_and_unknown_events():
    lines = _with(app_log(), {"Event": "SparkListenerExecutorRemoved", "Timestamp": T0 + 5000,
                              "Executor ID": "1"},
                  {"Event": "org.example.SomethingElse", "x": 1}, at=-1)
    assert parse_app(lines).executors[0].removed_ms == T0 + 5000


def test_a_stage_never_submitted_is_not_a_stage():
    lines = _with(app_log(), {"Event": "SparkListenerTaskEnd", "Stage ID": 9,
                              "Task End Reason": {"Reason": "Success"},
                              "Task Info": {"Index": 0, "Launch Time": 0, "Finish Time": 1}})
    assert [s.stage_id for s in parse_app(lines).stages] == [0]


def test_no_exit_code_before_spark_4():
    assert parse_app(app_log(exit_code=None)).exit_code is None


def _set(lines: list[str], event: str, *keys: str, value) -> list[str]:
    """``lines`` with one field of the first ``event`` set to ``value`` (``keys``: its path)."""
    out = list(lines)
    at = next(i for i, line in enumerate(out) if json.loads(line)["Event"] == event)
    record = json.loads(out[at])
    node = record
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    out[at] = json.dumps(record)
    return out


REFUSED = {
    "empty": ([], "empty"),
    "foreign-text": (["hello world"], "not a Spark event log (its first line is not JSON)"),
    "foreign-json": (['{"a": 1}'], "not a Spark event log (its first line is no Spark event)"),
    "cut-last-line": (app_log()[:-1] + [app_log()[-1][:20]],
                      "truncated (its last line is cut short)"),
    "damaged-middle": (app_log()[:3] + ["{oops"] + app_log()[3:], "damaged (line 4 is not JSON)"),
    "a time that is no number": (
        _set(app_log(), "SparkListenerApplicationStart", "Timestamp", value="soon"),
        "damaged (line 3: a field is not of the type Spark writes)"),
    "a task count of 1e400": (
        _set(app_log(), "SparkListenerStageSubmitted", "Stage Info", "Number of Tasks",
              value=1e400), "damaged (line 6: a field is not of the type Spark writes)"),
    "a string for a map": (
        _set(app_log(), "SparkListenerEnvironmentUpdate", "Spark Properties", value="x"),
        "damaged (line 2: a field is not of the type Spark writes)"),
    "an event name that is a list": (
        _set(app_log(), "SparkListenerJobStart", "Event", value=["x"]),
        "damaged (line 5: a field is not of the type Spark writes)"),
    "no-app-start": ([line for line in app_log() if "ApplicationStart" not in line],
                     "incomplete: no SparkListenerApplicationStart"),
    "no-app-end": (app_log()[:-1], "incomplete: no SparkListenerApplicationEnd (cut short, "
                                   "or copied while the app ran)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused(case):
    lines, why = REFUSED[case]
    with pytest.raises(UnreadableLog) as e:
        parse_app(lines)
    assert str(e.value) == why
