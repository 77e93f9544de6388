"""``sessionsched workload from-eventlogs``: writes the workload, names on stderr each log it
left out and the cluster it inferred; a bad option or no readable log is one line, exit 2."""

from __future__ import annotations

import json

import pytest
import yaml

from sessionsched.cli import main
from tests.eventlog.eventlog_builders import T0, app_log, text


@pytest.fixture
def logs(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "app-1").write_bytes(text(app_log(name="a", user="alice")))
    (d / "app-2").write_bytes(text(app_log(name="b", app_id="app-2", user="bob",
                                           start=T0 + 5000)))
    (d / "app-3").write_bytes(text(app_log(app_id="app-3"))[:-30])
    return d


def test_writes_the_workload_and_says_what_it_left_out(logs, tmp_path, capsys):
    out = tmp_path / "w.yaml"
    assert main(["workload", "from-eventlogs", str(logs), "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{logs / 'app-3'}: skipped: truncated (its last line is cut short)"
    assert err[1].startswith("cluster inferred from the logs:")
    assert err[2] == f"{out}: 2 app(s)"
    assert [a["name"] for a in yaml.safe_load(out.read_text())["apps"]] == ["a", "b"]
    assert main(["simulate", str(out), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["completed"] == 2


def test_config_cluster_and_rules_to_stdout(logs, tmp_path, capsys):
    config = tmp_path / "server.yaml"
    config.write_text("defaults: {priority: 3000}\nqueues:\n  - name: root\n    queues:\n"
                      "      - {name: default}\n      - {name: etl, admission: reserve}\n")
    assert main(["workload", "from-eventlogs", str(logs / "app-1"), str(logs / "app-2"),
                 "-o", "-", "--config", str(config), "--cluster",
                 "workers=2,cores=4,memory=8g", "--queue-map", "user:alice=etl",
                 "--priority-map", "name:b=9000"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    data = yaml.safe_load(captured.out)
    assert data["cluster"]["cores"] == 8
    assert data["queues"][0]["queues"][1] == {"name": "etl", "admission": "reserve"}
    assert [(a.get("queue"), a["priority"]) for a in data["apps"]] == [
        ("root.etl", 3000), ("root.default", 9000)]


@pytest.mark.parametrize("args,line", [
    (["--cluster", "workers=2"], "--cluster"),
    (["--queue-map", "etl"], "expected user:PATTERN=VALUE"),
    (["--priority-map", "name:x=urgent"], "priority 'urgent' is not a whole number"),
    (["-o", "/no/such/dir/w.yaml"], "directory /no/such/dir does not exist"),
    (["--host-cpus", "0"], "--host-cpus 0: a number of CPUs above 0"),
    (["--host-cpus", "inf"], "--host-cpus inf: a number of CPUs above 0"),
])
def test_bad_options_are_one_line(logs, args, line, capsys):
    out = [] if "-o" in args else ["-o", "-"]
    assert main(["workload", "from-eventlogs", str(logs), *out, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sessionsched workload: ") and line in err
    assert len(err.splitlines()) == 1


def test_no_readable_log_is_exit_2_and_says_why_each_was_left_out(tmp_path, capsys):
    (tmp_path / "junk.json").write_text("junk\n")
    (tmp_path / "junk.zstd").write_bytes(b"\x00\x01junk")
    assert main(["workload", "from-eventlogs", str(tmp_path), "-o", "-"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{tmp_path / 'junk.json'}: skipped: not a Spark event log (its first line is not JSON)",
        f"{tmp_path / 'junk.zstd'}: skipped: not a zstd stream",
        "sessionsched workload: no event log could be read (2 skipped)"]


def test_a_queue_property_that_is_no_queue_name_sends_its_app_to_the_default(logs, capsys):
    (logs / "app-1").write_bytes(text(app_log(name="a", props={
        "spark.sessionsched.queue": "root."})))
    assert main(["workload", "from-eventlogs", str(logs / "app-1"), str(logs / "app-2"),
                 "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert "# queue 'root.' left out (unknown queue 'root.'; known queues: root.default): " \
           "the default" in out
    assert [a.get("queue") for a in yaml.safe_load(out)["apps"]] == [None, None]
