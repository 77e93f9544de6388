"""Stage-level resource profiles in the agent (sessionsched/agent/profiles.py,
docs/design/agent-protocol.md): what a report carries of each profile, the per-profile grant
of an answer (and an older server's answer without it), the caps set on Spark's allocation
manager (a stand-in for its py4j objects), and the real agent loop against a real
``sessionsched serve`` on the memory backend: a GPU stage's demand comes back as a grant of
that profile."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sessionsched.agent import protocol
from sessionsched.agent.agent import Agent
from sessionsched.agent.profiles import ProfileCaps, ProfileFact, ProfileReader, Shape
from sessionsched.agent.protocol import Answer
from sessionsched.agent.spark_control import ExecutorFact, SparkFacts
from sessionsched.agent.transport import JsonClient
from sessionsched.commands._serverproc import ServerProcess
from tests.agent.test_agent_protocol import StandInSpark, session
from tests.sparkcluster import wait_until
from tests.support.http_client import HTTP

GPU_SHAPE = Shape(1, 2048, (("gpu", 1.0),), 1.0, (("gpu", 1.0),))
DEFAULT_SHAPE = Shape(2, 4096)


def facts(default: int, gpu: int, executors=()) -> SparkFacts:
    profiles = (ProfileFact(0, DEFAULT_SHAPE, default, default * 2, 0),
                ProfileFact(1, GPU_SHAPE, gpu, gpu, 0))
    return SparkFacts(default + gpu, default * 2 + gpu, 0, tuple(executors), profiles)


def test_a_report_carries_each_profile_and_each_executors_profile():
    body = protocol.heartbeat_body("a", facts(1, 2, [ExecutorFact("1", 5.0, False),
                                                     ExecutorFact("2", 6.0, True, profile=1)]),
                                   "full")
    assert body["demand"] == 3
    assert body["executors"] == [{"id": "1", "idle": False, "started_at": 5.0},
                                 {"id": "2", "idle": True, "started_at": 6.0, "profile": 1}]
    assert body["profiles"] == [
        {"id": 0, "cores": 2, "memory_mib": 4096, "resources": {}, "task_cpus": 1.0,
         "task_resources": {}, "demand": 1, "pending_tasks": 2, "running_tasks": 0},
        {"id": 1, "cores": 1, "memory_mib": 2048, "resources": {"gpu": 1.0}, "task_cpus": 1.0,
         "task_resources": {"gpu": 1.0}, "demand": 2, "pending_tasks": 2, "running_tasks": 0},
    ]


def test_an_agent_that_reads_no_profiles_sends_the_older_shape():
    body = protocol.heartbeat_body("a", SparkFacts(2, 3, 1, (ExecutorFact("1", 5.0, False),)),
                                   "full")
    assert "profiles" not in body
    assert body["executors"] == [{"id": "1", "idle": False, "started_at": 5.0}]


ANSWERS = {
    "per profile": ({"grant": 3, "grants": {"0": 1, "1": 2}}, 3, ((0, 1), (1, 2))),
    "an older server: the grant is the default profile's": ({"grant": 3}, 3, ()),
}


@pytest.mark.parametrize("body, grant, grants", ANSWERS.values(), ids=ANSWERS.keys())
def test_the_answer_says_the_grant_per_profile(body, grant, grants):
    answer = Answer.from_json({"heartbeat_s": 1, "target": 3, "state": "RUNNING", **body}, 1.0)
    assert (answer.grant, answer.grants) == (grant, grants)


class _ScalaMap(dict):
    """What py4j hands back for a Scala map once converted: keySet() and get()."""

    def keySet(self):  # noqa: N802 - Java's name
        return list(self)


class _Targets(_ScalaMap):
    def update(self, key, value):
        self[key] = value


class _Field:
    def __init__(self, value):
        self.value = value

    def getInt(self, _):  # noqa: N802
        return self.value

    def setInt(self, _, value):  # noqa: N802
        self.value = value


def stand_in_jvm(requests: list):
    java = SimpleNamespace(asJava=lambda m: m)
    python_utils = SimpleNamespace(toScalaMap=lambda d: dict(d))
    return SimpleNamespace(
        scala=SimpleNamespace(jdk=SimpleNamespace(javaapi=SimpleNamespace(
            CollectionConverters=java))),
        org=SimpleNamespace(apache=SimpleNamespace(spark=SimpleNamespace(api=SimpleNamespace(
            python=SimpleNamespace(PythonUtils=python_utils))))),
    )


# the manager's targets, each profile's need, the caps, the user's maxExecutors; the targets
# after, the maps requested of the backend
CAPS = {
    "each profile lowered to its cap, the full map requested":
        ({0: 4, 1: 4}, {0: 4, 1: 4}, {0: 1, 1: 2}, 8, {0: 1, 1: 2}, [{0: 1, 1: 2}]),
    "a profile left out is held at 0":
        ({0: 2, 1: 3}, {0: 2, 1: 3}, {0: 2}, 8, {0: 2, 1: 0}, [{0: 2, 1: 0}]),
    "each raised to its need within its cap, by the agent, not the manager":
        ({0: 0, 1: 0}, {0: 1, 1: 4}, {0: 2, 1: 2}, 8, {0: 1, 1: 2}, [{0: 1, 1: 2}]),
    "between its need and its cap: left to Spark, which lowers it to the need":
        ({0: 1, 1: 1}, {0: 0, 1: 1}, {0: 2, 1: 2}, 8, {0: 1, 1: 1}, []),
    "never above the user's maxExecutors": ({0: 5}, {0: 9}, {0: 9}, 4, {0: 4}, [{0: 4}]),
}


@pytest.mark.parametrize("targets, needs, caps, ceiling, after, requested", CAPS.values(),
                         ids=CAPS.keys())
def test_caps_per_profile(targets, needs, caps, ceiling, after, requested):
    requests: list = []
    held = _Targets(targets)
    eam = SimpleNamespace(numExecutorsTargetPerResourceProfileId=lambda: held,
                          maxNumExecutorsNeededPerResourceProfile=lambda rp: needs[rp])
    backend = SimpleNamespace(requestTotalExecutors=lambda n, local, hosts: requests.append(n))
    reader = ProfileReader(stand_in_jvm(requests), None, eam, {})
    max_field = _Field(ceiling)
    reader.cap(caps, ceiling, max_field, backend)
    assert max_field.value == 0  # the manager raises no profile's target: the agent does
    assert dict(held) == after
    assert requests == requested


def _no_such_method(_executor_id):
    raise AttributeError("getExecutorResourceProfileId")  # as py4j on a Spark without it


# the backend's answer (or a backend without the method), the monitor's, the profile reported
EXECUTOR_PROFILES = {
    "registered with the backend, not yet seen by the monitor: the backend's": (1, -1, 1),
    "the backend no longer lists it: the monitor's": (-1, 2, 2),
    "a backend without the method: the monitor's": (_no_such_method, 1, 1),
    "known to neither yet: the default profile": (-1, -1, 0),
}


@pytest.mark.parametrize("backend_says, monitor_says, reported", EXECUTOR_PROFILES.values(),
                         ids=EXECUTOR_PROFILES.keys())
def test_an_executors_profile(backend_says, monitor_says, reported):
    monitor = SimpleNamespace(getResourceProfileId=lambda _eid: monitor_says)
    eam = SimpleNamespace(executorMonitor=lambda: monitor)
    lookup = backend_says if callable(backend_says) else (lambda _eid: backend_says)
    backend = SimpleNamespace(getExecutorResourceProfileId=lookup)
    reader = ProfileReader(stand_in_jvm([]), None, eam, {})
    assert reader.executor_profile("3", backend) == reported


class StandInProfiles(StandInSpark):
    """The stand-in driver with a GPU profile: its demand the test sets; the caps per profile
    the agent orders."""

    def __init__(self):
        super().__init__()
        self.gpu_demand = 0
        self.profile_caps: list[dict[int, int]] = []

    def facts(self) -> SparkFacts:
        self.reads += 1
        return facts(self.demand_now, self.gpu_demand, self.executors_now)

    def pulse(self) -> tuple[int, int]:
        return self.demand_now + self.gpu_demand, 0

    def set_caps(self, caps: dict[int, int]) -> None:
        if not self.profile_caps or self.profile_caps[-1] != caps:
            self.profile_caps.append(caps)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("agent-profiles")
    config = {
        "server": {"state_dir": str(work / "state"), "cycle_ms": 50, "heartbeat_s": 0.2,
                   "agent_keepalive_s": 3.0},
        "cluster": {"backend": "memory", "worker_groups": [
            {"count": 1, "cores": 8, "memory": "16g", "resources": {"gpu": 2}}]},
        "queues": [{"name": "root", "queues": [{"name": "notebooks"}]}],
        "defaults": {"queue": "root.notebooks"},
    }
    s = ServerProcess.start(config, work)
    try:
        yield s
    finally:
        s.stop()


def test_a_gpu_stage_is_granted_executors_of_its_profile_and_gives_them_back(server):
    spark = StandInProfiles()
    app_id = session(server)
    agent = Agent(spark, JsonClient(server.url), app_id, heartbeat_s=0.2)
    agent.start()
    try:
        wait_until(lambda: agent.reports >= 2, 30, "registered and reporting")
        spark.gpu_demand = 2  # a stage of the GPU profile starts
        wait_until(lambda: spark.profile_caps and spark.profile_caps[-1] == {0: 0, 1: 2}, 30,
                   "two executors of the GPU profile granted")
        spark.executors_now = (ExecutorFact("1", 1.0, False, profile=1),
                               ExecutorFact("2", 2.0, False, profile=1))
        wait_until(lambda: HTTP.get(f"{server.url}/api/v1/apps/{app_id}").json()["executors"]
                   == 2, 30, "the GPU executors on the books")
        # The stage ends, a default one starts; Spark releases the idle GPU executors.
        spark.gpu_demand, spark.demand_now = 0, 2
        spark.executors_now = ()
        wait_until(lambda: spark.profile_caps[-1] == {0: 2, 1: 0}, 30,
                   "the grant moved to the default profile")
    finally:
        agent.stop()


def profile_facts(*ids: int) -> tuple[ProfileFact, ...]:
    return tuple(ProfileFact(rp, DEFAULT_SHAPE if rp == 0 else GPU_SHAPE, 1, 1, 0) for rp in ids)


# (profiles seen at 0 s, grants told, now) -> the caps (None: the one cap, the grant of 3)
CHOICES = {
    "the default profile alone: the one cap": ((0,), (), 1.0, None),
    "a new profile not granted yet: held at 0": ((0, 1), (), 1.0, {0: 3}),
    "granted: each its part": ((0, 1), ((0, 1), (1, 2)), 1.0, {0: 1, 1: 2}),
    "another new one beside the granted: held at 0 (left out)":
        ((0, 1, 2), ((0, 1), (1, 2)), 1.0, {0: 1, 1: 2}),
    "no part after the wait: an older server, the one cap": ((0, 1), (), 31.0, None),
}


@pytest.mark.parametrize("ids, grants, now, expected", CHOICES.values(), ids=CHOICES.keys())
def test_which_caps_the_agent_sets(ids, grants, now, expected):
    caps = ProfileCaps(wait_s=30.0)
    caps.grants = grants
    caps.seen(profile_facts(*ids), 0.0)
    assert caps.choose(3, now) == expected


def test_a_report_after_a_kill_still_carries_the_profiles():
    """The executors this agent killed are left out of its reports; its profiles are not (a
    report without them would tell the server the app has the default profile alone)."""
    spark = StandInProfiles()
    spark.gpu_demand = 2
    spark.executors_now = (ExecutorFact("1", 1.0, True, profile=1),
                           ExecutorFact("2", 2.0, False, profile=1))
    agent = Agent(spark, JsonClient("http://127.0.0.1:9"), "a")
    agent.reclaim.killed.add("1")
    body = agent._heartbeat_body(spark.facts(), 5.0)
    assert [e["id"] for e in body["executors"]] == ["2"]
    assert [(p["id"], p["demand"]) for p in body["profiles"]] == [(0, 0), (1, 2)]
