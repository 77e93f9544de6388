"""YuniKorn's gang annotations, exactly as YuniKorn's Spark example writes them, submitted to
``sessionsched serve`` on the Kubernetes backend (the fake API server) and launched by the real
spark-submit 4.0.1 (~35 s on 2 cores): the app's spec carries the gang (the app object's
``gang``), its launch asks Spark for the gang's executors at once
(``spark.dynamicAllocation.minExecutors``/``initialExecutors``, engine/agent_terms), and
Spark puts the annotations on the driver pod as it would for YuniKorn. A malformed annotation
is refused with one line and nothing is stored."""

from __future__ import annotations

import json

import httpx

from tests.backends.kubernetes.test_serve import serve
from tests.backends.kubernetes.test_spark_submit import NS, SUBMIT_S, properties
from tests.sparkcluster import wait_until

LABEL = "sessionsched.io/app-id"
YK = "spark.kubernetes.driver.annotation.yunikorn.apache.org/"
# YuniKorn 1.6's "Enable Gang scheduling for Spark jobs" example, as --conf values.
TASK_GROUPS = json.dumps([
    {"name": "spark-driver", "minMember": 1, "minResource": {"cpu": "1", "memory": "2Gi"},
     "nodeSelector": {}, "tolerations": [], "affinity": {}, "topologySpreadConstraints": []},
    {"name": "spark-executor", "minMember": 1, "minResource": {"cpu": "1", "memory": "2Gi"}},
])
POLICY = "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"


def test_the_seeds_annotations_are_read_launched_with_and_reach_the_driver_pod(fake, tmp_path):
    fake.add_node("n1", cpu="8", memory="16Gi")
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print('never runs: no kubelet')\n")
    config = {
        "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "cluster": {"backend": "kubernetes", "driver_slots": 2, "kubernetes": {
            "api_server": fake.url, "namespace": NS, "image": "apache/spark:4.0.1",
            "upload_path": f"file://{tmp_path}/up", "watch_timeout_s": 30}},
        "defaults": {"queue": "root.default"},
    }
    server = serve(config, tmp_path / "s")
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            def submit(*conf: str) -> httpx.Response:
                argv = [f"--conf={c}" for c in conf] + ["train.py"]
                return http.post("/api/v1/apps", json={"argv": argv, "cwd": str(work)})

            bad = submit(f"{YK}schedulingPolicyParameters=gangSchedulingStyle=Firm",
                         f"{YK}task-groups={TASK_GROUPS}")
            assert bad.status_code == 400, bad.text
            assert bad.json()["detail"].count("\n") == 0
            assert "gangSchedulingStyle='Firm': expected hard or soft" in bad.json()["detail"]
            assert http.get("/api/v1/apps").json() == []  # nothing stored

            r = submit(f"{YK}task-groups={TASK_GROUPS}",
                       f"{YK}schedulingPolicyParameters={POLICY}",
                       "spark.executor.cores=1", "spark.executor.memory=1g")
            assert r.status_code == 201, r.text
            app_id = r.json()["id"]
            gang = http.get(f"/api/v1/apps/{app_id}").json()["gang"]
            assert (gang["executors"], gang["timeout_s"], gang["style"]) == (1, 30.0, "hard")

            pod = wait_until(lambda: fake.pods(NS, f"{LABEL}={app_id}"), SUBMIT_S,
                             "spark-submit's driver pod")[0]
            notes = pod["metadata"]["annotations"]
            assert json.loads(notes["yunikorn.apache.org/task-groups"]) == json.loads(TASK_GROUPS)
            assert notes["yunikorn.apache.org/schedulingPolicyParameters"] == POLICY
            conf_maps = wait_until(lambda: fake.state.select(
                "configmaps", NS, lambda _: True, lambda _: True), 30, "the conf map")
            props = properties(conf_maps[0]["data"]["spark.properties"])
            assert props["spark.dynamicAllocation.minExecutors"] == "1"  # the gang's N at once
            assert props["spark.dynamicAllocation.initialExecutors"] == "1"
            fake.set_pod_phase(NS, pod["metadata"]["name"], "Running", node="n1")
            wait_until(lambda: http.get(f"/api/v1/apps/{app_id}").json()["state"]
                       in ("STARTING", "RUNNING"), 30, "the gang's driver up")
    finally:
        server.stop()
