"""Each app's attempt behind several clusters (docs/operator/clusters.md, "Never twice"): how
many times it was placed, as committed. Its launch is tagged with it (a Spark property and the
driver's environment), a restart counts it on from the store, a failed commit takes the
uncommitted placement back, and an agent of an older attempt than its app's is told to stop
and not listened to. One cluster's launches carry no attempt."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

from fastapi.testclient import TestClient

from sessionsched.agent import attach
from sessionsched.agent.transport import JsonClient
from sessionsched.backends.federated import FederatedBackend
from sessionsched.config import ServerConfig
from sessionsched.engine import CapacityChanged, Submitted
from sessionsched.engine.clusters import ClusterSpec, LaunchUnavailable, OnCluster, Placed
from sessionsched.engine.clusters.served import ServedFederation
from sessionsched.intake import new_apps
from sessionsched.model import Resources
from sessionsched.server.app import create_app
from sessionsched.service.launch import ATTEMPT, ENV_ATTEMPT, build_launch
from tests.engine.engine_builders import app, one_queue
from tests.service.clusters.test_two_clusters import (
    CLUSTERS,
    QUEUES,
    Counting,
    Two,
    rest_submit,
    running,
    served,
)
from tests.support.server_helpers import make_config
from tests.support.stepped_service import Clock, Stepped


class Tagging(Counting):
    """A memory backend that keeps the attempt each launch was tagged with."""

    def __init__(self, cluster, launches: Counter, tags: dict):
        super().__init__(cluster, launches)
        self.tags = tags

    def launch(self, launch):
        self.tags[launch.app_id] = (launch.conf.get(ATTEMPT), launch.env.get(ENV_ATTEMPT))
        return super().launch(launch)


def tagged_served(state_dir, two: Two, tmp_path, clock: Clock, tags: dict):
    """``served`` over backends that keep each launch's attempt."""
    (tmp_path / "job.py").write_text("print('hello')\n")
    backend = FederatedBackend({n: Tagging(c, two.launches[n], tags)
                                for n, c in two.clusters.items()}, lambda _app_id: None)
    config = make_config(state_dir, queues=QUEUES, clusters=CLUSTERS)
    return create_app(config, backend, run_cycles=False, clock=clock)


def test_each_launch_is_tagged_with_its_attempt_and_a_restart_counts_on(state_dir, tmp_path):
    two, clock, tags = Two(cores_on_a=4), Clock(), {}
    with TestClient(tagged_served(state_dir, two, tmp_path, clock, tags)) as client:
        s = Stepped(client, clock, two.clusters["a"], tmp_path)
        ids = [rest_submit(s, f"app-{i}") for i in range(3)]
        where = running(s, ids)
        assert {s.service.engine.attempt_of(i) for i in ids} == {1}
    assert set(where.values()) == {"a", "b"}
    assert tags == dict.fromkeys(ids, ("1", "1"))  # in its Spark properties and environment
    with served(state_dir, two, tmp_path, clock) as s:  # a restart: adopted, attempts kept
        s.cycle(1.0)
        assert {i: s.service.engine.attempt_of(i) for i in ids} == dict.fromkeys(ids, 1)
    assert two.launched() == dict.fromkeys(ids, 1)


def test_a_failed_commit_takes_back_the_placement_and_the_move_it_did_not_commit():
    served_fed = ServedFederation(one_queue(), [ClusterSpec("a"), ClusterSpec("b")],
                                  driver_slots=None)
    served_fed.step(0.0, [OnCluster(n, CapacityChanged(Resources(4, 4 * 4096))) for n in "ab"])
    x = app("x").in_cluster(1).executor(3).min(1).max(1)
    out = served_fed.step(1.0, [Submitted(x.spec())])
    assert [d for d in out if isinstance(d, Placed)] == [Placed("x", "a", 1)]
    assert served_fed.attempt_of("x") == 1
    fresh = served_fed.fresh()  # that step's commit failed: x is queued again, never placed
    assert fresh.attempt_of("x") is None
    out = fresh.step(2.0, [OnCluster(n, CapacityChanged(Resources(4, 4 * 4096))) for n in "ab"]
                     + [Submitted(x.spec())])
    assert [d for d in out if isinstance(d, Placed)] == [Placed("x", "a", 1)]  # still its first
    # Moved to b (its launch on a started nothing) and placed there; that commit fails too:
    # x is back on a, where the store has it, at its first attempt.
    out = fresh.step(3.0, [LaunchUnavailable("x", "a's master cannot be reached")])
    assert [d for d in out if isinstance(d, Placed)] == [Placed("x", "b", 2)]
    again = fresh.fresh()
    assert again.recorded["x"] == "a" and again.attempt_of("x") == 1


