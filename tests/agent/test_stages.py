"""The app's stages in the agent's reports (sessionsched/agent/stages.py,
docs/design/agent-protocol.md, "Stages"): which stage ids a look reads from the status store
(a table of looks), what a read makes of Spark's answers (a stand-in for the driver's py4j
objects: the status tracker, the status store), the body, and the agent loop: the stages ride
on the reports it sends anyway, never bring one of their own, and a failed read leaves them
out. The real-Spark check: tests/real_spark/agent_cluster/test_agent_cluster.py."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from sessionsched.agent import protocol, stages
from sessionsched.agent.agent import Agent
from sessionsched.agent.stages import (
    ActiveStage,
    DoneStage,
    StageBook,
    StageFacts,
    StageReader,
    task_seconds,
)
from tests.agent.test_agent_protocol import StandInSpark

A, C, P, S, F = "ACTIVE", "COMPLETE", "PENDING", "SKIPPED", "FAILED"

# Each look: (the ids the tracker lists running, each stage's status in the store then)
# -> the ids read at each look; the ids counted as done at the end.
LOOKS = {
    "a stage seen running is read once, when it has left": (
        [([0], {0: A}), ([], {0: C}), ([], {0: C})], [[], [0], []], {0}),
    "a stage that ran between two looks is read by its id, below one seen running": (
        [([0], {0: A}), ([2], {0: C, 1: C, 2: A})], [[], [0, 1]], {0, 1}),
    "a stage waiting for its parent is read again until it runs or is skipped": (
        [([2], {0: C, 1: P, 2: A}), ([2], {1: S, 2: A}), ([], {2: C})], [[0, 1], [1], [2]],
        {0, 2}),
    "a failed stage run again is watched again, and counted once it completes": (
        [([0], {0: A}), ([], {0: F}), ([0], {0: A}), ([], {0: C})], [[], [0], [], [0]], {0}),
    "a completed stage run again for lost shuffle output is counted once": (
        [([0], {0: A}), ([], {0: C}), ([0], {0: A}), ([], {0: C})], [[], [0], [], []], {0}),
    "a stage the store no longer has is dropped": (
        [([1], {1: A}), ([1], {1: A})], [[0], []], set()),
    "no stage yet: nothing to read": ([([], {}), ([], {})], [[], []], set()),
    "at most MAX_READS ids a look; the rest at the next ones": (
        [([45], {i: C for i in range(46)})] * 3,
        [list(range(20)), list(range(20, 40)), list(range(40, 45))], set(range(45))),
}


@pytest.mark.parametrize("looks, reads, counted", LOOKS.values(), ids=LOOKS.keys())
def test_which_stage_ids_a_look_reads(looks, reads, counted):
    book, read = StageBook(), []
    for active, store in looks:
        ids = book.to_read(active)
        read.append(ids)
        book.settle(active, {i: store.get(i) for i in ids})
    assert read == reads
    assert book.counted == counted


class _Missing(Exception):
    """What py4j raises for the store's NoSuchElementException (its text names it)."""

    def __init__(self, stage_id):
        super().__init__(f"java.util.NoSuchElementException: No stage with id {stage_id}")


class _Option:
    def __init__(self, value=None):
        self.value = value

    def isDefined(self):  # noqa: N802 - Scala's names, as py4j hands them over
        return self.value is not None

    def get(self):
        return self.value


def _stage(status, tasks, run_ms, done_at_ms):
    return SimpleNamespace(
        status=lambda: SimpleNamespace(name=lambda: status), numTasks=lambda: tasks,
        numCompleteTasks=lambda: tasks, executorRunTime=lambda: run_ms,
        executorDeserializeTime=lambda: 0, resultSerializationTime=lambda: 0,
        completionTime=lambda: _Option(SimpleNamespace(getTime=lambda: done_at_ms)))


