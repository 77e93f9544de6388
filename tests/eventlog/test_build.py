"""Logs -> a workload ``sessionsched simulate`` runs as is: every readable log an app, the
unreadable ones named and left out, queues from the apps or a config, the cluster given or
inferred and said so."""

from __future__ import annotations

import pytest
import yaml
from eventlog_builders import T0, app_log, lz4_stream, stage, text

from sessionsched.config import QueueConfig
from sessionsched.eventlog.app_entry import Defaults, parse_rule
from sessionsched.eventlog.build import NoApps, Source, build
from sessionsched.eventlog.shape import Shape
from sessionsched.sim import load_workload, simulate


def _logs(tmp_path, *logs: tuple[str, list[str]]):
    for name, lines in logs:
        (tmp_path / name).write_bytes(text(lines))
    return tmp_path


def test_logs_to_a_workload_the_simulator_runs(tmp_path):
    d = _logs(tmp_path,
              ("app-2", app_log(name="late", app_id="app-2", start=T0 + 30_000,
                                props={"spark.sessionsched.queue": "etl"})),
              ("app-1", app_log(name="early", app_id="app-1",
                                stages=[stage(0, [1000, 2000]), stage(1, [500], parents=[0])])))
    (d / "app-3.lz4").write_bytes(lz4_stream(text(app_log(name="late", app_id="app-3",
                                                          start=T0 + 60_000))))
    built = build([d])
    assert built.skipped == ()
    assert built.said[0].startswith("cluster inferred from the logs: 1 worker(s) of 2 cores")
    data = yaml.safe_load(built.text)
    assert [(a["name"], a["submit"], a.get("queue")) for a in data["apps"]] == [
        ("early", 0.0, None), ("late", 30.0, "root.etl"), ("late-2", 60.0, None)]
    assert data["queues"] == [{"name": "root", "queues": [{"name": "default"},
                                                          {"name": "etl"}]}]
    assert "# app-1 (early, Spark 4.0.1): submit is its start" in built.text
    out = tmp_path / "w.yaml"
    out.write_text(built.text)
    result = simulate(load_workload(out))
    assert result.summary["completed"] == 3


def test_unreadable_logs_are_named_and_left_out(tmp_path):
    d = _logs(tmp_path, ("app-1", app_log()), ("app-2", app_log(app_id="app-2")[:-1]),
              ("notes.doc", ["# notes"]))
    (d / "app-3.lz4").write_bytes(lz4_stream(text(app_log()))[:-21])
    built = build([d, d / "missing"])
    assert built.apps == 1
    assert sorted(built.skipped) == sorted([
        f"{d / 'app-2'}: skipped: incomplete: no SparkListenerApplicationEnd (cut short, or "
        "copied while the app ran)",
        f"{d / 'app-3.lz4'}: skipped: truncated lz4 stream (no end block)",
        f"{d / 'notes.doc'}: skipped: unknown codec 'doc' (Spark writes lz4, lzf, snappy, zstd)",
        f"{d / 'missing'}: no such file or directory"])


def test_no_readable_log(tmp_path):
    (tmp_path / "x").write_text("hello\n")
    with pytest.raises(NoApps, match=r"no event log could be read \(1 skipped\)"):
        build([tmp_path])


CONFIG_QUEUES = [{"name": "root", "queues": [
    {"name": "etl", "admission": "reserve"}, {"name": "adhoc", "policy": "priority"}]}]


def test_queues_and_defaults_from_a_config_and_a_given_cluster(tmp_path):
    d = _logs(tmp_path, ("app-1", app_log(user="alice")),
              ("app-2", app_log(app_id="app-2", user="bob", start=T0 + 1000)),
              ("app-3", app_log(app_id="app-3", start=T0 + 2000,
                                props={"spark.sessionsched.queue": "nowhere"})))
    source = Source(shape=Shape(2, 4, 8192), queues=CONFIG_QUEUES, config_name="server.yaml",
                    defaults=Defaults("root.adhoc", 4000),
                    queue_rules=(parse_rule("user:alice=etl"),))
    built = build([d], source)
    data = yaml.safe_load(built.text)
    assert data["cluster"]["cores"] == 8 and data["cluster"]["workers"] == 2
    assert data["cluster"]["memory"] == "16g"
    assert built.said == ()
    assert [(a.get("queue"), a["priority"]) for a in data["apps"]] == [
        ("root.etl", 4000), ("root.adhoc", 4000), ("root.adhoc", 4000)]
    assert "queue 'nowhere' left out" in built.text
    assert [QueueConfig.model_validate(q) for q in data["queues"]]


def test_an_app_that_never_fits_the_given_cluster_is_left_out(tmp_path):
    d = _logs(tmp_path, ("app-1", app_log()),
              ("app-2", app_log(app_id="app-2", props={"spark.executor.cores": "16"})))
    built = build([d], Source(shape=Shape(1, 8, 8192)))
    assert built.apps == 1
    (line,) = built.skipped
    assert line.startswith("app-2: left out: never fits")
