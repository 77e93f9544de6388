"""Two memory clusters behind one server, stepped by hand (docs/operator/clusters.md): each
app placed on one cluster and launched there once, a submission's and a queue's clusters
honoured, an unknown cluster refused, a queue's ``max_cores`` and ``max_resources`` held over
both clusters, and a restart that adopts each running app on the cluster its launch's commit
recorded, launching nothing again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.base import BackendError
from sessionsched.backends.federated import FederatedBackend
from sessionsched.backends.memory import MemoryBackend, MemoryCluster
from sessionsched.engine.clusters.served import ServedFederation
from sessionsched.model import Resources
from sessionsched.server.app import create_app
from tests.doors.spark_rest.test_spark_rest import create_body
from tests.support.server_helpers import make_config, rows
from tests.support.stepped_service import START_S, Clock, Stepped

CLUSTERS = [{"name": "a", "backend": "memory"}, {"name": "b", "backend": "memory"}]
QUEUES = [{"name": "root", "queues": [{"name": "default"},
                                      {"name": "onlya", "clusters": ["a"]}]}]
TINY = {"spark.driver.cores": "1", "spark.executor.cores": "1", "spark.driver.memory": "512m",
        "spark.executor.memory": "512m", "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.maxExecutors": "1", "spark.sessionsched.memory.work": "600"}


class Counting(MemoryBackend):
    """A memory backend that counts its launches per app id."""

    def __init__(self, cluster: MemoryCluster, launches: Counter):
        super().__init__(cluster)
        self.launches = launches

    def launch(self, launch):
        self.launches[launch.app_id] += 1
        return super().launch(launch)


class Two:
    """The clusters (they outlive a server, as real ones do) and each one's launches."""

    def __init__(self, cores_on_a: int = 4):
        self.clusters = {
            name: MemoryCluster(Resources(cores, cores * 2048), driver_slots=8,
                                driver_start_s=START_S, executor_start_s=START_S, work_s=600)
            for name, cores in (("a", cores_on_a), ("b", 16))}
        self.launches = {name: Counter() for name in self.clusters}

    def launched(self) -> Counter:
        """Launches per app id over both clusters."""
        return self.launches["a"] + self.launches["b"]


@contextmanager
def served(state_dir: Path, two: Two, cwd: Path, clock: Clock,
           queues: list = QUEUES) -> Iterator[Stepped]:
    (cwd / "job.py").write_text("print('hello')\n")
    backend = FederatedBackend({n: Counting(c, two.launches[n]) for n, c in two.clusters.items()},
                               lambda _app_id: None)
    config = make_config(state_dir, queues=queues, clusters=CLUSTERS)
    app = create_app(config, backend, run_cycles=False, clock=clock)
    with TestClient(app) as client:
        yield Stepped(client, clock, two.clusters["a"], cwd)


def rest_submit(s: Stepped, name: str, **props: str) -> str:
    r = s.client.post("/v1/submissions/create",
                      json=create_body(props={**TINY, "spark.app.name": name, **props}))
    assert r.status_code == 200 and r.json()["success"], r.text
    return r.json()["submissionId"]


def running(s: Stepped, ids: list[str]) -> dict[str, str]:
    """Cycles until every app runs; app id -> its cluster."""
    s.until_true(lambda: all(s.app(i)["state"] == "RUNNING" for i in ids), "all running")
    return {i: s.app(i)["cluster"] for i in ids}


def test_a_burst_spills_over_each_app_launched_once_on_one_cluster(state_dir, tmp_path):
    two = Two(cores_on_a=4)
    with served(state_dir, two, tmp_path, Clock()) as s:
        ids = [rest_submit(s, f"burst-{i}") for i in range(5)]
        where = running(s, ids)
        for _ in range(10):
            s.cycle(1.0)
    # a has room for two (a driver and an executor each), b for the rest
    assert Counter(where.values()) == {"a": 2, "b": 3}
    assert two.launched() == dict.fromkeys(ids, 1)
    assert {i: c for c, n in two.launches.items() for i in n} == where


def test_an_app_asking_for_b_runs_on_b_and_a_queue_limited_to_a_stays_on_a(state_dir,
                                                                             tmp_path):
    two = Two(cores_on_a=16)
    with served(state_dir, two, tmp_path, Clock()) as s:
        on_b = rest_submit(s, "wants-b", **{"spark.sessionsched.cluster": "b"})
        limited = [rest_submit(s, f"limited-{i}", **{"spark.sessionsched.queue": "onlya"})
                   for i in range(3)]
        plain = rest_submit(s, "plain")
        where = running(s, [on_b, *limited, plain])
        listed = {a["id"]: a for a in s.client.get("/api/v1/apps").json()}
        queued = rest_submit(s, "not stepped yet")
        assert s.app(queued)["state"] == "ACCEPTED" and "cluster" not in s.app(queued)
    assert where == {on_b: "b", **dict.fromkeys(limited, "a"), plain: "a"}  # spill: a first
    assert listed[on_b]["cluster"] == "b"
    assert two.launched() == dict.fromkeys([on_b, *limited, plain], 1)


