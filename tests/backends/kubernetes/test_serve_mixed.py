"""A Kubernetes cluster beside a standalone one behind one scheduler (docs/operator/clusters.md):
a real ``sessionsched serve`` with ``clusters: [a, b]`` (spill-over: a first), a a real
``LocalCluster`` of one 2-core worker, b the fake API server (``fake_apiserver.py``) with the
stand-in spark-submit (a driver pod a launch).

1. An app asking ``spark.sessionsched.cluster=b`` becomes a driver pod on b, labelled as one
   cluster of Kubernetes labels it (its driver in the cluster: a pod, Python too); a's
   master never hears of it.
2. An app with no ask runs on a: a real PySpark app whose one executor takes a's worker.
3. A second such app, which a cannot hold now, spills to b: a pod, never on a too.
4. The scheduler restarts: each running app is adopted on its recorded cluster - no pod
   submitted again, the standalone app not relaunched - and each ends there (the pods by their
   phases, the PySpark app on a), every app launched exactly once.

Not the session's ``spark_cluster``: this one is a's alone, counted whole.
"""

from __future__ import annotations

import pytest

from sessionsched.backends.local import LocalCluster
from sessionsched.commands._serverproc import ServerProcess
from tests.backends.kubernetes.conftest import standin_submit
from tests.sparkcluster import (
    SMALL,
    conf_args,
    free_port,
    master_ports,
    started_cluster,
    stop_server_and_its_apps,
    wait_until,
)
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

NS = "spark"
LABEL = "sessionsched.io/app-id"
JVM_S = 180  # bound on a JVM start (a master, a driver with its executor) on 2 loaded cores
WHOLE = {**SMALL, "spark.executor.cores": "2", "spark.cores.max": "2"}  # a's worker's 2 cores


