"""The server's pure parts, table by table: reconciling executor reports, recording a step,
reading submissions, the launch conf."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from sessionsched.config import ServerConfig
from sessionsched.engine.agent_terms import demand_after_report
from sessionsched.engine.events import (
    CapacityChanged,
    DriverExited,
    DriverStarted,
    ExecutorsChanged,
    KillRequested,
    LaunchTerms,
    MarkState,
    Witness,
)
from sessionsched.intake import new_apps
from sessionsched.model import AppSpec, AppState, Executor, Resources, parse_mem_mib
from sessionsched.model.submission import Submission
from sessionsched.service.launch import build_launch, service_conf
from sessionsched.service.reconcile import AgentState, reconcile
from sessionsched.service.recording import record_step
from sessionsched.store import StoredApp

E1 = (Executor("1"),)

# --- reconcile: whose word counts for executors -----------------------------------------------

ALONE, BESIDE = Witness.CLUSTER_ALONE, Witness.CLUSTER
RECONCILE = [
    # name, agent (None: never registered), events in -> events out, the demand the engine
    # then takes (``engine.agent_terms``; None: left as it was)
    ("no agent: cluster view, demand = held", None,
     [ExecutorsChanged("a", E1)], [ExecutorsChanged("a", E1, ALONE)], 1),
    ("live agent speaks for the app",
     AgentState(seen_at=99.0, executors=(("1", False),), demand=1),
     [ExecutorsChanged("a", ())], [], None),
    # A silent agent cannot get a grant to the app: its last demand is no claim to grow.
    ("silent agent: cluster view, demand = held",
     AgentState(seen_at=90.0, executors=(("1", False),), demand=1),
     [ExecutorsChanged("a", ())], [ExecutorsChanged("a", (), ALONE)], 0),
    # A change-driven agent (it watches; keep-alive 10 s) is quiet while nothing changes:
    # live for two keep-alives, then silent like any other.
    ("change-driven agent quiet for 15 s of a 10 s keep-alive: live",
     AgentState(seen_at=85.0, executors=(("1", False),), demand=1, keepalive_s=10.0),
     [ExecutorsChanged("a", ())], [], None),
    ("change-driven agent quiet for two keep-alives: silent",
     AgentState(seen_at=79.0, executors=(("1", False),), demand=1, keepalive_s=10.0),
     [ExecutorsChanged("a", ())], [ExecutorsChanged("a", (), ALONE)], 0),
    ("registered, no report yet", AgentState(seen_at=99.0),
     [ExecutorsChanged("a", E1)], [ExecutorsChanged("a", E1, ALONE)], 1),
    ("admission-only agent: its demand, the cluster's executors",
     AgentState(seen_at=99.0, control="admission-only", demand=3),
     [ExecutorsChanged("a", E1)], [ExecutorsChanged("a", E1, BESIDE)], None),
    ("an agent's own list passes as it is (the memory backend's)", None,
     [ExecutorsChanged("a", E1, Witness.AGENT)], [ExecutorsChanged("a", E1, Witness.AGENT)],
     None),
    ("other events pass", None,
     [CapacityChanged(Resources(4, 4096), 2), DriverExited("a", 0)],
     [CapacityChanged(Resources(4, 4096), 2), DriverExited("a", 0)], None),
]


def taken_demand(events, before: int) -> int | None:
    """The demand the engine takes after these events (None: left at ``before``)."""
    demand = before
    for ev in events:
        if isinstance(ev, ExecutorsChanged):
            demand = demand_after_report(ev.seen_by, len(ev.executors), demand)
    return None if demand == before else demand


@pytest.mark.parametrize("agent,events,expected,demand", [r[1:] for r in RECONCILE],
                         ids=[r[0] for r in RECONCILE])
def test_reconcile(agent, events, expected, demand):
    agents = {"a": agent} if agent is not None else {}
    # now 100, heartbeat 1 s: live means heard from since 97
    out = reconcile(events, agents, now=100.0, heartbeat_s=1.0)
    assert out == expected
    assert taken_demand(out, before=7) == demand  # 7: a demand none of the rows lists


# --- recording a step -------------------------------------------------------------------------


def stored(app_id: str, state=AppState.ACCEPTED) -> StoredApp:
    spec = AppSpec(app_id=app_id, queue="root.default", seq=1, submitted_at=0.0, priority=5000,
                   name="n", user="u")
    return StoredApp(Submission(spec=spec, kind="submit"), state=state)


def test_record_step_writes_every_state_change_with_its_times():
    apps = {"a": stored("a"), "b": stored("b", AppState.RUNNING), "c": stored("c")}
    killers = {"c": "Admin (Spark REST from 127.0.0.1:5)"}
    rec = record_step(
        10.0,
        [DriverStarted("a", "app-1"), DriverExited("b", 3), KillRequested("c")],
        [MarkState("a", AppState.STARTING, "driver launched", at=10.0),
         MarkState("b", AppState.FAILED, "launch failed: no java", at=10.0, exit_code=3),
         MarkState("c", AppState.KILLED, "killed on request", at=10.0)],
        apps, killers,
    )
    assert rec.changes == {
        "a": {"spark_app_id": "app-1", "state": AppState.STARTING, "reason": "driver launched",
              "started_at": 10.0},
        "b": {"exit_code": 3, "state": AppState.FAILED, "reason": "launch failed: no java",
              "finished_at": 10.0, "usage_open": True},
        "c": {"state": AppState.KILLED, "reason": "killed on request", "finished_at": 10.0,
              "exit_code": None, "usage_open": True},
    }
    assert [(r.app_id, r.kind, r.detail) for r in rec.rows] == [
        ("a", "driver", "Spark application id app-1"),
        ("b", "exit", "driver exited with code 3"),
        ("c", "kill", "kill requested by Admin (Spark REST from 127.0.0.1:5)"),
        ("a", "state", "ACCEPTED -> STARTING: driver launched"),
        ("b", "state", "RUNNING -> FAILED: launch failed: no java"),
        ("c", "state", "ACCEPTED -> KILLED: killed on request"),
    ]
    assert killers == {}  # consumed
    assert apps["a"].state is AppState.ACCEPTED  # the books change only after the commit


# --- submissions ------------------------------------------------------------------------------

DEFAULTS = new_apps.Defaults(root=ServerConfig().queue_tree(), queue="root.default")


@pytest.mark.parametrize("text,mib", [("512m", 512), ("2g", 2048), ("1024", 1024), ("1t", 2**20),
                                      ("2048k", 2), ("1gb", 1024), (" 3 G ", 3072), (64, 64)])
def test_memory_sizes(text, mib):
    assert parse_mem_mib(text) == mib


@pytest.mark.parametrize("text", ["512k", "²g", "1.5g", "-1g", "g", "", True, 1.5])
def test_memory_sizes_refused(text):
    with pytest.raises(ValueError, match="size like 512m|less than 1 MiB"):
        parse_mem_mib(text)


def test_rest_submission_sizing():
    app, unknown = new_apps.from_rest({
        "action": "CreateSubmissionRequest", "appResource": "file:/a.jar", "mainClass": "M",
        "sparkProperties": {"spark.driver.cores": "2", "spark.driver.memory": "2g",
                            "spark.executor.cores": "2", "spark.executor.memory": "3g",
                            "spark.cores.max": "8", "spark.ego.slots.max": "6"},
    }, DEFAULTS)
    spec = app.spec
    assert (spec.driver, spec.executor) == (Resources(2, 2048), Resources(2, 3072))
    assert spec.driver_in_cluster is True
    # A JVM app without dynamic allocation: static, capped at cores.max/executor cores = 4
    # executors, and by slots.max 6 cores = 3 executors.
    assert (spec.max_executors, spec.slots_max, spec.executor_cap) == (4, 6, 3)
    assert unknown == [] and app.warnings == ()


def test_launch_conf_turns_dynamic_allocation_on_unless_turned_off():
    app, _ = new_apps.from_rest({"action": "CreateSubmissionRequest", "appResource": "a.jar",
                                    "mainClass": "M", "sparkProperties": {}}, DEFAULTS)
    app = replace(app, kind="submit", conf={}, spec=replace(app.spec, name="etl"))
    # On or off is the engine's decision (``agent_terms``, tests/engine/test_agent_terms.py);
    # the launch carries it out.
    assert service_conf(app, LaunchTerms(dynamic_allocation=True)) == {
        "spark.app.name": "etl", "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true", "spark.executor.cores": "1"}
    app = replace(app, conf={"spark.dynamicAllocation.enabled": "false",
                             "spark.executor.cores": "2"})
    assert service_conf(app, LaunchTerms(dynamic_allocation=False)) == {"spark.app.name": "etl"}


def test_a_gang_is_launched_with_all_n_executors_at_once_and_kept():
    app, _ = new_apps.from_rest({"action": "CreateSubmissionRequest", "appResource": "a.jar",
                                    "mainClass": "M", "sparkProperties": {}}, DEFAULTS)
    app = replace(app, kind="submit", conf={"spark.dynamicAllocation.minExecutors": "1"},
                  spec=replace(app.spec, name="etl"))
    conf = service_conf(app, LaunchTerms(dynamic_allocation=True, gang_executors=4))
    assert (conf["spark.dynamicAllocation.minExecutors"],
            conf["spark.dynamicAllocation.initialExecutors"]) == ("4", "4")
    # A gang that fell back (soft timeout) is launched as an ordinary app; a static app is
    # sized by its own properties.
    for terms in (LaunchTerms(dynamic_allocation=True),
                  LaunchTerms(dynamic_allocation=False, gang_executors=4)):
        assert "spark.dynamicAllocation.minExecutors" not in service_conf(app, terms)


def test_a_static_app_is_capped_by_cores_max_the_one_cap_standalone_honours(tmp_path):
    """Spark standalone gives a static app every free core at registration, bounded only by
    ``spark.cores.max`` (``spark.executor.instances`` is YARN's and Kubernetes'): seen on the
    agent tests' cluster, a static gang of 4 on 6 free cores got 6 executors."""
    (tmp_path / "job.py").write_text("")

    def static(*conf: str, gang: int | None = None):
        argv = ["--conf", "spark.dynamicAllocation.enabled=false", "--conf",
                "spark.executor.cores=2"]
        for c in conf:
            argv += ["--conf", c]
        app = new_apps.from_argv([*argv, "job.py"], str(tmp_path), {}, {}, None, None, "etl",
                                 DEFAULTS)
        terms = LaunchTerms(dynamic_allocation=False, gang_executors=gang)
        return service_conf(app, terms).get("spark.cores.max")

    assert static("spark.executor.instances=4") == "8"  # 4 executors of 2 cores
    assert static("spark.executor.instances=4", "spark.ego.slots.max=6") == "6"
    assert static("spark.executor.instances=4", "spark.cores.max=2") is None  # the user's own
    assert static() is None  # uncapped, as before: every free core
    # A static gang without a cap of its own takes its N (one that fell back: uncapped, above).
    assert static(gang=3) == "6"
    assert static("spark.executor.instances=4", gang=3) == "8"
    # With dynamic allocation the agent and maxExecutors bound it; slots.max alone sets it.
    app = new_apps.from_argv(["--conf", "spark.executor.instances=4", "job.py"], str(tmp_path),
                             {}, {}, None, None, "etl", DEFAULTS)
    assert "spark.cores.max" not in service_conf(app, LaunchTerms(dynamic_allocation=True))