def test_an_unknown_cluster_is_a_400_naming_it_and_nothing_is_stored(state_dir, tmp_path):
    two = Two()
    with served(state_dir, two, tmp_path, Clock()) as s:
        for conf, said in ((["--conf=spark.sessionsched.cluster=c"],
                            "spark.sessionsched.cluster=c: unknown cluster 'c' (clusters: a, b)"),
                           (["--conf=spark.sessionsched.cluster=b"],
                            "it asked for b; its queue root.onlya may use a")):
            body = {"argv": [*conf, "job.py"], "cwd": str(tmp_path), "queue": "onlya"}
            r = s.client.post("/api/v1/apps", json=body)
            assert r.status_code == 400, r.text
            assert said in r.text
        assert s.client.get("/api/v1/apps").json() == []


def test_a_restart_adopts_each_running_app_on_its_recorded_cluster_and_launches_nothing(
        state_dir, tmp_path):
    two, clock = Two(cores_on_a=4), Clock()
    with served(state_dir, two, tmp_path, clock) as s:
        ids = [rest_submit(s, f"app-{i}") for i in range(4)]
        where = running(s, ids)
    recorded = dict(rows(state_dir / "sessionsched.db", "SELECT id, cluster FROM apps"))
    assert recorded == where and set(where.values()) == {"a", "b"}
    with served(state_dir, two, tmp_path, clock) as s:
        for _ in range(10):
            s.cycle(1.0)
        after = {i: (s.app(i)["state"], s.app(i)["cluster"]) for i in ids}
        events = {i: [e["kind"] for e in s.events(i)] for i in ids}
    assert after == {i: ("RUNNING", c) for i, c in where.items()}
    assert two.launched() == dict.fromkeys(ids, 1)
    assert all(kinds.count("placed") == 1 and "adopted" in kinds for kinds in events.values())


def test_a_failed_commit_puts_each_app_back_on_its_cluster_and_launches_nothing_twice(
        state_dir, tmp_path, monkeypatch, caplog):
    two = Two(cores_on_a=4)
    with served(state_dir, two, tmp_path, Clock()) as s:
        ids = [rest_submit(s, f"app-{i}") for i in range(3)]
        where = running(s, ids)
        late = rest_submit(s, "late")
        service = s.service
        parts = service._cycle.p  # what the cycle commits with
        write = parts.write

        def fails_once(*args, **kwargs):
            monkeypatch.setattr(parts, "write", write)
            failed: Future = Future()
            failed.set_exception(OSError("disk full"))
            return failed

        monkeypatch.setattr(parts, "write", fails_once)
        s.cycle(1.0)  # steps (and places) the late app; its commit fails: rewound
        assert "could not record the cycle's decisions" in caplog.text
        assert isinstance(service.engine, ServedFederation)
        assert s.app(late)["state"] == "ACCEPTED"  # its placement was not committed
        where |= running(s, [late])
        assert service.engine.check() == []
        after = {i: s.app(i)["cluster"] for i in ids}
    assert after == {i: where[i] for i in ids}
    assert two.launched() == dict.fromkeys([*ids, late], 1)


