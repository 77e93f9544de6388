"""Behind two memory clusters every read names an app's cluster (docs/operator/clusters.md,
"Seen everywhere"): the native app, Spark REST status, Livy's ``appInfo``, ``/health`` (each
cluster's reachability), ``submit --dry-run`` (the cluster it would start on), and a
submission that fits no cluster it may use is refused naming each. Cluster a: one worker of 4
cores/8192 MiB; b: one of 16 cores/32768 MiB (``test_two_clusters.Two``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.federated import FederatedBackend
from sessionsched.backends.memory import MemoryCluster
from sessionsched.commands.dry_run import dry_run_lines
from sessionsched.model import Resources
from sessionsched.server.app import create_app
from tests.doors.spark_rest.test_spark_rest import create_body
from tests.service.clusters.test_two_clusters import (
    CLUSTERS,
    QUEUES,
    TINY,
    Counting,
    Flaky,
    Two,
    rest_submit,
    running,
    served,
)
from tests.support.server_helpers import make_config
from tests.support.stepped_service import START_S, Clock, Stepped, stepped_service

A_WORKER = "1 worker of 4 cores/8192 MiB"
B_WORKER = "1 worker of 16 cores/32768 MiB"


@contextmanager
def flaky_b(state_dir, tmp_path, queues=QUEUES) -> Iterator[tuple[Stepped, Flaky]]:
    """Two clusters whose b can be cut off (``Flaky.down``), stepped by hand."""
    (tmp_path / "job.py").write_text("print('hello')\n")
    two = Two(cores_on_a=4)
    b = Flaky(two.clusters["b"], two.launches["b"])
    backend = FederatedBackend({"a": Counting(two.clusters["a"], two.launches["a"]), "b": b},
                               lambda _app_id: None)
    clock = Clock()
    app = create_app(make_config(state_dir, queues=queues, clusters=CLUSTERS), backend,
                     run_cycles=False, clock=clock)
    with TestClient(app) as client:
        s = Stepped(client, clock, two.clusters["a"], tmp_path)
        s.cycle(1.0)  # each cluster's workers read
        yield s, b


def native_body(tmp_path, queue: str | None = None, **props: str) -> dict:
    conf = {**TINY, **props}
    app = ["job.py"]
    if conf.get("spark.submit.deployMode") == "cluster":  # a JVM app's driver on a worker
        (tmp_path / "job.jar").write_bytes(b"PK")
        app = ["--class", "Main", "job.jar"]
    body = {"argv": [*(f"--conf={k}={v}" for k, v in conf.items()), *app],
            "cwd": str(tmp_path), "name": "probe"}
    return {**body, "queue": queue} if queue else body


def test_every_door_names_the_cluster_an_app_was_placed_on(state_dir, tmp_path):
    with served(state_dir, Two(cores_on_a=4), tmp_path, Clock()) as s:
        on_a = rest_submit(s, "on-a", **{"spark.sessionsched.cluster": "a"})
        on_b = rest_submit(s, "on-b", **{"spark.sessionsched.cluster": "b"})
        batch = s.client.post("/batches", json={
            "file": str(tmp_path / "job.py"), "conf": {**TINY, "spark.sessionsched.cluster": "b"}})
        assert batch.status_code == 201, batch.text
        queued = s.client.get(f"/batches/{batch.json()['id']}").json()
        assert "cluster" not in queued["appInfo"]  # not placed yet
        livy = batch.json()["submissionId"]
        running(s, [on_a, on_b, livy])
        reads = {
            "native": lambda i: s.app(i).get("cluster"),
            "spark rest": lambda i: s.client.get(f"/v1/submissions/status/{i}").json()
            .get("cluster"),
            "listed": lambda i: next(a for a in s.client.get("/api/v1/apps").json()
                                     if a["id"] == i).get("cluster"),
        }
        seen = {door: [read(i) for i in (on_a, on_b, livy)] for door, read in reads.items()}
        seen["livy"] = [s.client.get(f"/batches/{batch.json()['id']}").json()["appInfo"]
                        .get("cluster")]
    assert seen == {"native": ["a", "b", "b"], "spark rest": ["a", "b", "b"],
                    "listed": ["a", "b", "b"], "livy": ["b"]}


def test_health_lists_each_cluster_and_whether_it_answers(state_dir, tmp_path):
    with flaky_b(state_dir, tmp_path) as (s, b):
        up = s.client.get("/api/v1/health").json()
        b.down = True
        s.cycle(1.0)
        down = s.client.get("/api/v1/health").json()
    assert up["clusters"] == [
        {"name": "a", "reachable": True, "cores": 4, "memory_mib": 8192},
        {"name": "b", "reachable": True, "cores": 16, "memory_mib": 32768}]
    assert [(c["name"], c["reachable"]) for c in down["clusters"]] == [("a", True),
                                                                         ("b", False)]
    assert (up["status"], down["status"]) == ("ok", "ok")  # a answers: as before


NEVER = [  # (queue, properties, the refusal's line)
    (None, {"spark.executor.cores": "20"},
     f"never fits: on no cluster it may use: a: an executor of 20 cores/512 MiB fits no worker"
     f" ({A_WORKER}); b: an executor of 20 cores/512 MiB fits no worker ({B_WORKER})"),
    ("onlya", {"spark.executor.cores": "8"},
     "never fits: on no cluster it may use: a: an executor of 8 cores/512 MiB fits no worker"
     f" ({A_WORKER})"),
    (None, {"spark.executor.cores": "8", "spark.sessionsched.cluster": "a"},
     "never fits: on no cluster it may use: a: an executor of 8 cores/512 MiB fits no worker"
     f" ({A_WORKER})"),
    (None, {"spark.driver.memory": "40g", "spark.submit.deployMode": "cluster"},
     "never fits: on no cluster it may use: a: the driver of 1 cores/40960 MiB fits no worker"
     f" ({A_WORKER}); b: the driver of 1 cores/40960 MiB fits no worker ({B_WORKER})"),
]


@pytest.mark.parametrize(("queue", "props", "line"), NEVER,
                         ids=["larger than both", "a queue limited to a", "asking for a",
                              "driver larger than both"])
def test_an_app_that_fits_no_cluster_it_may_use_is_refused_naming_each(
        state_dir, tmp_path, queue, props, line):
    with served(state_dir, Two(cores_on_a=4), tmp_path, Clock()) as s:
        s.cycle(1.0)  # each cluster's workers read
        r = s.client.post("/api/v1/apps", json=native_body(tmp_path, queue, **props))
        dry = s.client.post("/api/v1/apps/dry-run", json=native_body(tmp_path, queue, **props))
        assert s.client.get("/api/v1/apps").json() == []
    assert (r.status_code, r.json()["detail"]) == (400, line)
    assert dry_run_lines(dry.json()) == [f"fits: no - {line.removeprefix('never fits: ')}"]


def test_an_app_larger_than_a_but_that_fits_b_is_accepted_and_runs_on_b(state_dir, tmp_path):
    with served(state_dir, Two(cores_on_a=4), tmp_path, Clock()) as s:
        s.cycle(1.0)
        r = s.client.post("/api/v1/apps", json=native_body(tmp_path, **{
            "spark.executor.cores": "8"}))
        assert r.status_code == 201, r.text
        assert running(s, [r.json()["id"]]) == {r.json()["id"]: "b"}


def test_dry_run_names_the_first_cluster_with_room_now_else_where_it_would_start(
        state_dir, tmp_path):
    with served(state_dir, Two(cores_on_a=4), tmp_path, Clock()) as s:
        s.cycle(1.0)

        def dry(queue=None, **props):
            r = s.client.post("/api/v1/apps/dry-run", json=native_body(tmp_path, queue, **props))
            assert r.status_code == 200, r.text
            return r.json()

        empty = {"plain": dry(), "8-core executors": dry(**{"spark.executor.cores": "8"}),
                 "asks for b": dry(**{"spark.sessionsched.cluster": "b"}),
                 "queue limited to a": dry("onlya")}
        # fill both clusters: a driver and an executor of 1 core each per app
        full = [rest_submit(s, f"fill-{i}", **{"spark.executor.cores": "3"}) for i in range(5)]
        running(s, full)
        busy = dry(**{"spark.executor.cores": "3"})
    assert {k: (a.get("cluster"), a.get("clusters")) for k, a in empty.items()} == {
        "plain": ("a", ["a", "b"]), "8-core executors": ("b", ["a", "b"]),
        "asks for b": ("b", ["b"]), "queue limited to a": ("a", ["a"])}
    assert dry_run_lines(empty["plain"])[:2] == ["fits: yes", "cluster: a"]
    # Both full: no room now; it starts where the forward run over both clusters starts it,
    # as the fill apps end (their lengths unknown: the default run's).
    assert busy["clusters"] == ["a", "b"] and busy["cluster"] in ("a", "b")
    later = "" if busy["position"] is None else " (once it can start there)"
    assert dry_run_lines(busy)[:2] == ["fits: yes", f"cluster: {busy['cluster']}{later}"]


def test_usage_by_cluster_adds_up_each_app_on_the_cluster_it_was_placed_on(state_dir,
                                                                           tmp_path):
    with served(state_dir, Two(cores_on_a=4), tmp_path, Clock()) as s:
        placed = {rest_submit(s, "on-a", **{"spark.sessionsched.cluster": "a"}): "a",
                  rest_submit(s, "on-b-1", **{"spark.sessionsched.cluster": "b"}): "b",
                  rest_submit(s, "on-b-2", **{"spark.sessionsched.cluster": "b"}): "b"}
        running(s, list(placed))
        for _ in range(5):
            s.cycle(1.0)
        waiting = rest_submit(s, "never placed")
        s.clock.now += 1.0  # in the window, not stepped: not placed
        by_app = s.client.get("/api/v1/usage", params={"by": "app"}).json()
        by_cluster = s.client.get("/api/v1/usage", params={"by": "cluster"}).json()
    assert {line["app"]: line.get("cluster") for line in by_app} == {**placed, waiting: None}
    assert [(line["cluster"], line["apps"]) for line in by_cluster] == [
        ("-", 1), ("a", 1), ("b", 2)]
    held = {line["cluster"]: line["held_core_s"] for line in by_cluster}
    assert held["a"] > 0 and held["b"] > held["a"]  # b's two apps against a's one


def test_with_one_cluster_the_reads_are_as_they_were(state_dir, tmp_path):
    one = MemoryCluster(Resources(8, 16384), driver_slots=8, driver_start_s=START_S,
                        executor_start_s=START_S, work_s=600)
    with stepped_service(state_dir, one, tmp_path, Clock(),
                         [{"name": "root", "queues": [{"name": "default"}]}]) as s:
        app_id = rest_submit(s, "one")
        s.until(app_id, "RUNNING")
        s.cycle(1.0)
        health = s.client.get("/api/v1/health").json()
        status = s.client.get(f"/v1/submissions/status/{app_id}").json()
        dry = s.client.post("/api/v1/apps/dry-run", json=native_body(tmp_path)).json()
        by_app = s.client.get("/api/v1/usage", params={"by": "app"}).json()
        by_cluster = s.client.get("/api/v1/usage", params={"by": "cluster"}).json()
    assert "clusters" not in health and "cluster" not in status
    assert "cluster" not in dry and "clusters" not in dry
    assert "cluster" not in by_app[0]
    assert [(line["cluster"], line["apps"]) for line in by_cluster] == [("default", 1)]


LARGER_THAN_BOTH = {**TINY, "spark.executor.cores": "20"}
BOTH_SAY = (f"a: an executor of 20 cores/512 MiB fits no worker ({A_WORKER}); b: an executor"
            f" of 20 cores/512 MiB fits no worker ({B_WORKER})")


def test_every_door_refuses_an_app_that_fits_no_cluster_naming_each(state_dir, tmp_path):
    with served(state_dir, Two(cores_on_a=4), tmp_path, Clock()) as s:
        s.cycle(1.0)
        rest = s.client.post("/v1/submissions/create", json=create_body(
            props={**LARGER_THAN_BOTH, "spark.app.name": "big"}))
        livy = s.client.post("/batches", json={"file": str(tmp_path / "job.py"),
                                               "conf": LARGER_THAN_BOTH})
        native = s.client.post("/api/v1/apps", json=native_body(
            tmp_path, **{"spark.executor.cores": "20"}))
        stored = s.client.get("/api/v1/apps").json()
    answers = {"spark rest": (rest.json()["success"], rest.json()["message"]),
               "livy": (livy.status_code, livy.json()["msg"]),
               "native": (native.status_code, native.json()["detail"])}
    assert answers == {"spark rest": (False, f"never fits: on no cluster it may use: {BOTH_SAY}"),
                       "livy": (400, f"never fits: on no cluster it may use: {BOTH_SAY}"),
                       "native": (400, f"never fits: on no cluster it may use: {BOTH_SAY}")}
    assert stored == []


def test_while_a_cluster_it_may_use_is_unreachable_it_is_accepted_and_queues(state_dir,
                                                                            tmp_path):
    """b cannot be asked: the app might fit it, so it waits for b as with one cluster."""
    with flaky_b(state_dir, tmp_path) as (s, b):
        b.down = True
        s.cycle(1.0)
        r = s.client.post("/api/v1/apps", json=native_body(tmp_path, **{
            "spark.executor.cores": "8"}))
        dry = s.client.post("/api/v1/apps/dry-run", json=native_body(tmp_path, **{
            "spark.executor.cores": "8"})).json()
        assert r.status_code == 201, r.text
        s.cycle(1.0)
        waits = s.app(r.json()["id"])["state"]
        b.down = False
        placed = running(s, [r.json()["id"]])
    assert (dry["fits"], dry.get("cluster"), dry["clusters"]) == (True, None, ["a", "b"])
    assert waits == "ACCEPTED" and placed == {r.json()["id"]: "b"}


def test_each_cluster_is_asked_with_its_own_max_cores(state_dir, tmp_path):
    """``max_cores_per_cluster``: the first executors above a queue's cap on each cluster."""
    queues = [{"name": "root", "queues": [
        {"name": "default"}, {"name": "capped", "max_cores_per_cluster": {"a": 2, "b": 3}}]}]
    floor = {"spark.dynamicAllocation.minExecutors": "4",
             "spark.dynamicAllocation.maxExecutors": "4"}
    with flaky_b(state_dir, tmp_path, queues) as (s, _b):
        capped = s.client.post("/api/v1/apps", json=native_body(tmp_path, "capped", **floor))
        free = s.client.post("/api/v1/apps", json=native_body(tmp_path, "default", **floor))
    assert (capped.status_code, capped.json()["detail"]) == (400, (
        "never fits: on no cluster it may use: a: 4 executor(s) of 1 cores (minExecutors 4)"
        " need 4 cores, above max_cores 2 of queue root.capped; b: 4 executor(s) of 1 cores"
        " (minExecutors 4) need 4 cores, above max_cores 3 of queue root.capped"))
    assert free.status_code == 201, free.text
