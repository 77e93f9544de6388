"""The agent's side of the protocol (docs/design/agent-protocol.md), fast: the real agent loop (its
thread, its watch, urllib) against a real ``sessionsched serve`` on the memory backend, with a
stand-in for the driver's Spark (``StandInSpark``: the demand and executors the test sets, the
caps and kills the agent orders -- what ``SparkControl`` does through py4j; the real-cluster
tests in this directory run the real one).

- On today's server the agent is change-driven: it reports when its facts change (and each
  keep-alive), and its grant comes by its watch, woken by the cycle that decided it.
- On an older server (answers without ``keepalive_s``) it heartbeats every ``heartbeat_s``,
  as it always did: agents and servers can be upgraded in either order.
- Its reports say when it looked (``observed_at``) and when executors gone since the last
  report left (``removed``: its driver's removal time, else the look); a stopped context's
  agent sends one last report with no executors.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from sessionsched.agent.agent import Agent
from sessionsched.agent.spark_control import FULL, ExecutorFact, Probe, SparkFacts
from sessionsched.agent.transport import JsonClient
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import wait_until
from tests.support.http_client import HTTP

KEEPALIVE_S = 3.0


class StandInSpark:
    """What the agent reads from and does to its driver's Spark, as plain state."""

    def __init__(self):
        self.probe = Probe(FULL, max_executors=8)
        self.demand_now = 0
        self.executors_now: tuple[ExecutorFact, ...] = ()
        self.caps: list[int] = []
        self.reads = 0
        self.removals: dict[str, float] = {}  # executor id -> when its driver removed it

    def removed_at(self, executor_id: str) -> float | None:
        return self.removals.get(executor_id)

    def stopped(self) -> bool:
        return False

    def facts(self) -> SparkFacts:
        self.reads += 1
        return SparkFacts(self.demand_now, self.demand_now, len(self.executors_now),
                          self.executors_now)

    def pulse(self) -> tuple[int, int]:
        return self.demand_now, len(self.executors_now)

    def set_cap(self, cap: int) -> None:
        if not self.caps or self.caps[-1] != cap:
            self.caps.append(cap)

    def release_cap(self) -> None:
        pass

    def kill(self, executor_ids, force):
        return list(executor_ids)

    def decommission(self, executor_ids):
        return list(executor_ids)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("agent-protocol")
    config = {
        "server": {"state_dir": str(work / "state"), "cycle_ms": 50, "heartbeat_s": 0.2,
                   "agent_keepalive_s": KEEPALIVE_S},
        "cluster": {"backend": "memory", "workers": 1, "cores": 8, "memory": "16g"},
        "queues": [{"name": "root", "queues": [{"name": "notebooks"}]}],
        "defaults": {"queue": "root.notebooks"},
    }
    s = ServerProcess.start(config, work)
    try:
        yield s
    finally:
        s.stop()


def session(server) -> str:
    """A notebook session admitted (STARTING): its driver is the test's."""
    with httpx.Client(base_url=server.url) as c:
        app_id = c.post("/api/v1/sessions", json={"name": "nb"}).json()["id"]
        wait_until(lambda: c.get(f"/api/v1/apps/{app_id}").json()["state"] == "STARTING", 30,
                   "the session admitted")
    return app_id