class Flaky(Counting):
    """A memory cluster's backend that can be cut off (``down``)."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise BackendError("cluster b cannot be reached")

    def poll(self, now):
        self._check()
        return super().poll(now)

    def capacity(self):
        self._check()
        return super().capacity()


def test_while_b_is_unreachable_apps_run_on_a_and_one_asking_for_b_waits_for_it(state_dir,
                                                                                tmp_path):
    two, clock = Two(cores_on_a=16), Clock()
    (tmp_path / "job.py").write_text("print('hello')\n")
    b = Flaky(two.clusters["b"], two.launches["b"])
    backend = FederatedBackend({"a": Counting(two.clusters["a"], two.launches["a"]), "b": b},
                               lambda _app_id: None)
    app = create_app(make_config(state_dir, queues=QUEUES, clusters=CLUSTERS), backend,
                     run_cycles=False, clock=clock)
    with TestClient(app) as client:
        s = Stepped(client, clock, two.clusters["a"], tmp_path)
        s.cycle(1.0)
        b.down = True
        s.cycle(1.0)
        wants_b = rest_submit(s, "wants-b", **{"spark.sessionsched.cluster": "b"})
        others = [rest_submit(s, f"other-{i}") for i in range(2)]
        assert set(running(s, others).values()) == {"a"}
        assert s.client.get("/api/v1/health").json()["status"] == "ok"  # a answers
        assert s.app(wants_b)["state"] == "ACCEPTED"
        b.down = False
        assert running(s, [wants_b]) == {wants_b: "b"}
    assert two.launched() == dict.fromkeys([wants_b, *others], 1)


def test_the_cluster_row_names_each_cluster_and_whether_it_answers(state_dir, tmp_path):
    two, clock = Two(cores_on_a=4), Clock()
    (tmp_path / "job.py").write_text("print('hello')\n")
    b = Flaky(two.clusters["b"], two.launches["b"])
    backend = FederatedBackend({"a": Counting(two.clusters["a"], two.launches["a"]), "b": b},
                               lambda _app_id: None)
    app = create_app(make_config(state_dir, queues=QUEUES, clusters=CLUSTERS), backend,
                     run_cycles=False, clock=clock)
    with TestClient(app) as client:
        s = Stepped(client, clock, two.clusters["a"], tmp_path)
        running(s, [rest_submit(s, f"app-{i}") for i in range(3)])
        row = s.client.get("/api/v1/cluster").json()
        b.down = True
        s.cycle(1.0)
        down = s.client.get("/api/v1/cluster").json()
        metrics = s.client.get("/metrics").text
    assert row["cores"] == 20
    assert [(c["name"], c["reachable"], c["cores"], c["running"]) for c in row["clusters"]] == [
        ("a", True, 4, 2), ("b", True, 16, 1)]
    assert [(c["name"], c["reachable"]) for c in down["clusters"]] == [("a", True), ("b", False)]
    assert 'sessionsched_clusters_reachable{cluster="b"} 0.0' in metrics
    assert 'sessionsched_clusters_running_apps{cluster="a"} 2.0' in metrics


def test_the_config_alone_builds_one_memory_backend_per_cluster(state_dir, tmp_path):
    """``clusters:`` as ``sessionsched serve`` reads it: no backend handed in."""
    (tmp_path / "job.py").write_text("print('hello')\n")
    clusters = [{"name": "a", "backend": "memory", "cores": 2, "memory": "4g",
                 "driver_start_s": 1, "executor_start_s": 1, "work_s": 600},
                {"name": "b", "backend": "memory", "cores": 8, "memory": "16g",
                 "driver_start_s": 1, "executor_start_s": 1, "work_s": 600}]
    clock = Clock()
    app = create_app(make_config(state_dir, queues=QUEUES, clusters=clusters),
                     run_cycles=False, clock=clock)
    with TestClient(app) as client:
        s = Stepped(client, clock, None, tmp_path)
        ids = [rest_submit(s, f"app-{i}") for i in range(3)]
        where = running(s, ids)
        backend = s.service.backend
    assert isinstance(backend, FederatedBackend) and list(backend.backends) == ["a", "b"]
    assert sorted(where.values()) == ["a", "b", "b"]  # a has room for one


def test_decayed_usage_is_summed_over_the_clusters_and_kept_across_a_restart(state_dir,
                                                                              tmp_path):
    """Apps of root.default on a and on b for a minute: the queue's decayed usage is both
    clusters' together, stored per cluster, and the same after a restart."""
    decaying = [{**QUEUES[0], "usage_half_life": 600}]
    two, clock = Two(cores_on_a=4), Clock()

    def decayed(s: Stepped) -> float:
        rows = {q["name"]: q for q in s.client.get("/api/v1/queues").json()}
        return rows["root.default"]["decayed_cores"]

    with served(state_dir, two, tmp_path, clock, decaying) as s:
        ids = [rest_submit(s, f"app-{i}") for i in range(4)]
        assert set(running(s, ids).values()) == {"a", "b"}
        for _ in range(60):
            s.cycle(1.0)
        before = decayed(s)
        engines = s.service.engine.fed.engines
        own = {n: e.books.decay.read(clock.now).queues.get("root.default") for n, e in
               engines.items()}
    stored = {q for (q,) in rows(state_dir / "sessionsched.db",
                                 "SELECT queue FROM decayed_usage WHERE kind = 'queue'")}
    assert {"root.default@a", "root.default@b"} <= stored
    assert before > 0 and own["a"] == pytest.approx(own["b"]) == pytest.approx(before)
    with served(state_dir, two, tmp_path, clock, decaying) as s:
        s.cycle(0.0)  # the first cycle reads the restored books
        assert decayed(s) == pytest.approx(before, rel=0.01)