def test_the_launch_gives_the_driver_its_identity_and_the_service_conf(tmp_path):
    (tmp_path / "job.py").write_text("")
    app = new_apps.from_argv(["--conf", "spark.executor.cores=2", "job.py", "7"],
                                str(tmp_path), {"spark.executor.memory": "1g"},
                                {"PYSPARK_PYTHON": "/usr/bin/python3"}, None, None, "etl",
                                DEFAULTS)
    app = replace(app, spec=replace(app.spec, app_id="driver-20261121170000-0001"))
    launch = build_launch(app, "http://127.0.0.1:6066", tmp_path / "logs")
    assert launch.env["SESSIONSCHED_APP_ID"] == "driver-20261121170000-0001"
    assert launch.env["SESSIONSCHED_SERVER"] == "http://127.0.0.1:6066"
    assert launch.env["PYSPARK_PYTHON"] == "/usr/bin/python3"
    assert launch.argv[-2:] == ("job.py", "7") and launch.cwd == str(tmp_path)
    assert launch.log_path == str(tmp_path / "logs" / "driver-20261121170000-0001.log")
    assert (launch.conf["spark.app.name"], launch.conf["spark.executor.memory"]) == ("etl", "1g")
    assert launch.conf["spark.dynamicAllocation.enabled"] == "true"
    assert launch.in_cluster is False and launch.rest_request is None



