"""``sessionsched apps`` and the one-line answers name each app's cluster behind several
clusters (the API names it then only: docs/operator/clusters.md)."""

from __future__ import annotations

from rich.console import Console

from sessionsched.client.shapes import App
from sessionsched.commands.client_cmds import app_table, describe


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