class StandInStore:
    """The driver's status tracker and status store, as plain state."""

    def __init__(self):
        self.active: dict[int, tuple[int, int, int]] = {}  # id -> (tasks, done, running)
        self.stored: dict[int, SimpleNamespace] = {}
        self.launched: dict[int, float] = {}  # id -> its oldest running task's launch, epoch s
        self.broken = False

    # the tracker (JavaSparkStatusTracker)
    def getActiveStageIds(self):  # noqa: N802
        if self.broken:
            raise RuntimeError("Py4JError: the JVM went away")
        return list(self.active)

    def getStageInfo(self, stage_id):  # noqa: N802
        if stage_id not in self.active:
            return None
        tasks, done, running = self.active[stage_id]
        return SimpleNamespace(numTasks=lambda: tasks, numCompletedTasks=lambda: done,
                               numActiveTasks=lambda: running, currentAttemptId=lambda: 0)

    # the store (AppStatusStore)
    def lastStageAttempt(self, stage_id):  # noqa: N802
        if stage_id not in self.stored:
            raise _Missing(stage_id)
        return self.stored[stage_id]

    def taskList(self, stage_id, attempt, offset, length, sort_by, ascending, statuses):  # noqa: N802
        assert (offset, length, sort_by, ascending, statuses) == (0, 1, "lt", True, ["RUNNING"])
        at = self.launched.get(stage_id)
        tasks = [] if at is None else [SimpleNamespace(
            launchTime=lambda: SimpleNamespace(getTime=lambda: at * 1000))]
        return SimpleNamespace(isEmpty=lambda: not tasks, head=lambda: tasks[0])


class _ArrayList(list):
    add = list.append


def _package(path: str, **members):
    """py4j's view of a JVM package: ``_package("a.b", C=c).a.b.C``."""
    node = SimpleNamespace(**members)
    for name in reversed(path.split(".")):
        node = SimpleNamespace(**{name: node})
    return node


def stand_in_sc(store: StandInStore):
    jvm = SimpleNamespace(java=_package("util", ArrayList=_ArrayList),
                          scala=SimpleNamespace(Some=lambda v: v),
                          org=_package("apache.spark.status.api.v1",
                                       TaskStatus=SimpleNamespace(RUNNING="RUNNING")))
    jsc = SimpleNamespace(statusTracker=lambda: store,
                          sc=lambda: SimpleNamespace(statusStore=lambda: store))
    return SimpleNamespace(_jsc=jsc, _jvm=jvm)


def test_a_look_reads_the_running_stages_and_each_completed_one_once():
    store = StandInStore()
    reader = StageReader(stand_in_sc(store))
    assert reader.look(100.0) == StageFacts((), ())
    # Stages 0 and 1 ran between the looks (1 ended first); 2 runs, its oldest task for 1.5 s;
    # 3 runs with no task running yet.
    store.stored = {0: _stage(C, 4, 8_000, 5_000), 1: _stage(C, 2, 1_000, 4_000)}
    store.active = {3: (10, 0, 0), 2: (40, 12, 4)}
    store.launched = {2: 98.5}
    assert reader.look(100.0) == StageFacts(
        (DoneStage(2, 0.5), DoneStage(4, 2.0)),
        (ActiveStage(40, 12, 4, 1.5), ActiveStage(10, 0, 0, None)))
    # 2 completes; 0 and 1 are not read again.
    del store.stored[0], store.stored[1], store.active[2]
    store.stored[2] = _stage(C, 40, 40_000, 9_000)
    facts = reader.look(101.0)
    assert facts.done == (DoneStage(2, 0.5), DoneStage(4, 2.0), DoneStage(40, 1.0))
    assert stages.stages_body(facts) == {
        "done": [{"tasks": 2, "task_s": 0.5}, {"tasks": 4, "task_s": 2.0},
                 {"tasks": 40, "task_s": 1.0}],
        "active": [{"tasks": 10, "done": 0, "running": 0, "oldest_running_s": None,
                    "task_s": None}]}


def test_the_first_completed_stages_and_running_ones_are_capped(monkeypatch):
    monkeypatch.setattr(stages, "MAX_DONE", 2)
    monkeypatch.setattr(stages, "MAX_ACTIVE", 1)
    store = StandInStore()
    store.stored = {i: _stage(C, 1, 1_000 * (i + 1), i) for i in range(4)}
    store.active = {5: (1, 0, 0), 4: (1, 0, 0)}
    reader = StageReader(stand_in_sc(store))
    facts = reader.look(0.0)
    assert facts.done == (DoneStage(1, 1.0), DoneStage(1, 2.0))
    assert facts.active == (ActiveStage(1, 0, 0, None),)
    store.stored = {}  # with the first two kept, no completed stage is read any more
    assert reader.look(1.0).done == facts.done


def test_a_running_stage_with_tasks_done_says_their_mean_time_so_far():
    store = StandInStore()
    store.active = {0: (40, 10, 4), 1: (8, 0, 2)}
    store.stored = {0: _stage("ACTIVE", 40, 25_000, 0)}  # sums of its 10 completed tasks
    store.stored[0].numCompleteTasks = lambda: 10
    store.launched = {0: 9.0, 1: 9.5}
    assert StageReader(stand_in_sc(store)).look(10.0).active == (
        ActiveStage(40, 10, 4, 1.0, 2.5), ActiveStage(8, 0, 2, 0.5, None))