def test_a_change_driven_agent_reports_changes_and_is_told_by_its_watch(server):
    spark = StandInSpark()
    app_id = session(server)
    agent = Agent(spark, JsonClient(server.url), app_id, heartbeat_s=0.2)
    agent.start()
    try:
        wait_until(lambda: agent.change_driven and agent.reports >= 2, 30,
                   "registered and the first report sent")
        assert spark.caps == [0]
        # Facts unchanged for more than a keep-alive: at most the keep-alives are sent --
        # an agent on the old protocol would have sent a heartbeat every 0.2 s.
        before = agent.reports
        window_s = KEEPALIVE_S * 1.5
        time.sleep(window_s)  # a measurement window, not a wait for a condition
        assert agent.reports - before <= window_s / KEEPALIVE_S + 1
        assert spark.reads >= window_s / 0.2 / 2  # it kept reading its facts all along

        # A job starts: the demand is reported once, the grant comes by the watch.
        reports, answered = agent.reports, agent.watch.answered
        spark.demand_now = 3
        wait_until(lambda: spark.caps[-1] == 3, 30, "the grant of 3 applied")
        assert agent.watch.answered > answered
        assert agent.reports - reports <= 2  # the change (and perhaps a keep-alive)

        # The executors come: one report of them; a kill reaches the agent by its watch.
        spark.executors_now = tuple(ExecutorFact(str(i), 1_763_744_400.0 + i, False)
                                    for i in range(3))
        wait_until(lambda: HTTP.get(f"{server.url}/api/v1/apps/{app_id}").json()["executors"]
                   == 3, 30, "the executors on the books")
        ended = threading.Event()
        agent.on_terminal = lambda state: ended.set()
        HTTP.post(f"{server.url}/api/v1/apps/{app_id}/kill")
        assert ended.wait(KEEPALIVE_S), "the kill did not come by the watch before a keep-alive"
    finally:
        agent.stop()


class OldServer(BaseHTTPRequestHandler):
    """Answers as a server before the watch did: no ``keepalive_s``, no version, no watch.
    With ``keepalive_s`` set, as a server whose watches never get through (a proxy between
    that cuts held requests: 502)."""

    beats: list[dict] = []
    keepalive_s: float | None = None

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/api/v1/agent/heartbeat":
            OldServer.beats.append(body)
        elif self.path == "/api/v1/agent/watch" and OldServer.keepalive_s:
            self.send_error(502)
            return
        elif self.path != "/api/v1/agent/register":
            self.send_error(404)
            return
        grant = 2 if any(b["demand"] for b in OldServer.beats) else 0
        answer = {"heartbeat_s": 0.2, "target": grant, "grant": grant, "state": "RUNNING",
                  "reclaim": []}
        if OldServer.keepalive_s:
            answer.update(keepalive_s=OldServer.keepalive_s, version=grant)
        out = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


@pytest.fixture
def old_server():
    OldServer.beats, OldServer.keepalive_s = [], None
    old = ThreadingHTTPServer(("127.0.0.1", 0), OldServer)
    threading.Thread(target=old.serve_forever, daemon=True).start()
    yield old
    old.shutdown()
    old.server_close()


def test_on_an_older_server_the_agent_heartbeats_as_before(old_server):
    old = old_server
    spark = StandInSpark()
    agent = Agent(spark, JsonClient(f"http://127.0.0.1:{old.server_port}"), "driver-old",
                  heartbeat_s=0.2)
    agent.start()
    try:
        wait_until(lambda: len(OldServer.beats) >= 5, 30, "five heartbeats")
        assert agent.watch is None  # never watched (the old server has no such route)
        assert all(b["demand"] == 0 for b in OldServer.beats)  # unchanged facts, sent anyway
        spark.demand_now = 2
        wait_until(lambda: spark.caps[-1] == 2, 30, "the grant of 2 from a heartbeat's answer")
    finally:
        agent.stop()


def test_while_its_watches_keep_failing_the_agent_heartbeats(old_server):
    OldServer.keepalive_s = 30.0
    spark = StandInSpark()
    agent = Agent(spark, JsonClient(f"http://127.0.0.1:{old_server.server_port}"),
                  "driver-cut", heartbeat_s=0.2)
    agent.start()
    try:
        wait_until(lambda: agent.watch is not None and agent.watch.failing, 30,
                   "the watch failing")
        beats = len(OldServer.beats)
        wait_until(lambda: len(OldServer.beats) >= beats + 5, 30,
                   "heartbeats again, though the keep-alive is 30 s")
        spark.demand_now = 2
        wait_until(lambda: spark.caps[-1] == 2, 30, "the grant of 2 from a heartbeat's answer")
    finally:
        agent.stop()


