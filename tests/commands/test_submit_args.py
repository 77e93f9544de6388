"""How `sessionsched submit` turns its command line into a submission request."""

import argparse

import pytest

from sessionsched.cli import UserError
from sessionsched.client import App
from sessionsched.commands.submit import (
    exit_code_of,
    plan_submission,
    split_wrapper_args,
    wrapper_parser,
)

SPLIT = {
    "wrapper options first": (
        ["--queue", "q", "--priority", "9", "--wait", "--name", "n", "app.py", "a"],
        ["--queue", "q", "--priority", "9", "--wait"],
        ["--name", "n", "app.py", "a"],
    ),
    "wrapper options between spark options": (
        ["--name", "n", "--server=http://h:1", "--conf", "spark.a=1", "--token", "t", "app.py"],
        ["--server=http://h:1", "--token", "t"],
        ["--name", "n", "--conf", "spark.a=1", "app.py"],
    ),
    "an option's value is never taken for a wrapper option": (
        ["--name", "--wait", "app.py"],
        [],
        ["--name", "--wait", "app.py"],
    ),
    "after the app file everything is the app's": (
        ["app.py", "--queue", "x", "--wait"],
        [],
        ["app.py", "--queue", "x", "--wait"],
    ),
    "unknown options stay with spark-submit (its parser reports them)": (
        ["--bogus", "app.py"],
        [],
        ["--bogus", "app.py"],
    ),
}


@pytest.mark.parametrize("argv,ours,spark", SPLIT.values(), ids=SPLIT.keys())
def test_split_wrapper_args(argv, ours, spark):
    assert split_wrapper_args(argv) == (ours, spark)


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "app.jar").write_bytes(b"PK")
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "spark.ego.priority 100\nspark.sessionsched.queue root.etl\nspark.master spark://x:7077\n"
    )
    return tmp_path


def plan(workdir, argv, environ=None):
    ours, spark = split_wrapper_args(argv)
    env = {"SPARK_CONF_DIR": str(workdir / "conf")} if environ is None else environ
    return plan_submission(wrapper_parser().parse_args(ours), spark, env, str(workdir))


# (argv, expected priority, expected queue); defaults file says priority 100, queue root.etl.
OVERRIDES = {
    "from spark-defaults.conf": (["app.py"], 100, "root.etl"),
    "--conf beats spark-defaults.conf": (
        ["--conf", "spark.ego.priority=300", "--conf", "spark.sessionsched.queue=root.b", "app.py"],
        300,
        "root.b",
    ),
    "--priority/--queue beat --conf": (
        [
            "--priority",
            "9000",
            "--queue",
            "root.adhoc",
            "--conf",
            "spark.ego.priority=300",
            "app.py",
        ],
        9000,
        "root.adhoc",
    ),
    "--priority with spaces is still a number": (["--priority", " 42 ", "app.py"], 42, "root.etl"),
}


@pytest.mark.parametrize("argv,priority,queue", OVERRIDES.values(), ids=OVERRIDES.keys())
def test_priority_and_queue_precedence(workdir, argv, priority, queue):
    sub = plan(workdir, argv)
    assert (sub.priority, sub.queue) == (priority, queue)
    # The app sees the same values as properties.
    assert sub.conf["spark.ego.priority"] == str(priority)
    assert sub.conf["spark.sessionsched.queue"] == queue


def test_request_carries_argv_unchanged_and_an_absolute_cwd(workdir, monkeypatch):
    argv = ["--name", "etl", "--executor-memory", "1g", "app.py", "--date", "2026-01-01"]
    sub = plan(workdir, ["--priority", "7", *argv])
    assert sub.argv == tuple(argv)  # without the wrapper's options
    assert sub.cwd == str(workdir.resolve())
    assert sub.name == "etl"
    assert sub.conf["spark.executor.memory"] == "1g"
    assert "spark.master" not in sub.conf  # the scheduler picks the master


def test_default_name_is_the_file_name_like_spark_submit(workdir):
    assert plan(workdir, ["app.py"], environ={}).name == "app.py"
    assert plan(workdir, ["--class", "a.B", "app.jar"], environ={}).name == "a.B"


def test_no_priority_or_queue_anywhere_lets_the_server_decide(workdir):
    sub = plan(workdir, ["app.py"], environ={})
    assert (sub.priority, sub.queue) == (None, None)