def test_an_agent_of_an_older_attempt_is_told_to_stop_and_not_listened_to(state_dir, tmp_path):
    two = Two(cores_on_a=16)
    with served(state_dir, two, tmp_path, Clock()) as s:
        [app_id] = ids = [rest_submit(s, "moved")]
        running(s, ids)
        # Its own agent (attempt 1, or none said) is answered as ever.
        for attempt in ({"attempt": 1}, {}):
            r = s.client.post("/api/v1/agent/register", json={"app_id": app_id, **attempt})
            assert r.status_code == 200 and r.json()["state"] == "RUNNING", r.text
        s.service.engine.fed.attempts[app_id] = 2  # as if it had been placed again since
        said = []
        for path, body in (("register", {"spark_app_id": "app-old-0001"}),
                           ("heartbeat", {"demand": 9, "executors": [{"id": "9"}]}),
                           ("watch", {"version": 0})):
            r = s.client.post(f"/api/v1/agent/{path}",
                              json={"app_id": app_id, "attempt": 1, **body})
            assert r.status_code == 200, r.text
            said.append(r.json()["state"])
        assert said == ["KILLED"] * 3  # ended, as that driver sees it: it stops
        s.cycle(1.0)
        now = s.app(app_id)
        assert now["state"] == "RUNNING" and now["spark_app_id"] != "app-old-0001"
        assert now["demand"] != 9  # nothing it said was taken
        r = s.client.post("/api/v1/agent/heartbeat", json={"app_id": app_id, "attempt": 2})
        assert r.json()["state"] == "RUNNING"  # the current attempt's agent
        stops = [e["detail"] for e in s.events(app_id) if "told to stop" in e["detail"]]
    assert stops == ["agent of attempt 1 told to stop its driver: the app runs as attempt 2"]


def test_one_clusters_launches_carry_no_attempt(tmp_path):
    (tmp_path / "job.py").write_text("")
    defaults = new_apps.Defaults(root=ServerConfig().queue_tree(), queue="root.default")
    sub = new_apps.from_argv(["job.py"], str(tmp_path), {}, {}, None, None, "etl", defaults)
    sub = replace(sub, spec=replace(sub.spec, app_id="driver-20261129000000-0001"))
    plain = build_launch(sub, "http://127.0.0.1:6066", tmp_path / "logs")
    assert ATTEMPT not in plain.conf and ENV_ATTEMPT not in plain.env
    second = build_launch(sub, "http://127.0.0.1:6066", tmp_path / "logs", attempt=2)
    assert (second.conf[ATTEMPT], second.env[ENV_ATTEMPT]) == ("2", "2")


def test_the_agent_says_its_launchs_attempt_in_every_report(monkeypatch):
    monkeypatch.setenv(attach.ENV_ATTEMPT, "3")
    assert attach.attempt_stamp() == {"attempt": 3}
    for unusable in ("", "0", "x"):
        monkeypatch.setenv(attach.ENV_ATTEMPT, unusable)
        assert attach.attempt_stamp() == {}
    sent = []

    class Answer:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return b"{}"

    def urlopen(req, timeout, context):
        sent.append(json.loads(req.data))
        return Answer()

    monkeypatch.setattr("urllib.request.urlopen", urlopen)
    JsonClient("http://127.0.0.1:1", stamp={"attempt": 3}).post("/x", {"app_id": "a"})
    JsonClient("http://127.0.0.1:1").post("/x", {"app_id": "a"})
    assert sent == [{"app_id": "a", "attempt": 3}, {"app_id": "a"}]