def test_a_stage_too_large_to_sort_in_the_driver_is_reported_without_its_oldest_task():
    store = StandInStore()
    store.active = {0: (stages.MAX_SORTED, 0, 4), 1: (stages.MAX_SORTED + 1, 0, 4)}
    store.launched = {0: 7.0, 1: 7.0}
    asked = []
    sort = store.taskList
    store.taskList = lambda stage_id, *a: asked.append(stage_id) or sort(stage_id, *a)
    assert StageReader(stand_in_sc(store)).look(10.0).active == (
        ActiveStage(stages.MAX_SORTED, 0, 4, 3.0), ActiveStage(stages.MAX_SORTED + 1, 0, 4, None))
    assert asked == [0]


def test_a_spark_without_the_launch_time_reports_the_stages_without_it(caplog):
    store = StandInStore()
    store.active = {0: (4, 0, 2)}
    store.taskList = None  # an older Spark's store
    reader = StageReader(stand_in_sc(store))
    with caplog.at_level(logging.INFO, "sessionsched.agent"):
        assert reader.look(1.0).active == (ActiveStage(4, 0, 2, None),)
        assert reader.look(2.0).active == (ActiveStage(4, 0, 2, None),)
    assert len([r for r in caplog.records if "launch time" in r.getMessage()]) == 1


def test_a_failed_read_is_no_stages_logged_once(caplog):
    store = StandInStore()
    store.broken = True
    reader = StageReader(stand_in_sc(store))
    with caplog.at_level(logging.WARNING, "sessionsched.agent"):
        assert reader.look(1.0) is None
        assert reader.look(2.0) is None
    assert len(caplog.records) == 1
    store.broken = False
    assert reader.look(3.0) == StageFacts((), ())


TASK_TIMES = {
    "the executor's part, over the completed tasks": ((3_000, 600, 400, 4), 1.0),
    "no completed task": ((0, 0, 0, 0), 0.0),
    "rounded to the millisecond": ((1_000, 0, 0, 3), 0.333),
}


@pytest.mark.parametrize("sums, mean", TASK_TIMES.values(), ids=TASK_TIMES.keys())
def test_a_completed_stages_mean_task_time(sums, mean):
    assert task_seconds(*sums) == mean


BODIES = {
    "stages read": (StageFacts((DoneStage(40, 2.31),), (ActiveStage(40, 12, 4, 1.8, 2.5),)),
                    {"done": [{"tasks": 40, "task_s": 2.31}],
                     "active": [{"tasks": 40, "done": 12, "running": 4,
                                 "oldest_running_s": 1.8, "task_s": 2.5}]}),
    "none yet": (StageFacts((), ()), {"done": [], "active": []}),
}


@pytest.mark.parametrize("facts, expected", BODIES.values(), ids=BODIES.keys())
def test_the_report_carries_the_stages(facts, expected):
    assert stages.stages_body(facts) == expected  # a failed read: ``stages`` left out, below


class StandInReader:
    def __init__(self):
        self.looks = 0
        self.broken = False

    def look(self, now: float):
        self.looks += 1
        return None if self.broken else StageFacts((), (ActiveStage(10, self.looks, 1, 0.1),))


class RecordingClient:
    """The server: answers as a change-driven one (keep-alive 10 s); keeps what it was sent."""

    def __init__(self):
        self.sent: list[tuple[str, dict]] = []

    def post(self, path: str, body: dict, timeout_s: float | None = None) -> dict:
        self.sent.append((path, body))
        return {"heartbeat_s": 1.0, "keepalive_s": 10.0, "state": "RUNNING"}


def test_stages_ride_on_the_reports_sent_anyway_and_bring_none_of_their_own():
    reader, client = StandInReader(), RecordingClient()
    agent = Agent(StandInSpark(), client, "a", stages=reader)
    agent.watch = SimpleNamespace(failing=False, take=lambda: None)  # watching, told nothing
    for now in (0.0, 0.0, 1.0, 2.0, 3.0, 10.5):  # register, report, 3 quiet looks, keep-alive
        agent._cycle(now)
    beats = [b for path, b in client.sent if path == protocol.HEARTBEAT_PATH]
    assert len(beats) == 2  # the stages moved at every look: no report of their own
    # read for each report that went out (the registration too), not at the quiet looks
    assert reader.looks == len(client.sent) == 3
    assert [b["stages"]["active"][0]["done"] for b in beats] == [2, 3]
    reader.broken = True
    agent.control.demand_now = 1
    agent._cycle(11.0)
    assert "stages" not in client.sent[-1][1]
    assert client.sent[-1][1]["demand"] == 1  # the rest reported as ever
