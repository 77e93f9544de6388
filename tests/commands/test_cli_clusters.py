"""``sessionsched apps``, ``top``, ``why``, ``submit --dry-run`` and the one-line answers name
each app's cluster behind several clusters (the API names it then only:
docs/operator/clusters.md), and are as they were with one."""

from __future__ import annotations

import pytest
from rich.console import Console

from sessionsched.backends.ports import free_port
from sessionsched.client.shapes import App
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.commands.client_cmds import app_table, describe
from sessionsched.commands.dry_run import dry_run_lines
from sessionsched.commands.inspect import frame, why_lines
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import run_cli


def _app(app_id: str, state: str, **more) -> App:
    return App.from_json({"id": app_id, "name": app_id, "queue": "root.default",
                          "priority": 5000, "state": state, **more})


def _render(apps) -> list[str]:
    console = Console(width=200, record=True)
    console.print(app_table(apps))
    return console.export_text().splitlines()


def test_the_table_has_a_cluster_column_when_an_app_names_one():
    lines = _render([_app("x", "RUNNING", cluster="b"), _app("y", "ACCEPTED", position=1)])
    assert "CLUSTER" in lines[0]
    x = next(line for line in lines if line.startswith("x"))
    assert x.split()[3] == "b"
    assert describe(_app("x", "RUNNING", cluster="b")).startswith("x: RUNNING, root.default, "
                                                                  "on cluster b")


def test_with_one_cluster_the_table_is_as_it_was():
    assert "CLUSTER" not in _render([_app("x", "RUNNING")])[0]


class _Client:
    """What ``top``'s frame reads: the apps and the queues (none here)."""

    def __init__(self, apps):
        self._apps = apps

    def apps(self):
        return self._apps

    def queues(self):
        return []


def _frame(apps) -> list[str]:
    console = Console(width=200, record=True)
    console.print(frame(_Client(apps), 30))
    return [line.rstrip() for line in console.export_text().splitlines()]


@pytest.mark.parametrize(("apps", "header", "row"), [
    ([_app("x", "RUNNING", cluster="b"), _app("y", "ACCEPTED", position=1)],
     ["ID", "NAME", "QUEUE", "CLUSTER", "PRIO"], ["x", "x", "root.default", "b", "5000"]),
    ([_app("x", "RUNNING"), _app("y", "ACCEPTED", position=1)],
     ["ID", "NAME", "QUEUE", "PRIO", "STATE"], ["x", "x", "root.default", "5000", "RUNNING"]),
], ids=["several clusters", "one cluster"])
def test_top_shows_each_running_apps_cluster_behind_several(apps, header, row):
    lines = _frame(apps)
    at = lines.index("Running")
    assert lines[at + 1].split()[:5] == header
    assert lines[at + 2].split()[:5] == row


@pytest.mark.parametrize(("app", "first"), [
    (_app("x", "RUNNING", cluster="b"),
     "x (x, no user): RUNNING in root.default, priority 5000, on cluster b"),
    (_app("x", "RUNNING"), "x (x, no user): RUNNING in root.default, priority 5000"),
], ids=["several clusters", "one cluster"])
def test_why_names_the_cluster_an_app_runs_on(app, first):
    assert why_lines(app, [])[0] == first


def test_why_names_the_cluster_of_each_app_running_in_the_queue():
    waiting = _app("w", "ACCEPTED", position=1, reason="behind", reason_code="behind_app")
    lines = why_lines(waiting, [waiting, _app("r", "RUNNING", cluster="a", executors=2,
                                              target=2, demand=2)])
    assert "  r r RUNNING priority 5000, 2/2/2, on cluster a" in lines


@pytest.mark.parametrize(("answer", "second"), [
    ({"fits": True, "queue": "root.default", "position": None, "cluster": "b",
      "clusters": ["a", "b"]}, "cluster: b"),
    ({"fits": True, "queue": "root.default", "position": 2, "cluster": "a",
      "clusters": ["a", "b"]}, "cluster: a (once it can start there)"),
    ({"fits": True, "queue": "root.default", "position": 2, "clusters": ["a", "b"]},
     "clusters: a, b (none would start it within 12 h)"),
    ({"fits": True, "queue": "root.default", "position": None},
     "starts: now, in root.default"),
], ids=["room on b", "it waits, then starts on a", "on none within the horizon",
        "one cluster"])
def test_dry_run_names_the_cluster_behind_several(answer, second):
    assert dry_run_lines(answer)[:2] == ["fits: yes", second]


def test_cluster_status_asks_a_scheduler_for_each_of_its_clusters(tmp_path):
    """``cluster status --server``: a memory cluster that answers and a standalone one whose
    master nothing listens for: each on its line, exit 1 for the one out of reach."""
    closed = free_port()
    config = {"server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50},
              "clusters": [{"name": "a", "backend": "memory", "cores": 4},
                           {"name": "b", "backend": "standalone",
                            "master": f"spark://127.0.0.1:{closed}",
                            "master_ui": f"http://127.0.0.1:{closed}"}]}
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        def answer():
            done = run_cli("cluster", "status", "--server", server.url)
            rows = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[2:]}
            return rows == {"a": "yes", "b": "NO"} and done

        done = wait_until(answer, 30, "both clusters seen")
    finally:
        server.stop()
    assert done.returncode == 1, done
    assert done.stdout.splitlines()[1].split() == [
        "CLUSTER", "REACHABLE", "CORES", "MEMORY", "RUNNING", "QUEUED"]


def test_cluster_status_of_a_scheduler_with_one_cluster(shared_offline_server):
    done = run_cli("cluster", "status", "--server", shared_offline_server.url)
    assert done.returncode == 1, done  # its master cannot be reached
    assert done.stdout.startswith("cluster  cluster unreachable"), done.stdout
    assert done.stdout.splitlines()[1].startswith("workers  0, 0 cores")