def test_a_queues_max_cores_holds_over_both_clusters_and_is_shared_between_them(state_dir,
                                                                               tmp_path):
    """root.capped may hold 4 executor cores over both clusters: an elastic app on a and one
    on b, each able to use 4, hold 2 each (alone on a cluster, either would hold 4)."""
    queues = [{"name": "root", "queues": [{"name": "default"},
                                          {"name": "capped", "max_cores": 4}]}]
    elastic = {"spark.sessionsched.queue": "capped", "spark.dynamicAllocation.minExecutors": "0",
               "spark.dynamicAllocation.maxExecutors": "4",
               "spark.sessionsched.memory.work": "8x600"}  # a stage of 8 long tasks
    two = Two(cores_on_a=16)
    with served(state_dir, two, tmp_path, Clock(), queues=queues) as s:
        on_a = rest_submit(s, "on-a", **elastic, **{"spark.sessionsched.cluster": "a"})
        s.until_true(lambda: s.app(on_a)["executors"] == 4, "a's app alone holds 4")
        on_b = rest_submit(s, "on-b", **elastic, **{"spark.sessionsched.cluster": "b"})

        def shared() -> bool:
            held = s.app(on_a)["executors"], s.app(on_b)["executors"]
            assert sum(held) <= 4 + 2, held  # b's share granted while a's 2 are reclaimed
            return held == (2, 2)

        s.until_true(shared, "2 and 2")
        for _ in range(5):
            s.cycle(1.0)
            assert (s.app(on_a)["executors"], s.app(on_b)["executors"]) == (2, 2)
        [capped] = [q for q in s.client.get("/api/v1/queues").json() if q["name"] == "root.capped"]
        assert capped["executor_cores"] == 4


def test_a_queues_max_resources_holds_over_both_clusters(state_dir, tmp_path):
    """root.gpus may hold 4 GPUs over both clusters, each of which has 4: an elastic GPU app
    on a and one on b, each able to use 4 executors of 1 GPU, hold 2 each."""
    queues = [{"name": "root", "queues": [{"name": "default"},
                                          {"name": "gpus", "max_resources": {"gpu": 4}}]}]
    elastic = {"spark.sessionsched.queue": "gpus", "spark.dynamicAllocation.minExecutors": "0",
               "spark.dynamicAllocation.maxExecutors": "4",
               "spark.executor.resource.gpu.amount": "1",
               "spark.task.resource.gpu.amount": "1",
               "spark.sessionsched.memory.work": "8x600"}
    two = Two()
    size = Resources(16, 16 * 2048, (("gpu", 4),))  # one worker: its GPUs are seen by name
    two.clusters = {n: MemoryCluster(size, driver_slots=8, driver_start_s=START_S,
                                     executor_start_s=START_S, work_s=600, sizes=(size,))
                    for n in "ab"}
    with served(state_dir, two, tmp_path, Clock(), queues=queues) as s:
        on_a = rest_submit(s, "on-a", **elastic, **{"spark.sessionsched.cluster": "a"})
        s.until_true(lambda: s.app(on_a)["executors"] == 4, "a's app alone holds 4 GPUs")
        on_b = rest_submit(s, "on-b", **elastic, **{"spark.sessionsched.cluster": "b"})
        s.until_true(lambda: (s.app(on_a)["executors"], s.app(on_b)["executors"]) == (2, 2),
                     "2 and 2")
        for _ in range(5):
            s.cycle(1.0)
            assert (s.app(on_a)["executors"], s.app(on_b)["executors"]) == (2, 2)
        assert {s.app(i)["cluster"] for i in (on_a, on_b)} == {"a", "b"}


def test_an_app_that_may_use_only_the_full_cluster_is_estimated_to_wait_for_it(state_dir,
                                                                                 tmp_path):
    """a (4 cores) runs two apps of root.onlya, 2 cores each, for 600 s; b (16) is idle. A
    third of root.onlya waits for a: its estimate is when one of them ends, not now (with the
    clusters taken as one, 16 of 20 cores free, it was now)."""
    two = Two(cores_on_a=4)
    with served(state_dir, two, tmp_path, Clock()) as s:
        onlya = {"spark.sessionsched.queue": "onlya"}
        first = [rest_submit(s, f"first-{i}", **onlya) for i in range(2)]
        running(s, first)
        waiting = rest_submit(s, "third", **onlya)
        s.cycle(1.0)
        assert s.app(waiting)["state"] == "ACCEPTED"
        s.service.estimator.refresh(force=True)
        starts_in = (datetime.fromisoformat(s.app(waiting)["estimated_start"]).timestamp()
                     - s.clock.now)
    assert 500 <= starts_in <= 700, starts_in
