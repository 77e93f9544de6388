"""``sessionsched simulate --config`` and ``--compare``: a workload under another server
config (its time-of-day plans with ``--start``), two runs side by side (table, JSON, plot), and
one line, exit 2, for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sessionsched.cli import main
from tests.sim.sim_builders import BIG_AND_SMALL, one_queue

WORKLOADS = Path(__file__).resolve().parents[2] / "examples" / "workloads"
PLAN = {"at": "2026-11-23T09:00:00Z", "queues": {"default": {"max_cores": 2}}}
FIRED = "plan 'at 2026-11-23T09:00:00+00:00': default max_cores=2"


@pytest.fixture
def paths(tmp_path):
    out = {"tmp": str(tmp_path)}
    for name, content in (("w", BIG_AND_SMALL), ("fifo", one_queue("fifo")),
                          ("fair", one_queue("fairshare")),
                          ("tiny", {"cluster": {"backend": "memory", "cores": 1}}),
                          ("bad", {"queues": [{"name": "root", "policy": "fairness"}]}),
                          ("planned", one_queue("fifo", plans=[PLAN]))):
        p = tmp_path / f"{name}.yaml"
        p.write_text(yaml.safe_dump(content))
        out[name] = str(p)
    return out


def test_config_runs_the_workload_under_its_queues(paths, capsys):
    assert main(["simulate", paths["w"], "--config", paths["fifo"], "--json", "-"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert {a["queue"] for a in result["apps"]} == {"root.default"}
    assert captured.err == (f"{paths['fifo']}: 2 app(s) name a queue it lacks and run in its "
                            "default queue: big, small\n")


def test_plans_run_with_start_and_are_said_not_to_without(paths, capsys):
    assert main(["simulate", paths["w"], "--config", paths["planned"], "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert "plans" not in json.loads(captured.out)
    assert captured.err.splitlines()[-1] == (
        f"{paths['planned']}: its 1 time-of-day plan(s) did not run: give --start WHEN (the "
        "date and time the run's 0 stands for) to run them")
    # 08:59:30 UTC (+01:00 given: an offset is kept): the plan fires 30 s into the run
    assert main(["simulate", paths["w"], "--config", paths["planned"], "--start",
                 "2026-11-23T09:59:30+01:00", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["plans"] == [
        {"at": 30.0, "plan": FIRED}]
    assert "plan(s) did not run" not in captured.err
    assert main(["simulate", paths["w"], "--config", paths["planned"], "--start",
                 "2026-11-23T08:59:30Z"]) == 0
    assert f"t=30s: {FIRED} fired" in capsys.readouterr().out.splitlines()
    assert main(["simulate", "--compare", paths["w"], paths["w"], "--config-b", paths["planned"],
                 "--start", "2026-11-23T10:00:00Z", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "plans" not in doc["a"]  # the workload's own queues: no plan
    assert doc["b"]["plans"] == [{"at": 0.0, "plan": FIRED}]


def test_compare_prints_both_side_by_side(paths, capsys):
    assert main(["simulate", "--compare", paths["w"], paths["w"], "--config-a", paths["fifo"],
                 "--config-b", paths["fair"]]) == 0
    out = capsys.readouterr().out
    assert "A: w.yaml under fifo.yaml" in out and "B: w.yaml under fair.yaml" in out
    for title in ("summary", "per queue", "usage", "apps that gain most in B",
                  "apps that lose most in B"):
        assert title in out
    small = next(line for line in out.splitlines() if line.strip().startswith("small"))
    assert small.split() == ["small", "84", "14", "-70"]


def test_compare_json_and_plot(paths, tmp_path):
    out, png = tmp_path / "c.json", tmp_path / "c.png"
    assert main(["simulate", "--compare", paths["w"], paths["w"], "--config", paths["fifo"],
                 "--config-b", paths["fair"], "--json", str(out), "--plot", str(png)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc) == {"a", "b", "compare"}
    assert doc["a"]["label"] == "w.yaml under fifo.yaml"
    assert doc["b"]["label"] == "w.yaml under fair.yaml"
    assert set(doc["a"]) == {"label", "apps", "summary", "engine"}
    assert set(doc["compare"]) == {"summary", "queues", "usage", "gains", "losses"}
    assert doc["compare"]["gains"][0]["name"] == "small"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_workloads_without_configs(paths, capsys):
    assert main(["simulate", "--compare", paths["w"], paths["w"], "--admission", "reserve",
                 "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["compare"]["gains"] == doc["compare"]["losses"] == []
    assert doc["a"]["summary"] == doc["b"]["summary"]


# name: (arguments, the one line's text); {w}, {fifo}... are the fixture's files
BAD = {
    "no workload": (["simulate"], "give a WORKLOAD.yaml, or --compare A.yaml B.yaml"),
    "a workload and --compare": (["simulate", "{w}", "--compare", "{w}", "{w}"],
                                 "--compare takes both workloads itself"),
    "--config-a without --compare": (["simulate", "{w}", "--config-a", "{fifo}"],
                                     "--config-a: only with --compare"),
    "--config-b without --compare": (["simulate", "{w}", "--config-b", "{fifo}"],
                                     "--config-b: only with --compare"),
    "a config that is not there": (["simulate", "{w}", "--config", "{tmp}/none.yaml"],
                                   "none.yaml: cannot read"),
    "a bad config": (["simulate", "{w}", "--config", "{bad}"], "is not one of"),
    "a bad config on one side": (["simulate", "--compare", "{w}", "{w}", "--config-b", "{bad}"],
                                 "is not one of"),
    "a workload that is not there": (["simulate", "--compare", "{w}", "{tmp}/none.yaml"],
                                     "none.yaml: cannot read"),
    "a cluster the apps never fit": (["simulate", "{w}", "--config", "{tiny}"],
                                     "under {tiny}: apps[0]: never fits"),
    "--json into a missing directory": (["simulate", "--compare", "{w}", "{w}", "--json",
                                         "{tmp}/no/c.json"], "does not exist"),
    "--start without a config": (["simulate", "{w}", "--start", "2026-11-23T08:00"],
                                 "--start: runs a server config's plans: give --config too"),
    "--start that is no time": (["simulate", "{w}", "--config", "{planned}", "--start", "9am"],
                                "--start: '9am' is not a date and time like 2026-12-24T14:00:00"),
    "--start before 1970": (["simulate", "{w}", "--config", "{planned}", "--start",
                             "1969-07-20T20:17Z"], "{planned}: plans: a run from "
                            "1969-07-20T20:17:00+00:00: plans are worked out from 1970 on"),
    "--start at the calendar's end": (["simulate", "{w}", "--config", "{planned}", "--start",
                                       "9999-12-31T23:00Z"], "{planned}: plans: a run from "
                                      "9999-12-31T23:00:00+00:00 of max_time_s 86400 s ends "
                                      "past the calendar's end (year 9999)"),
}


@pytest.mark.parametrize("argv,message", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_line_exit_2(paths, capsys, argv, message):
    assert main([a.format(**paths) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message.format(**paths) in err


def test_the_table_off_a_terminal_keeps_whole_names(capsys):
    # Piped or written to a file, rich would squeeze the table into 80 columns: the cluster
    # column of several clusters pushed it past that, and names were cut to "batch…".
    assert main(["simulate", str(WORKLOADS / "clusters-spill.yaml")]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["batch-7", "a", "root.batch", "5000", "FINISHED"] in [r[:5] for r in rows]
    assert not any("…" in cell for r in rows for cell in r)


def test_the_summary_names_each_resources_utilization_where_the_cluster_has_gpus(capsys):
    workload = str(WORKLOADS / "gpu-fairshare.yaml")
    assert main(["simulate", workload, "--json", "-"]) == 0
    by = json.loads(capsys.readouterr().out)["summary"]["utilization_by_resource"]
    assert main(["simulate", workload]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("utilization")]
    assert line.startswith(f"utilization {by['cores']:.1%} (memory {by['memory']:.1%}, "
                           f"gpu {by['gpu']:.1%})   ")
    assert by["gpu"] > by["cores"]  # the GPU apps keep the GPUs busier than the cores
