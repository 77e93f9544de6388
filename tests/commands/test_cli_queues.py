"""``sessionsched queues`` against a real scheduler (child process, real SQLite, a cluster that
cannot be reached): the queue tree with each queue's caps as the server runs them now - a
time-of-day plan in force applied, the queued apps' limits inherited down the tree - and a
parent's row without the settings that act on leaves only; and ``submit`` refused by a depth
cap: one line, exit code 2, nothing stored."""

from __future__ import annotations

import json

import pytest

from sessionsched.backends.ports import free_port
from sessionsched.commands._serverproc import ServerProcess
from tests.support.cli_helpers import run_cli

QUEUES = [{"name": "root", "max_queued_apps_per_user": 5, "queues": [
    {"name": "etl", "admission": "reserve", "policy": "priority", "max_wait": 3600,
     "max_queued_apps": 1},
    {"name": "science", "max_cores": 16, "max_running_apps": 4, "queues": [
        {"name": "nb", "max_wait": 90},
        {"name": "batch", "max_queued_apps_per_user": None}]},
]}]
# "Every minute" has always fired within the last minute: in force from the start; the
# one-shot is the next plan that will change the queues.
PLANS = [{"cron": "* * * * *", "queues": {"science": {"max_cores": 8, "max_wait": 600},
                                          "etl": {"weight": 3}}},
         {"at": "2099-01-01T00:00:00Z", "queues": {"etl": {"weight": 9}}}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("queues")
    closed = free_port()
    config = {
        "server": {"state_dir": str(directory / "state"), "cycle_ms": 50},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{closed}",
                    "master_ui": f"http://127.0.0.1:{closed}"},
        "defaults": {"queue": "root.etl"},
        "queues": QUEUES,
        "plans": PLANS,
    }
    proc = ServerProcess.start(config, directory / "server")
    try:
        yield proc
    finally:
        proc.stop()


# name: (leaf, admission, policy, weight, max_cores, max_running_apps, max_wait,
#        max_queued_apps, max_queued_apps_per_user)
EXPECTED = {
    "root": (False, None, None, 1, None, None, None, None, None),
    "root.etl": (True, "reserve", "priority", 3, None, None, 3600, 1, 5),  # plan: weight 3
    "root.science": (False, None, None, 1, 8, 4, None, None, None),  # plan: max_cores 8
    "root.science.nb": (True, "demand", "fairshare", 1, None, None, 90, None, 5),  # its own
    "root.science.batch": (True, "demand", "fairshare", 1, None, None, 600, None, None),
}
KEYS = ("leaf", "admission", "policy", "weight", "max_cores", "max_running_apps", "max_wait",
        "max_queued_apps", "max_queued_apps_per_user")


def test_queues_json_is_the_servers_view_with_the_plan_applied(server):
    r = run_cli("queues", "--json", "--server", server.url)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [q["name"] for q in rows] == list(EXPECTED)  # parents before their children
    for q in rows:
        assert tuple(q[k] for k in KEYS) == EXPECTED[q["name"]], q["name"]
    parents = [q for q in rows if not q["leaf"]]
    for q in parents:  # nothing that acts on leaves only
        assert (q["starting_limit"], q["starting_timeout"], q["reclaim_timeout"]) == (
            None, None, None)


def test_queues_draws_the_tree_with_each_queues_caps(server):
    r = run_cli("queues", "--server", server.url)
    assert r.returncode == 0, r.stderr
    header, *lines, plan, after = r.stdout.splitlines()
    # the plan the settings are under, and the next that will change them
    assert plan == ("plan in force: plan '* * * * *': science max_cores=8, max_wait=600.0; "
                    "etl weight=3.0")
    assert after == ("next: plan 'at 2099-01-01T00:00:00+00:00': etl weight=9.0 at "
                     "2099-01-01T00:00:00+00:00")
    for column in ("QUEUE", "ADMISSION", "POLICY", "WEIGHT", "MAX CORES", "MAX RUNNING",
                   "MAX WAIT", "MAX QUEUED", "PER USER", "PENDING", "CODE", "WAITING"):
        assert column in header
    cells = [line.split() for line in lines]
    assert cells == [
        # QUEUE, ADMISSION, POLICY, WEIGHT, MAX CORES, MAX RUNNING, MAX WAIT, MAX QUEUED,
        # PER USER, PENDING, STARTING, RUNNING, CORES, DEMAND, CODE: a parent leaves the
        # leaf-only columns blank, a leaf without a limit shows "-", nothing waits ("-")
        ["root", "1", "-", "-", "0", "0", "0", "0", "0", "-"],
        ["├──", "etl", "reserve", "priority", "3", "-", "-", "1h", "1", "5", "0", "0", "0", "0",
         "0", "-"],
        ["└──", "science", "1", "8", "4", "0", "0", "0", "0", "0", "-"],
        ["├──", "nb", "demand", "fairshare", "1", "-", "-", "1m30s", "-", "5", "0", "0", "0",
         "0", "0", "-"],
        ["└──", "batch", "demand", "fairshare", "1", "-", "-", "10m", "-", "-", "0", "0", "0",
         "0", "0", "-"],
    ]
    assert lines[3].startswith("    ├── nb")  # under science, the root's last child


def test_submit_over_a_cap_is_one_line_exit_2_and_nothing_stored(server, app_dir):
    first = run_cli("submit", "--server", server.url, "--queue", "etl", "job.py", cwd=app_dir)
    assert first.returncode == 0, first.stderr
    r = run_cli("submit", "--server", server.url, "--queue", "etl", "job.py", cwd=app_dir)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.strip() == (
        "sessionsched submit: queue root.etl already holds 1 queued app(s), its "
        "max_queued_apps is 1; submit again once some have started")
    apps = json.loads(run_cli("apps", "--json", "--server", server.url).stdout)
    assert [a["id"] for a in apps] == [first.stdout.strip()]
