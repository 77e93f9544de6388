"""A scripted kubelet for driver pods on the fake API server: it plays what a driver pod does
without running one, from properties the app carries (the memory cluster's, so one ``Launch``
serves both): ``spark.sessionsched.memory.work`` seconds of work (default 2) with one executor,
then exit with ``spark.sessionsched.memory.exitCode`` (default 0).

A new driver pod becomes Running after ``start_s``, with one executor pod (owned by it, so it
goes when the driver pod is deleted); when the work is done the executor pod is deleted and the
driver pod ends Succeeded or Failed with the exit code. The properties are read from the
driver's ``spark.properties`` ConfigMap, as a real driver would. For the backend contract suite
(``tests/backends``) over the fake; executors of a real driver are ``fake_kubelet.py``'s job.
"""

from __future__ import annotations

import re
import threading
import time

from tests.backends.kubernetes.fake_apiserver import ApiError, FakeApiServer

WORK = "spark.sessionsched.memory.work"
EXIT_CODE = "spark.sessionsched.memory.exitCode"


def read_properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"((?:[^=:\\]|\\.)*)[=:](.*)", line)
        if m and not line.startswith("#"):
            out[re.sub(r"\\(.)", r"\1", m.group(1))] = re.sub(r"\\(.)", r"\1", m.group(2))
    return out


class ScriptedKubelet:
    def __init__(self, fake: FakeApiServer, namespace: str, node: str = "n1",
                 start_s: float = 1.0, executor_node: str | None = None) -> None:
        self.fake, self.namespace, self.node, self.start_s = fake, namespace, node, start_s
        self.executor_node = executor_node or node
        self._plans: dict[str, dict] = {}  # driver pod uid -> its script's state
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scripted-kubelet", daemon=True)

    def __enter__(self) -> ScriptedKubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _conf(self, pod: dict) -> dict[str, str] | None:
        owned = [c for c in self.fake.state.select("configmaps", self.namespace,
                                                   lambda _: True, lambda _: True)
                 if any(r.get("uid") == pod["metadata"]["uid"]
                        for r in c["metadata"].get("ownerReferences") or [])]
        if not owned:
            return None  # spark-submit has not applied it yet
        return read_properties(owned[0].get("data", {}).get("spark.properties", ""))

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            for pod in self.fake.pods(self.namespace, "spark-role=driver"):
                try:
                    self._step(pod, now)
                except ApiError:
                    pass  # deleted meanwhile: nothing left to play

    def _step(self, pod: dict, now: float) -> None:
        uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
        phase = pod["status"].get("phase")
        plan = self._plans.get(uid)
        if plan is None:
            conf = self._conf(pod)
            if conf is None or phase != "Pending":
                return
            plan = self._plans[uid] = {
                "run_at": now + self.start_s,
                "work_s": float(conf.get(WORK, "2")),
                "code": int(conf.get(EXIT_CODE, "0")), "end_at": None}
        if phase == "Pending" and now >= plan["run_at"]:
            self.fake.set_pod_phase(self.namespace, name, "Running", node=self.node)
            labels = pod["metadata"]["labels"]
            exec_name = f"{name.removesuffix('-driver')}-exec-1"
            self.fake.state.create("pods", self.namespace, {
                "metadata": {"name": exec_name, "labels": {
                    "spark-role": "executor", "spark-exec-id": "1",
                    "spark-app-selector": labels["spark-app-selector"]},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name,
                                         "uid": uid, "controller": True}]},
                "spec": {"containers": [{"name": "spark-kubernetes-executor", "image": "x",
                                         "resources": {"requests": {"cpu": "1",
                                                                    "memory": "1408Mi"}}}]}})
            self.fake.set_pod_phase(self.namespace, exec_name, "Running",
                                    node=self.executor_node)
            plan["end_at"] = now + plan["work_s"]
            plan["executor"] = exec_name
        elif phase == "Running" and plan["end_at"] is not None and now >= plan["end_at"]:
            if self.fake.get("pods", self.namespace, plan["executor"]):
                self.fake.state.delete("pods", self.namespace, plan["executor"])
            code = plan["code"]
            self.fake.set_pod_phase(self.namespace, name, "Succeeded" if code == 0 else "Failed",
                                    exit_code=code)