def test_the_cluster_view_held_back_while_the_agent_spoke_counts_once_it_falls_silent():
    agent = AgentState(seen_at=100.0, executors=(("1", False), ("2", False)), demand=2)
    agents = {"a": agent}
    # The agent is live: the cluster's news (executor 2 gone) is held back...
    assert reconcile([ExecutorsChanged("a", E1)], agents, now=100.5, heartbeat_s=1.0) == []
    assert reconcile([], agents, now=102.0, heartbeat_s=1.0) == []
    # ...and handed over, once, when the agent has been silent for three heartbeats.
    handed = reconcile([], agents, now=104.0, heartbeat_s=1.0)
    assert handed == [ExecutorsChanged("a", E1, Witness.CLUSTER_ALONE)]
    assert taken_demand(handed, before=2) == 1  # what it holds, not the agent's last word
    assert reconcile([], agents, now=105.0, heartbeat_s=1.0) == []


def test_a_driver_that_exited_hands_over_no_cluster_view():
    agent = AgentState(seen_at=100.0, executors=(("1", False),), demand=1)
    agents = {"a": agent}
    assert reconcile([ExecutorsChanged("a", E1)], agents, now=100.5, heartbeat_s=1.0) == []
    exited = DriverExited("a", 137)
    assert reconcile([exited], agents, now=101.0, heartbeat_s=1.0) == [exited]
    # Silent now, but its executors died with the driver: no stale view comes back.
    assert reconcile([], agents, now=110.0, heartbeat_s=1.0) == []


