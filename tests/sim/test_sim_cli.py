"""`sessionsched simulate`: the result JSON's shape, determinism, the table, the plot, and one
clear line (exit 2) for every bad workload."""

import json
from pathlib import Path

import pytest
import yaml
from sim_builders import app, data, queue

from sessionsched.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"
APP_KEYS = {
    "name",
    "queue",
    "priority",
    "state",
    "submitted",
    "admitted",
    "first_executor",
    "finished",
    # when a gang's driver and N executors were held, null: never (docs/design/gangs.md)
    "gang_ready",
    "usage",  # per app held/busy/idle/reclaimed core-seconds... (docs/operator/usage.md)
}
USAGE_KEYS = {
    "held_core_s", "busy_core_s", "idle_core_s", "reclaimed_core_s", "reclaimed_executors",
    "held_gib_s", "driver_core_s", "driver_gib_s", "queued_s",
}
SUMMARY_KEYS = {
    "makespan",
    "completed",
    "stuck",
    "failed",
    "mean_completion",
    "p95_completion",
    "utilization_by_resource",
    "utilization",
    "fairness_jain",
    "whole_workers",  # workers left whole (docs/design/placement.md)
    "whole_workers_min",
}
ENGINE_KEYS = {"cycles", "cycle_ms_p50", "cycle_ms_max"}


def run_json(tmp_path: Path, workload: Path, name: str = "out.json") -> dict:
    out = tmp_path / name
    assert main(["simulate", str(workload), "--json", str(out)]) == 0
    return json.loads(out.read_text())


def write(tmp_path: Path, content) -> Path:
    p = tmp_path / "w.yaml"
    p.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return p


def test_json_has_exactly_the_designed_keys(tmp_path):
    r = run_json(tmp_path, EXAMPLES / "burst-none.yaml")
    assert set(r) == {"apps", "summary", "engine"}
    assert all(set(a) == APP_KEYS for a in r["apps"])
    assert all(set(a["usage"]) == USAGE_KEYS for a in r["apps"])
    assert set(r["summary"]) == SUMMARY_KEYS
    assert set(r["engine"]) == ENGINE_KEYS
    assert r["engine"]["cycles"] > 0
    assert 0 <= r["engine"]["cycle_ms_p50"] <= r["engine"]["cycle_ms_max"]