def test_python_env_is_forwarded(workdir):
    sub = plan(workdir, ["app.py"], environ={"PYSPARK_PYTHON": "/opt/py", "HOME": "/h"})
    assert sub.env == {"PYSPARK_PYTHON": "/opt/py"}


REFUSED = {
    "priority not a number": (
        ["--priority", "high", "app.py"],
        "--priority: priority 'high' is not a whole number",
    ),
    "priority 0": (["--priority", "0", "app.py"], "--priority: priority 0 is outside 1..10000"),
    "priority 10001": (["--priority", "10001", "app.py"], "priority 10001 is outside 1..10000"),
    "priority -5": (["--priority=-5", "app.py"], "priority -5 is outside 1..10000"),
    "bad priority in --conf": (
        ["--conf", "spark.ego.priority=x", "app.py"],
        "spark.ego.priority='x' (from --conf)",
    ),
    "empty queue": (["--queue", " ", "app.py"], "--queue: empty queue name"),
    "--master": (["--master", "spark://h:7077", "app.py"], "--master is chosen by the scheduler"),
    "spark.master in --conf": (
        ["--conf", "spark.master=local", "app.py"],
        "--master is chosen by the scheduler",
    ),
    "--status": (["--status", "driver-1"], "use 'sessionsched status ID'"),
    "--kill": (["--kill", "driver-1"], "use 'sessionsched kill ID'"),
    "no app file": (["--name", "x"], "no application file given"),
    "missing app file": (["nope.py"], "application file nope.py not found"),
    "conf KEY VALUE": (["--conf", "spark.a", "1", "app.py"], "expected KEY=VALUE in one argument"),
    "unknown option": (["--bogus", "app.py"], "unknown spark-submit option '--bogus'"),
}


@pytest.mark.parametrize("argv,message", REFUSED.values(), ids=REFUSED.keys())
def test_refused(workdir, argv, message):
    with pytest.raises(UserError) as e:
        plan(workdir, argv)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_jar_in_cluster_mode_is_allowed(workdir):
    sub = plan(workdir, ["--deploy-mode", "cluster", "--class", "a.B", "app.jar"], environ={})
    assert sub.conf["spark.submit.deployMode"] == "cluster"


def test_remote_app_files_are_not_checked_here(workdir):
    sub = plan(workdir, ["hdfs://nn/apps/x.py"], environ={})
    assert sub.argv == ("hdfs://nn/apps/x.py",)


def test_wrapper_parser_is_what_help_shows():
    ns = wrapper_parser().parse_args(["--queue", "q", "--wait", "--server", "http://h:1"])
    assert ns == argparse.Namespace(
        queue="q", priority=None, wait=True, dry_run=False, upload=None, server="http://h:1",
        token=None, ca=None
    )


def test_dry_run_is_the_wrappers_switch_not_spark_submits():
    assert split_wrapper_args(["--dry-run", "--conf", "a=b", "job.py", "--dry-run"]) == (
        ["--dry-run"], ["--conf", "a=b", "job.py", "--dry-run"])  # after the app: the app's
    assert wrapper_parser().parse_args(["--dry-run"]).dry_run is True


def ended(state: str, exit_code):
    return App.from_json(
        {"id": "driver-1", "priority": 5000, "state": state, "exit_code": exit_code}
    )


# (state, the driver's exit code as the server reports it, what `submit --wait` exits with)
EXIT_CODES = {
    "finished": ("FINISHED", 0, 0),
    "finished, no code known": ("FINISHED", None, 0),
    "failed with its code": ("FAILED", 3, 3),
    "failed without a code": ("FAILED", None, 1),
    "failed yet said 0": ("FAILED", 0, 1),
    "killed while queued": ("KILLED", None, 143),
    "killed by SIGTERM, code 143": ("KILLED", 143, 143),
    "killed by signal 9 (negative code)": ("KILLED", -9, 137),
}


@pytest.mark.parametrize("state,code,expected", EXIT_CODES.values(), ids=EXIT_CODES.keys())
def test_wait_exit_code_mirrors_the_app(state, code, expected):
    assert exit_code_of(ended(state, code)) == expected


def test_a_dry_run_has_nothing_to_wait_for(capsys):
    with pytest.raises(SystemExit) as exit_:
        wrapper_parser().parse_args(["--dry-run", "--wait"])
    assert exit_.value.code == 2
    assert "argument --wait: not allowed with argument --dry-run" in capsys.readouterr().err
