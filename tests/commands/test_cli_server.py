"""The CLI against a real scheduler (child process, real SQLite) whose cluster cannot be
reached: everything is accepted and queues, nothing starts, so positions hold still."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.sparkcluster import wait_until
from tests.support.cli_helpers import cli_env, run_cli

APP_KEYS = {
    "id", "name", "user", "queue", "priority", "state", "position", "submitted_at",
    "started_at", "first_executor_at", "finished_at", "exit_code", "executors", "target", "grant",
    "demand", "spark_app_id", "kind", "reason", "reason_code", "warnings", "estimated_start",
    "counter_offer",
    "gang",  # the gang it asked for and its reservation (null: not a gang; docs/design/gangs.md)
}  # fmt: skip
QUEUE_KEYS = {
    "name", "leaf", "admission", "policy", "weight", "min_share", "max_cores",
    "max_running_apps", "starting_limit", "starting_timeout", "reclaim_timeout", "max_wait",
    "max_queued_apps", "max_queued_apps_per_user", "pending", "starting", "running",
    "executor_cores", "demand_cores", "executor_memory_mib", "demand_memory_mib",
    "waiting_reason", "waiting_reason_code",
    "usage_half_life", "decayed_cores", "decayed_users",  # docs/design/decayed-fair-share.md
    "node_sort",  # docs/design/placement.md
}  # fmt: skip
ID = re.compile(r"driver-\d{14}-\d{4}")


def submit(server, app_dir, *args) -> str:
    r = run_cli("submit", "--server", server.url, *args, "job.py", cwd=app_dir)
    assert r.returncode == 0, r.stderr
    assert ID.fullmatch(r.stdout.strip()), r.stdout  # the id alone on stdout, for scripts
    return r.stdout.strip()


def json_of(*args) -> object:
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def positions(server) -> dict[str, int]:
    """id -> position of every app that has joined its queue (null before the next cycle)."""
    apps = json_of("apps", "--json", "--server", server.url)
    return {a["id"]: a["position"] for a in apps if a["position"] is not None}


def test_submit_prints_the_id_and_status_shows_the_app_json(offline_server, app_dir):
    app_id = submit(offline_server, app_dir, "--queue", "adhoc", "--priority", "42")
    app = json_of("status", app_id, "--json", "--server", offline_server.url)
    assert set(app) == APP_KEYS
    assert (app["id"], app["queue"], app["priority"]) == (app_id, "root.adhoc", 42)
    assert (app["state"], app["kind"], app["name"]) == ("ACCEPTED", "submit", "job.py")

    table = run_cli("status", app_id, "--server", offline_server.url)
    assert table.returncode == 0
    assert app_id in table.stdout and "root.adhoc" in table.stdout


def test_properties_from_spark_defaults_reach_the_server(offline_server, app_dir, tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "spark.ego.priority 777\nspark.sessionsched.queue root.adhoc\n"
    )
    r = run_cli(
        "submit", "--server", offline_server.url, "--name", "from-defaults", "job.py",
        cwd=app_dir, env=cli_env(SPARK_CONF_DIR=str(conf)),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    app = json_of("status", r.stdout.strip(), "--json", "--server", offline_server.url)
    assert (app["priority"], app["queue"], app["name"]) == (777, "root.adhoc", "from-defaults")


def test_apps_and_queues_json(offline_server, app_dir):
    a = submit(offline_server, app_dir, "--queue", "etl")
    b = submit(offline_server, app_dir, "--queue", "adhoc")
    wait_until(lambda: len(positions(offline_server)) == 2, what="both apps queued")

    apps = json_of("apps", "--json", "--server", offline_server.url)
    assert [set(x) for x in apps] == [APP_KEYS, APP_KEYS]
    assert {x["id"] for x in apps} == {a, b}
    etl = json_of("apps", "--json", "--queue", "root.etl", "--server", offline_server.url)
    assert [x["id"] for x in etl] == [a]
    killed = json_of("apps", "--json", "--state", "killed", "--server", offline_server.url)
    assert killed == []

    queues = json_of("queues", "--json", "--server", offline_server.url)
    assert all(set(q) == QUEUE_KEYS for q in queues)
    by_name = {q["name"]: q for q in queues}
    assert set(by_name) == {"root", "root.etl", "root.adhoc"}
    assert (by_name["root.etl"]["pending"], by_name["root.adhoc"]["pending"]) == (1, 1)
    assert by_name["root.etl"]["policy"] == "priority"

    table = run_cli("queues", "--server", offline_server.url)
    assert table.returncode == 0
    adhoc = next(line for line in table.stdout.splitlines() if "adhoc" in line)
    assert adhoc.startswith("└── adhoc") and "fairshare" in adhoc  # the tree's last leaf
    table = run_cli("apps", "--server", offline_server.url)
    assert table.returncode == 0 and a in table.stdout and b in table.stdout


def test_raising_a_priority_moves_the_app_to_the_front(offline_server, app_dir):
    ids = [submit(offline_server, app_dir) for _ in range(3)]
    wait_until(lambda: positions(offline_server) == {ids[0]: 1, ids[1]: 2, ids[2]: 3},
               what="three apps queued in submission order")  # fmt: skip

    r = run_cli("priority", ids[2], "9000", "--server", offline_server.url)
    assert r.returncode == 0, r.stderr
    assert "position 1 in root.etl" in r.stdout and "priority 9000" in r.stdout
    assert positions(offline_server) == {ids[2]: 1, ids[0]: 2, ids[1]: 3}
    order = [a["id"] for a in json_of("apps", "--json", "--server", offline_server.url)]
    assert order == [ids[2], ids[0], ids[1]]


def test_kill_a_queued_app_then_kill_again(offline_server, app_dir):
    app_id = submit(offline_server, app_dir)
    r = run_cli("kill", app_id, "--server", offline_server.url)
    assert r.returncode == 0, r.stderr
    assert f"{app_id}: KILLED" in r.stdout
    assert json_of("status", app_id, "--json", "--server", offline_server.url)["state"] == "KILLED"

    again = run_cli("kill", app_id, "--server", offline_server.url)
    assert again.returncode == 2
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sessionsched kill: ")
    assert app_id in lines[0]


# (command line, what the one line must say); the line starts "sessionsched COMMAND: ".
REFUSED = {
    "unknown id": (["status", "driver-20260101000000-9999"], "driver-20260101000000-9999"),
    "unknown id, kill": (["kill", "nope"], "nope"),
    "unknown queue": (["apps", "--queue", "nope"], "unknown queue 'nope'; known queues: root.etl"),
    "bad state": (["apps", "--state", "sleeping"], "unknown state 'sleeping'"),
    "priority not a number": (["priority", "x", "high"], "priority 'high' is not a whole number"),
    "priority out of range": (["priority", "x", "0"], "priority 0 is outside 1..10000"),
}


@pytest.mark.parametrize("args,detail", REFUSED.values(), ids=REFUSED.keys())
def test_refusals_are_one_line_and_exit_2(shared_offline_server, args, detail):
    r = run_cli(*args, "--server", shared_offline_server.url)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"sessionsched {args[0]}: ") and detail in lines[0]


def test_submit_refused_by_the_server_is_one_line(offline_server, app_dir):
    r = run_cli("submit", "--server", offline_server.url, "--queue", "nope", "job.py", cwd=app_dir)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "sessionsched submit: unknown queue 'nope'; known queues: root.etl, root.adhoc"
    )
    assert json_of("apps", "--json", "--server", offline_server.url) == []  # nothing stored


@pytest.mark.parametrize("mode", [["--deploy-mode", "cluster"],
                                  ["--conf", "spark.submit.deployMode=cluster"]],
                         ids=["option", "conf"])
def test_a_python_app_in_cluster_mode_is_the_servers_to_refuse(offline_server, app_dir, mode):
    """The wrapper refused it itself, in words for a standalone cluster, whatever the backend
    (on Kubernetes the server takes it: a driver pod either way)."""
    r = run_cli("submit", "--server", offline_server.url, *mode, "job.py", cwd=app_dir)
    assert (r.returncode, r.stderr) == (2, "sessionsched submit: Python apps run in client "
                                           "mode on a standalone cluster; drop --deploy-mode "
                                           "cluster\n")
    assert json_of("apps", "--json", "--server", offline_server.url) == []


def test_server_from_the_environment(offline_server, app_dir):
    env = cli_env(SESSIONSCHED_SERVER=offline_server.url)
    r = run_cli("submit", "job.py", cwd=app_dir, env=env)
    assert r.returncode == 0, r.stderr
    r2 = run_cli("status", r.stdout.strip(), "--json", env=env)
    assert r2.returncode == 0 and json.loads(r2.stdout)["id"] == r.stdout.strip()


def _state_dir_a_file(tmp: Path) -> dict:
    (tmp / "state").write_text("")
    return {"server": {"state_dir": str(tmp / "state")}}


def _database_not_sqlite(tmp: Path) -> dict:
    (tmp / "state").mkdir()
    (tmp / "state" / "sessionsched.db").write_text("notes, not a database " * 10)
    return {"server": {"state_dir": str(tmp / "state")}}


def _tls(cert: str, key: str):
    def config(tmp: Path) -> dict:
        (tmp / "junk.pem").write_text("junk\n")
        (tmp / "a-dir").mkdir()
        return {"server": {"state_dir": str(tmp / "state"),
                           "tls": {"cert": str(tmp / cert), "key": str(tmp / key)}}}
    return config


SERVE_REFUSED = {  # a server config whose files cannot serve: one line, exit 2, before listening
    "state_dir is a file": (_state_dir_a_file, "cannot start: {tmp}/state/drivers: Not a "
                                               "directory"),
    "a database file that is not SQLite's": (
        _database_not_sqlite, "cannot start: state store unavailable: the database file is "
                              "not an SQLite database"),
    "a TLS certificate that is a directory": (
        _tls("a-dir", "junk.pem"), "server.tls.cert: cannot read {tmp}/a-dir (a directory)"),
    "a TLS certificate that is no PEM": (
        _tls("junk.pem", "junk.pem"), "server.tls: {tmp}/junk.pem and {tmp}/junk.pem are not "
                                      "a PEM certificate and its private key ("),
}


@pytest.mark.parametrize("config, message", SERVE_REFUSED.values(), ids=SERVE_REFUSED.keys())
def test_serve_refuses_files_it_cannot_use_in_one_line(tmp_path, config, message):
    path = tmp_path / "server.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path)))
    r = run_cli("serve", "--config", str(path), "--port", "1")  # refused before it listens
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("sessionsched serve: " + message.format(tmp=tmp_path)), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("args, message", [
    (("--host", "a b"), "--host 'a b': expected a host name or an IP address"),
    # printed raw in the refusal to listen without auth before
    (("--config", "{tmp}/nul.yaml"), "{tmp}/nul.yaml: server.host: '\\x00': expected a host "
                                     "name or an IP address"),
], ids=["space", "nul-in-config"])
def test_serve_refuses_a_host_that_is_no_name_or_address(tmp_path, args, message):
    (tmp_path / "nul.yaml").write_text('server:\n  host: "\\0"\n')
    r = run_cli("serve", *(a.format(tmp=tmp_path) for a in args))
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"sessionsched serve: {message.format(tmp=tmp_path)}\n"
