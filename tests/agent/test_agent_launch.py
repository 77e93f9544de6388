"""What the service adds for the agent, the argv wrapper, and reading the server's answers.
Pure functions: no Spark, no server."""

import pytest

from sessionsched.agent.launch import (
    agent_conf,
    bootstrap_path,
    dynamic_allocation_conf,
    wrap_argv,
)
from sessionsched.agent.protocol import Answer, ReclaimOrder

DECOM = {
    "spark.decommission.enabled": "true",
    "spark.storage.decommission.enabled": "true",
    "spark.executor.decommission.forceKillTimeout": "30s",
    "spark.storage.decommission.replicationReattemptInterval": "2s",
}


@pytest.mark.parametrize(
    "user, timeout_s, ceiling, added, warns",
    [
        ({}, 0, None, {}, 0),
        ({}, -1, 8, {"spark.dynamicAllocation.maxExecutors": "8"}, 0),
        ({"spark.dynamicAllocation.maxExecutors": "3"}, 0, 8, {}, 0),
        ({}, 30, None, DECOM, 0),
        # an explicit user setting is kept, the rest is filled in
        (
            {"spark.executor.decommission.forceKillTimeout": "5s"},
            30,
            None,
            {k: v for k, v in DECOM.items() if "forceKill" not in k},
            0,
        ),
        # the user turned decommission off on a graceful queue: respected, with a warning
        ({"spark.decommission.enabled": "false"}, 30, None, {}, 1),
        # a static app gets nothing from the agent
        ({"spark.dynamicAllocation.enabled": "false"}, 30, 8, {}, 0),
    ],
    ids=[
        "kill-queue adds nothing",
        "ceiling becomes maxExecutors",
        "user's maxExecutors kept",
        "graceful queue turns decommission on",
        "user's forceKillTimeout kept",
        "decommission off by the user",
        "static app",
    ],
)
def test_agent_conf(user, timeout_s, ceiling, added, warns):
    before = dict(user)
    conf, warnings = agent_conf(user, timeout_s, ceiling)
    assert conf == added
    assert len(warnings) == warns
    assert user == before  # input not modified


@pytest.mark.parametrize(
    "user, added, warns",
    [
        ({}, {"spark.dynamicAllocation.enabled": "true",
              "spark.dynamicAllocation.shuffleTracking.enabled": "true"}, 0),
        ({"spark.shuffle.service.enabled": "true"}, {"spark.dynamicAllocation.enabled": "true"}, 0),
        ({"spark.dynamicAllocation.enabled": "FALSE"}, {}, 1),
    ],
    ids=["defaults", "external shuffle service: no tracking needed", "static app warns"],
)
def test_dynamic_allocation_conf(user, added, warns):
    conf, warnings = dynamic_allocation_conf(user)
    assert (conf, len(warnings)) == (added, warns)


BOOT = bootstrap_path()


@pytest.mark.parametrize(
    "argv, wrapped",
    [
        (["app.py"], [BOOT, "app.py"]),
        (
            ["--conf", "a=b", "--name", "x", "dir/app.py", "--conf", "k=v", "1"],
            ["--conf", "a=b", "--name", "x", BOOT, "dir/app.py", "--conf", "k=v", "1"],
        ),
        (["--verbose", "--py-files=lib.zip", "app.py"], ["--verbose", "--py-files=lib.zip", BOOT,
                                                         "app.py"]),
        (["--class", "Main", "app.jar", "x.py"], ["--class", "Main", "app.jar", "x.py"]),
    ],
    ids=["bare", "options before, app options after", "switch and --opt=value", "jvm app as is"],
)
def test_wrap_argv(argv, wrapped):
    assert list(wrap_argv(argv)) == wrapped


def test_bootstrap_path_is_the_file_in_the_package():
    assert BOOT.endswith("sessionsched/agent/bootstrap.py")


@pytest.mark.parametrize(
    "body, expected",
    [
        ({}, Answer(1.0, 0, 0, "", ())),
        (
            {"heartbeat_s": 0.5, "target": 4, "grant": 3, "state": "RUNNING",
             "reclaim": [{"executor_ids": [3, "4"], "mode": "decommission", "deadline": 12}],
             "future_field": True},
            Answer(0.5, 4, 3, "RUNNING", (ReclaimOrder(("3", "4"), "decommission", 12.0),)),
        ),
        ({"heartbeat_s": 0.001}, Answer(0.1, 0, 0, "", ())),  # never a busy loop
        ({"heartbeat_s": None, "state": "KILLED"}, Answer(1.0, 0, 0, "KILLED", ())),
    ],
    ids=["empty answer takes defaults", "full answer, unknown field ignored", "floor on interval",
         "terminal"],
)
def test_answer_from_json(body, expected):
    answer = Answer.from_json(body, 1.0)
    assert answer == expected
    assert answer.terminal == (expected.state == "KILLED")


def test_answer_with_an_unknown_reclaim_mode_is_refused():
    with pytest.raises(ValueError, match="unknown reclaim mode 'evict'"):
        Answer.from_json({"reclaim": [{"executor_ids": ["1"], "mode": "evict"}]}, 1.0)