@pytest.fixture
def cluster_a(tmp_path):
    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(tmp_path / "a", workers=1, cores=2, memory="2g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S)

    with started_cluster(make) as cluster:
        yield cluster


def master_apps(cluster: LocalCluster) -> dict[str, str]:
    """Every application a's master knows, active or completed: id -> state."""
    view = HTTP.get(f"{cluster.master_ui}/json/", timeout=10).json()
    return {a["id"]: a["state"] for which in ("activeapps", "completedapps")
            for a in view[which]}


def read(server: ServerProcess, path: str):
    return HTTP.get(f"{server.url}/api/v1/{path}", timeout=10).json()


def pod_posts(fake) -> int:
    return sum(r.method == "POST" and r.path.endswith("/pods") for r in fake.requests)


def test_a_kubernetes_cluster_beside_a_standalone_one(cluster_a, fake, pyspark_app, tmp_path):
    fake.add_node("n1", cpu="8", memory="16Gi")
    work = pyspark_app.parent
    config = {
        "server": {"port": free_port(), "state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "clusters": [
            {"name": "a", "backend": "standalone", "master": cluster_a.master_url,
             "master_ui": cluster_a.master_ui},
            {"name": "b", "backend": "kubernetes", "driver_slots": 2, "kubernetes": {
                "api_server": fake.url, "namespace": NS, "image": "spark:4.0.1",
                "spark_submit": standin_submit(tmp_path),
                "upload_path": f"file://{tmp_path}/up", "watch_timeout_s": 30}},
        ],
        "placement": "spill",
        "queues": [{"name": "root", "queues": [{"name": "default"}]}],
    }
    flags = {n: tmp_path / f"{n}.done" for n in ("onb", "ona", "spilled")}

    def submit(name: str, *conf: str) -> str:
        argv = [*conf_args(WHOLE), *conf, str(pyspark_app), "--tasks", "1", "--task-s", "1",
                "--until", str(flags[name])]
        r = HTTP.post(f"{server.url}/api/v1/apps", timeout=30, json={
            "argv": argv, "cwd": str(work), "name": name, "priority": 6000})
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def app(app_id: str) -> dict:
        return read(server, f"apps/{app_id}")

    def launches(app_id: str) -> int:
        return sum(e["kind"] == "launch" for e in read(server, f"apps/{app_id}/events"))

    def the_pod(app_id: str) -> dict:
        return wait_until(lambda: fake.pods(NS, f"{LABEL}={app_id}"), 60, f"{app_id}'s pod")[0]

    def run_pod(pod: dict, phase: str = "Running", **kw) -> None:
        fake.set_pod_phase(NS, pod["metadata"]["name"], phase, node="n1", **kw)

    server = ServerProcess.start(config, tmp_path / "s1")
    try:
        # 1. Asking for b: a driver pod there, in the cluster (a Python app too).
        onb = submit("onb", "--conf", "spark.sessionsched.cluster=b")
        pod_b = the_pod(onb)
        labels = pod_b["metadata"]["labels"]
        assert labels["sessionsched.io/priority"] == "6000"
        assert labels["sessionsched.io/driver-in-cluster"] == "true"
        run_pod(pod_b)
        wait_until(lambda: app(onb)["state"] in ("STARTING", "RUNNING"), 30, "onb admitted")
        assert app(onb)["cluster"] == "b"

        # 2. No ask: a (spill-over: the first), a real PySpark app holding a's worker.
        ona = submit("ona")
        wait_until(lambda: app(ona)["state"] == "RUNNING", JVM_S, "ona to run")
        spark_ona = app(ona)["spark_app_id"]
        assert app(ona)["cluster"] == "a"
        # Its executor up on a's worker (WAITING until then); onb is not there.
        wait_until(lambda: master_apps(cluster_a) == {spark_ona: "RUNNING"}, JVM_S,
                   "ona's executor on a")

        # 3. No ask, and a's cores are ona's: it spills to b, a pod.
        spilled = submit("spilled")
        pod_s = the_pod(spilled)
        assert pod_s["metadata"]["labels"]["sessionsched.io/driver-in-cluster"] == "true"
        run_pod(pod_s)
        wait_until(lambda: app(spilled)["state"] in ("STARTING", "RUNNING"), 30,
                   "spilled admitted")
        assert app(spilled)["cluster"] == "b"
        assert pod_posts(fake) == 2
        assert {i: launches(i) for i in (onb, ona, spilled)} == {onb: 1, ona: 1, spilled: 1}
        assert master_apps(cluster_a) == {spark_ona: "RUNNING"}
        # b's driver pods are b's room, counted by its engine, not the host's nor usage the
        # scheduler does not manage: b offers its node's 8 cores; one driver is on this host.
        rows = wait_until(lambda: (c := read(server, "cluster"))["clusters"][1]["running"] == 2
                          and c, 30, "both pods running on b")
        assert [(r["name"], r["cores"], r["running"]) for r in rows["clusters"]] == [
            ("a", 2, 1), ("b", 8, 2)]
        assert rows["driver_host"]["drivers"] == 1
    finally:
        server.stop()  # not its apps: the restart adopts them

    server = ServerProcess.start(config, tmp_path / "s2")
    try:
        # 4. Each running app adopted on its recorded cluster, nothing submitted again.
        listed = {x["id"]: (x["state"], x["cluster"]) for x in read(server, "apps")}
        assert {i: c for i, (_, c) in listed.items()} == {onb: "b", ona: "a", spilled: "b"}
        assert {s for s, _ in listed.values()} <= {"STARTING", "RUNNING"}, listed  # adopted
        run_pod(pod_b, "Succeeded", exit_code=0)
        run_pod(pod_s, "Failed", exit_code=4)
        flags["ona"].touch()
        wait_until(lambda: app(onb)["state"] == "FINISHED", 30, "onb FINISHED (its pod)")
        wait_until(lambda: app(spilled)["state"] == "FAILED", 30, "spilled FAILED (its pod)")
        assert app(spilled)["exit_code"] == 4
        wait_until(lambda: app(ona)["state"] == "FINISHED", JVM_S, "ona to finish on a")
        listed = {x["id"]: (x["state"], x["cluster"]) for x in read(server, "apps")}
        assert listed == {onb: ("FINISHED", "b"), ona: ("FINISHED", "a"),
                          spilled: ("FAILED", "b")}
        assert {i: launches(i) for i in listed} == {onb: 1, ona: 1, spilled: 1}
        assert pod_posts(fake) == 2  # no pod submitted again
        assert master_apps(cluster_a) == {spark_ona: "FINISHED"}  # a ran ona alone
    finally:
        stop_server_and_its_apps(server)