def test_json_to_stdout(capsys):
    assert main(["simulate", str(EXAMPLES / "stateaware-example.yaml"), "--json", "-"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in r["apps"]] == ["App1", "App2"]


def test_table_without_json(capsys):
    assert main(["simulate", str(EXAMPLES / "burst-none.yaml")]) == 0
    out = capsys.readouterr().out
    assert "etl-10" in out and "ACCEPTED" in out
    assert "stuck 10" in out
    assert "deadlock" in out


def test_plot_writes_a_png(tmp_path):
    import matplotlib.image

    out = tmp_path / "run.png"
    assert (
        main(
            [
                "simulate",
                str(EXAMPLES / "notebooks-fairshare.yaml"),
                "--json",
                str(tmp_path / "r.json"),
                "--plot",
                str(out),
            ]
        )
        == 0
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = matplotlib.image.imread(out).shape
    assert width > 600 and height > 400


GOOD = data(app("a", queue="a"), app("b", queue="b"), queues=[queue("a"), queue("b")])


def bad(path: str, value) -> dict:
    """GOOD with one value replaced (path like "apps.1.queue") or removed (value None)."""
    doc = json.loads(json.dumps(GOOD))
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node[int(p)] if p.isdigit() else node[p]
    key = int(last) if last.isdigit() else last
    if value is None:
        del node[key]
    else:
        node[key] = value
    return doc


BAD = {
    "unknown queue": (
        bad("apps.1.queue", "etl"),
        "apps[1].queue: unknown queue 'etl'; known queues: root.a, root.b",
    ),
    "unknown policy": (
        bad("queues.0.queues.0.policy", "fairness"),
        "queues[0].queues[0].policy: 'fairness' is not one of fifo, priority, fairshare",
    ),
    "no stages": (bad("apps.0.stages", None), "apps[0].stages: missing"),
    "a count given as true": (bad("cluster.workers", True),
                              "cluster.workers: expected a number, not true"),
    "task without time": (
        bad("apps.0.stages", [{"tasks": 3}]),
        "apps[0].stages[0].task_s: missing",
    ),
    "unknown app setting": (bad("apps.0.colour", "red"), "apps[0].colour: unknown setting"),
    "a setting misspelt": (  # named first, not the 'stages' it leaves missing
        {**GOOD, "apps": [{**{k: v for k, v in GOOD["apps"][0].items() if k != "stages"},
                           "stagess": GOOD["apps"][0]["stages"]}, *GOOD["apps"][1:]]},
        "apps[0].stagess: unknown setting; did you mean 'stages'?",
    ),
    "unknown cluster setting": (bad("cluster.nodes", 3), "cluster.nodes: unknown setting"),
    "bad memory": (
        bad("cluster.memory", "12x"),
        "cluster.memory: '12x' is not a size like 512m or 2g",
    ),
    "priority too high": (
        bad("apps.0.priority", 20000),
        "apps[0].priority: priority 20000 is outside 1..10000",
    ),
    "priority update out of range": (
        bad("apps.0.updates", [{"at": 5, "priority": 0}]),
        "apps[0].updates[0].priority: priority 0 is outside 1..10000",
    ),
    "update before submit": (
        {**GOOD, "apps": [app("a", queue="a", submit=10, updates=[{"at": 5, "priority": 7}])]},
        "apps[0].updates[0].at: 5 is before the app is submitted (submit 10)",
    ),
    "submitted after the end of the run": (
        {**GOOD, "cluster": {"max_time_s": 50}, "apps": [app("a", queue="a", submit=60)]},
        "apps[0].submit: 60 is after the end of the run (cluster.max_time_s 50)",
    ),
    "duplicate names": (
        bad("apps.1.name", "a"),
        "apps[1].name: 'a' is already the name of apps[0]",
    ),
    "executor larger than the cluster": (
        bad("apps.0.executor", {"cores": 16}),
        "apps[0]: never fits: an executor of 16 cores/1024 MiB fits no worker"
        " (1 worker of 8 cores/32768 MiB)",
    ),
    "executor larger than any worker": (
        {**GOOD, "cluster": {**GOOD["cluster"], "workers": 2},
         "apps": [app("a", queue="a", executor={"cores": 6})]},
        "apps[0]: never fits: an executor of 6 cores/1024 MiB fits no worker"
        " (2 workers of 4 cores/16384 MiB)",
    ),
    "floor more than the workers hold": (
        {**GOOD, "cluster": {**GOOD["cluster"], "workers": 2},
         "apps": [app("a", queue="a", executor={"cores": 3}, min_executors=3)]},
        "apps[0]: never fits: 3 executor(s) of 3 cores/1024 MiB (minExecutors 3) do not fit"
        " the cluster: its workers hold 2 (2 workers of 4 cores/16384 MiB)",
    ),
    "min above max executors": (
        {**GOOD, "apps": [app("a", queue="a", min_executors=3, max_executors=2)]},
        "apps[0].min_executors: 3 is above max_executors 2",
    ),
    "negative submit": (
        bad("apps.0.submit", -1),
        "apps[0].submit: Input should be greater than or equal to 0",
    ),
    "negative warm-up": (
        bad("apps.0.warmup_s", -2),
        "apps[0].warmup_s: Input should be greater than or equal to 0",
    ),
    "no host CPUs": (
        bad("cluster.host_cpus", 0),
        "cluster.host_cpus: Input should be greater than 0",
    ),
    "malformed gang annotation": (
        bad("apps.0.conf", {"spark.kubernetes.driver.annotation.yunikorn.apache.org/"
                            "schedulingPolicyParameters": "gangSchedulingStyle=Firm"}),
        "apps[0].conf: spark.kubernetes.driver.annotation.yunikorn.apache.org/"
        "schedulingPolicyParameters gangSchedulingStyle='Firm': expected hard or soft",
    ),
    "gang size not a number": (
        bad("apps.0.conf", {"spark.sessionsched.gang.size": "eight"}),
        "apps[0].conf: spark.sessionsched.gang.size='eight': expected a whole number >= 1",
    ),
    "a backlog timeout that is not a time": (
        bad("apps.0.conf", {"spark.dynamicAllocation.schedulerBacklogTimeout": "soon"}),
        "apps[0].conf: spark.dynamicAllocation.schedulerBacklogTimeout='soon': expected seconds",
    ),
    "a size in conf as well as in the app's keys": (
        bad("apps.0.conf", {"spark.executor.cores": 2}),
        "apps[0].conf: spark.executor.cores: set it as the app's executor.cores",
    ),
    "a property that is not a string or a number": (
        bad("apps.0.conf", {"spark.sessionsched.gang.size": [8]}),
        "apps[0].conf.spark.sessionsched.gang.size: a Spark property's value is "
        "a string or a number, not [8]",
    ),
    "a gang larger than the cluster": (
        {**GOOD, "cluster": {**GOOD["cluster"], "workers": 2},
         "apps": [app("a", queue="a", driver={"in_cluster": True}, max_executors=16,
                      conf={"spark.sessionsched.gang.size": 12})]},
        "apps[0]: never fits: 12 executor(s) of 1 cores/1024 MiB",
    ),
    "a cycle that never comes": (
        bad("cluster.cycle_s", float("inf")), "cluster.cycle_s: Input should be a finite number",
    ),
    "a task that never ends": (
        bad("apps.0.stages", [{"tasks": 1, "task_s": float("inf")}]),
        "apps[0].stages[0].task_s: Input should be a finite number",
    ),
    # Taken, each worker had 0 cores and every app was refused as "never fits".
    "more workers than cores": (
        {**GOOD, "cluster": {**GOOD["cluster"], "cores": 2, "workers": 4}},
        "cluster: 4 workers share 2 cores and 32768 MiB (the whole cluster's): one would get "
        "no core",
    ),
    "more workers than memory can list": (
        bad("cluster.workers", 10**30),
        "cluster.workers: Input should be less than or equal to 100000",
    ),
    "a worker group that would never end being listed": (
        {**GOOD, "cluster": {"worker_groups": [{"count": 10**12, "cores": 8, "memory": "32g"}]}},
        "cluster.worker_groups[0].count: Input should be less than or equal to 100000",
    ),
    "no apps": (bad("apps", []), "apps: List should have at least 1 item"),
    "a start that is no date and time": (
        {**GOOD, "start": "monday"},
        "start: 'monday' is not a date and time like 2026-12-24T14:00:00"),
    "top level is a list": ([GOOD], "expected a mapping at the top level"),
    "not YAML": ("apps: [\n", "not valid YAML"),
    # PyYAML would keep the second and drop the first: half a workload lost without a word
    "a key twice": ("apps: [{name: a, stages: []}]\napps: [{name: b, stages: []}]\n",
                    "line 2 not valid YAML: found 'apps' twice"),
}


@pytest.mark.parametrize("content,message", BAD.values(), ids=BAD.keys())
def test_bad_workload_is_one_line_exit_2(tmp_path, capsys, content, message):
    path = write(tmp_path, content)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message in err
    assert str(path) in err
    assert "Traceback" not in err


ARGS = {
    "missing workload file": (["simulate", "{tmp}/nope.yaml"], "nope.yaml: cannot read"),
    "--json into a missing directory": (
        ["simulate", "{good}", "--json", "{tmp}/no/such/dir/r.json"],
        "--json {tmp}/no/such/dir/r.json: directory {tmp}/no/such/dir does not exist",
    ),
    "--plot in a format matplotlib does not write": (
        ["simulate", "{good}", "--plot", "{tmp}/run.txt"],
        "--plot {tmp}/run.txt: no format .txt (one of ",
    ),
    # It said "--json : is a directory" (the working directory, the empty name's).
    "--json with an empty name": (["simulate", "{good}", "--json", ""],
                                  "--json: the file name is empty"),
    "--plot with an empty name": (["simulate", "{good}", "--plot", " "],
                                  "--plot: the file name is empty"),
    # It said "sessionsched simulate: simulate: ...".
    "no workload": (["simulate"],
                    "sessionsched simulate: give a WORKLOAD.yaml, or --compare A.yaml B.yaml"),
    "--plot onto a directory": (
        ["simulate", "{good}", "--plot", "{tmp}"],
        "--plot {tmp}: is a directory",
    ),
}


@pytest.mark.parametrize("argv,message", ARGS.values(), ids=ARGS.keys())
def test_bad_arguments_are_one_line_exit_2(tmp_path, capsys, argv, message):
    good = write(tmp_path, GOOD)
    fill = {"tmp": str(tmp_path), "good": str(good)}
    assert main([a.format(**fill) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message.format(**fill) in err


def test_good_workload_of_the_bad_table_runs(tmp_path):
    """The table's base workload is valid: each row fails only for its own change."""
    r = run_json(tmp_path, write(tmp_path, GOOD))
    assert [a["state"] for a in r["apps"]] == ["FINISHED", "FINISHED"]


def test_admission_option_runs_every_queue_with_that_mode(tmp_path):
    # burst-none.yaml deadlocks as written (admission: none); the same burst under demand ends
    out = tmp_path / "out.json"
    assert main(["simulate", str(EXAMPLES / "burst-none.yaml"), "--admission", "demand",
                 "--json", str(out)]) == 0
    summary = json.loads(out.read_text())["summary"]
    assert (summary["completed"], summary["stuck"]) == (10, 0)


def test_admission_option_refuses_an_unknown_mode(capsys):
    with pytest.raises(SystemExit) as e:
        main(["simulate", str(EXAMPLES / "burst-none.yaml"), "--admission", "gang"])
    assert e.value.code == 2
    assert "invalid choice: 'gang'" in capsys.readouterr().err