def test_reports_are_timed_and_a_stopped_context_sends_a_last_one(old_server):
    spark = StandInSpark()
    clock = [1_763_744_400.0]
    spark.executors_now = (ExecutorFact("1", 1_763_744_390.0, False),
                           ExecutorFact("2", 1_763_744_391.0, True),
                           ExecutorFact("3", 1_763_744_392.0, True))
    agent = Agent(spark, JsonClient(f"http://127.0.0.1:{old_server.server_port}"),
                  "driver-timed", heartbeat_s=0.2, clock=lambda: clock[0])
    agent.start()
    try:
        wait_until(lambda: any(b["executors"] for b in OldServer.beats), 30, "a report")
        first = next(b for b in OldServer.beats if b["executors"])
        assert (first["observed_at"], first["removed"]) == (clock[0], [])
        # 1 removed by its driver at a time its status store has, 2 with none yet
        spark.removals["1"] = 1_763_744_403.5
        clock[0] = 1_763_744_404.0
        spark.executors_now = spark.executors_now[2:]
        gone = wait_until(lambda: next((b for b in OldServer.beats if b["removed"]), None),
                          30, "a report of the executors gone")
        assert gone["observed_at"] == clock[0]
        assert gone["changed_after"] in (1_763_744_400.0, clock[0])  # its look before
        assert sorted(gone["removed"], key=lambda r: r["id"]) == [
            {"id": "1", "at": 1_763_744_403.5}, {"id": "2", "at": clock[0]}]
        assert [e["id"] for e in gone["executors"]] == ["3"]
        beats = len(OldServer.beats)
        agent.ended(1_763_744_406.0)  # SparkContext.stop was called then
        assert not agent.alive
        last = OldServer.beats[-1]
        assert len(OldServer.beats) > beats
        assert (last["executors"], last["observed_at"], last["demand"]) == (
            [], 1_763_744_406.0, 0)
    finally:
        agent.stop()


@pytest.mark.parametrize(("answer", "problem"), [
    # each was an AttributeError or OverflowError, which ended the agent's watch thread (it
    # retries a ValueError only) or reached the agent's loop as a Spark error
    pytest.param([], "answer: not a JSON object (list)", id="a-list"),
    pytest.param(None, "answer: not a JSON object (NoneType)", id="null"),
    pytest.param({"reclaim": [1]}, "reclaim order: not a JSON object (int)", id="order-a-number"),
    pytest.param({"reclaim": {"mode": "kill"}}, "reclaim: not a JSON list (dict)",
                 id="orders-an-object"),
    pytest.param({"grants": [1, 2]}, "grants: not a JSON object (list)", id="grants-a-list"),
    pytest.param({"target": float("inf")}, "target: inf is not a finite number",
                 id="infinite-target"),
    # were taken: a string's characters as executor ids to kill, NaN as when to wait
    pytest.param({"reclaim": [{"mode": "kill", "executor_ids": "12"}]},
                 "executor_ids: not a JSON list (str)", id="ids-a-string"),
    pytest.param({"heartbeat_s": float("nan")}, "heartbeat_s: nan is not a finite number",
                 id="nan-heartbeat"),
    pytest.param({"reclaim": [{"mode": "decommission", "deadline": float("nan")}]},
                 "deadline: nan is not a finite number", id="nan-deadline"),
])
def test_an_answer_the_agent_cannot_act_on_is_no_answer(answer, problem):
    """A ValueError naming the field: the agent and its watch ask again, as for a body that
    is not JSON at all (``transport.Unreachable``)."""
    from sessionsched.agent.protocol import Answer
    with pytest.raises(ValueError) as e:
        Answer.from_json(answer, 1.0)
    assert str(e.value) == problem


def test_an_answer_with_fields_left_out_takes_their_defaults():
    from sessionsched.agent.protocol import Answer
    answer = Answer.from_json({"target": 3, "grants": {"1": 2},
                               "reclaim": [{"mode": "kill", "executor_ids": [7, "8"]}]}, 1.5)
    assert (answer.heartbeat_s, answer.target, answer.grant, answer.grants, answer.keepalive_s,
            answer.reclaim[0].executor_ids) == (1.5, 3, 0, ((1, 2),), None, ("7", "8"))