def test_a_submission_turned_static_is_launched_static(tmp_path):
    """Decided once, when the submission is checked (``agent_terms.dynamic_allocation``);
    the launch carries it out: no dynamic allocation, no agent settings."""
    (tmp_path / "job.py").write_text("")
    app = new_apps.from_argv(["--conf", "spark.dynamicAllocation.enabled=false", "job.py"],
                                str(tmp_path), {}, {}, None, None, "etl", DEFAULTS)
    app = replace(app, spec=replace(app.spec, app_id="driver-20261121170000-0002"))
    assert app.spec.dynamic_allocation is False
    launch = build_launch(app, "http://127.0.0.1:6066", tmp_path / "logs",
                          terms=LaunchTerms(dynamic_allocation=False, executor_ceiling=8))
    assert "spark.dynamicAllocation.enabled" not in launch.conf
    assert "spark.dynamicAllocation.maxExecutors" not in launch.conf
    rest, _ = new_apps.from_rest({"action": "CreateSubmissionRequest", "appResource": "a.jar",
                                     "mainClass": "M", "sparkProperties": {}}, DEFAULTS)
    assert rest.spec.dynamic_allocation is False  # a JVM REST app keeps what it asked: nothing


def test_a_launch_stamps_what_an_event_log_cannot_know(tmp_path):
    """Its submission, its launch and its queue ride in the app's Spark properties, so the
    event log of an app sessionsched ran carries them (``workload from-eventlogs`` reads them)."""
    (tmp_path / "job.py").write_text("")
    app = new_apps.from_argv(["job.py"], str(tmp_path), {}, {}, None, None, "etl", DEFAULTS)
    app = replace(app, spec=replace(app.spec, app_id="driver-20261121170000-0003",
                                    submitted_at=1_700_000_000.25))
    before = time.time()
    conf = build_launch(app, "http://127.0.0.1:6066", tmp_path / "logs").conf
    assert conf["spark.sessionsched.submitTime"] == "1700000000250"
    assert before * 1000 - 1 <= int(conf["spark.sessionsched.launchTime"]) <= time.time() * 1000 + 1
    assert conf["spark.sessionsched.queue"] == app.queue
