"""``sessionsched serve`` with ``cluster.backend: kubernetes`` (a real scheduler process, the
fake API server, the stand-in spark-submit): a submission is launched as a driver pod in the
queue's turn, the pod's phases drive the app's state, a kill deletes the pod, and a restarted
scheduler adopts a running driver instead of submitting it again."""

from __future__ import annotations

import httpx

from sessionsched.commands._serverproc import ServerProcess
from tests.backends.kubernetes.conftest import standin_submit
from tests.backends.kubernetes.fake_apiserver import free_port
from tests.sparkcluster import wait_until

NS = "spark"
LABEL = "sessionsched.io/app-id"


def serve(config: dict, workdir) -> ServerProcess:
    """``sessionsched serve`` on a port of this test's range (``free_port``)."""
    return ServerProcess.start(config, workdir, pick_port=free_port)


def test_serve_launches_tracks_kills_and_adopts_driver_pods(fake, tmp_path):
    fake.add_node("n1", cpu="8", memory="16Gi")
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.py").write_text("print('hello')\n")
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {"backend": "kubernetes", "driver_slots": 2, "kubernetes": {
            "api_server": fake.url, "namespace": NS, "image": "spark:4.0.1",
            "spark_submit": standin_submit(tmp_path), "upload_path": f"file://{tmp_path}/up",
            "watch_timeout_s": 30}},
        "defaults": {"queue": "root.default"},
    }
    server = serve(config, tmp_path / "s1")
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            def submit(*options):
                r = http.post("/api/v1/apps", json={"argv": [*options, "job.py"],
                                                    "cwd": str(work), "priority": 6000})
                assert r.status_code == 201, r.text
                return r.json()["id"]

            def state(app_id):
                return http.get(f"/api/v1/apps/{app_id}").json()["state"]

            assert http.get("/api/v1/health").json()["master"] == f"k8s://{fake.url}"
            first = submit()
            pod = wait_until(lambda: fake.pods(NS, f"{LABEL}={first}"), 60, "the driver pod")[0]
            name = pod["metadata"]["name"]
            assert pod["metadata"]["labels"]["sessionsched.io/priority"] == "6000"
            # A Python driver runs in a pod too: it takes cluster room, not a driver slot.
            assert pod["metadata"]["labels"]["sessionsched.io/driver-in-cluster"] == "true"
            fake.set_pod_phase(NS, name, "Running", node="n1")
            fake.set_pod_phase(NS, name, "Succeeded", exit_code=0)
            wait_until(lambda: state(first) == "FINISHED", 30, "FINISHED")
            assert http.get(f"/api/v1/apps/{first}").json()["exit_code"] == 0

            second = submit("--deploy-mode", "cluster")  # refused on standalone only
            pod = wait_until(lambda: fake.pods(NS, f"{LABEL}={second}"), 60, "pod 2")[0]
            fake.set_pod_phase(NS, pod["metadata"]["name"], "Running", node="n1")
            wait_until(lambda: state(second) in ("STARTING", "RUNNING"), 30, "admitted")
            assert http.post(f"/api/v1/apps/{second}/kill").status_code == 200
            wait_until(lambda: state(second) == "KILLED", 30, "KILLED")
            # The kill is recorded at once; the pod's delete is carried out after it.
            wait_until(lambda: not fake.pods(NS, f"{LABEL}={second}"), 30,
                       "the killed driver's pod deleted")

            third = submit()
            pod = wait_until(lambda: fake.pods(NS, f"{LABEL}={third}"), 60, "pod 3")[0]
            fake.set_pod_phase(NS, pod["metadata"]["name"], "Running", node="n1")
    finally:
        server.stop()
    server = serve(config, tmp_path / "s2")  # restart: the third app's driver is adopted
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            fake.set_pod_phase(NS, pod["metadata"]["name"], "Failed", exit_code=4)
            wait_until(lambda: http.get(f"/api/v1/apps/{third}").json()["state"] == "FAILED",
                       30, "FAILED after adoption")
            assert http.get(f"/api/v1/apps/{third}").json()["exit_code"] == 4
            assert len(fake.pods(NS, f"{LABEL}={third}")) == 1  # never submitted twice
            posts = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/pods")]
            assert len(posts) == 3
    finally:
        server.stop()
