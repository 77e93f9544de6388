"""Where a submission's driver runs, as intake records it (engine/host_room.py reads it): a
notebook's session with its user, a Livy session and every client-mode submission on the
scheduler's host, a Spark REST submission in the cluster; and spark.driver.memoryOverhead."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionsched.engine.host_room import driver_place, host_need
from sessionsched.intake import new_apps
from sessionsched.model import Resources
from tests.support.server_helpers import make_config

DEFAULTS = new_apps.Defaults(root=make_config(Path("unused")).queue_tree(), queue="root.default")

CASES = {
    # name: (conf, on_host, where, host need)
    "a notebook's session: with its user": ({}, False, "user", Resources(1, 1408)),
    "a Livy session: on the scheduler's host": ({}, True, "host", Resources(1, 1408)),
    "spark.driver.memoryOverhead set": ({"spark.driver.memory": "2g",
                                         "spark.driver.memoryOverhead": "512m"}, True, "host",
                                        Resources(1, 2560)),
    "10 % of a large driver": ({"spark.driver.memory": "8g"}, True, "host", Resources(1, 9011)),
}


@pytest.mark.parametrize("conf, on_host, where, need", CASES.values(), ids=CASES.keys())
def test_sessions(conf, on_host, where, need):
    app = new_apps.from_session("nb", None, None, conf, DEFAULTS, on_host=on_host)
    assert driver_place(app.spec) == where
    assert host_need(app.spec) == need


def test_a_rest_submission_runs_its_driver_in_the_cluster():
    body = {"action": "CreateSubmissionRequest", "appResource": "hdfs:///a.jar",
            "mainClass": "A", "sparkProperties": {}}
    app, _ = new_apps.from_rest(body, DEFAULTS)
    assert driver_place(app.spec) == "cluster"
