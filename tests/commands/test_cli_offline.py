"""The CLI with no scheduler to talk to, and input refused before any request is sent."""

from __future__ import annotations

import pytest

from sessionsched.cli import main
from sessionsched.client import default_server
from tests.support.cli_helpers import cli_env, run_cli

COMMANDS = {
    "status": ["status", "driver-1"],
    "kill": ["kill", "driver-1"],
    "priority": ["priority", "driver-1", "10"],
    "apps": ["apps"],
    "queues": ["queues"],
    "submit": ["submit", "job.py"],
}


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_unreachable_server_is_one_line_and_exit_2(args, closed_port, app_dir):
    url = f"http://127.0.0.1:{closed_port}"
    r = run_cli(*args, cwd=app_dir, env=cli_env(SESSIONSCHED_SERVER=url))
    assert r.returncode == 2
    assert r.stderr == (
        f"sessionsched {args[0]}: cannot reach the scheduler at {url} (connection refused); "
        "start it with 'sessionsched serve' or set --server / SESSIONSCHED_SERVER\n"
    )


def test_server_option_beats_the_environment(closed_port, app_dir):
    url = f"http://127.0.0.1:{closed_port}"
    r = run_cli("apps", "--server", url, env=cli_env(SESSIONSCHED_SERVER="http://127.0.0.1:1"))
    assert f"cannot reach the scheduler at {url} " in r.stderr


def test_default_server_address():
    assert default_server({}) == "http://127.0.0.1:6066"
    assert default_server({"SESSIONSCHED_SERVER": "http://h:1"}) == "http://h:1"
    assert default_server({"SESSIONSCHED_SERVER": ""}) == "http://127.0.0.1:6066"


BAD_SUBMIT = {
    "no app file": (["--name", "x"], "no application file given"),
    "bad priority": (["--priority", "0", "job.py"], "--priority: priority 0 is outside 1..10000"),
    "master": (["--master", "local[2]", "job.py"], "--master is chosen by the scheduler"),
    "conf KEY VALUE": (["--conf", "spark.a", "1", "job.py"], "expected KEY=VALUE in one argument"),
    "missing file": (["other.py"], "application file other.py not found"),
}


@pytest.mark.parametrize("args,message", BAD_SUBMIT.values(), ids=BAD_SUBMIT.keys())
def test_bad_submit_is_refused_before_any_request(args, message, closed_port, app_dir):
    # The server address is unreachable: these must fail on the arguments, not the connection.
    r = run_cli("submit", "--server", f"http://127.0.0.1:{closed_port}", *args, cwd=app_dir)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sessionsched submit: ") and message in lines[0]


def test_submit_help_lists_the_wrapper_options():
    r = run_cli("submit", "--help")
    assert r.returncode == 0
    for option in ("--queue Q", "--priority N", "--wait", "--server URL", "--token T"):
        assert option in r.stdout


@pytest.mark.parametrize("who, message", [
    (["--id", ""], "no token with id ''"), (["--user", "nobody"], "no token of 'nobody'")])
def test_revoking_no_token_is_one_line(tmp_path, capsys, who, message):
    tokens = str(tmp_path / "tokens.json")
    assert main(["token", "create", "--file", tokens, "--user", "alice"]) == 0
    assert main(["token", "revoke", "--file", tokens, *who]) == 2
    assert capsys.readouterr().err == f"sessionsched token: {message}\n"
