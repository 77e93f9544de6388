"""A fake kubelet for the fake API server: runs each executor pod a Spark driver creates as a
real ``KubernetesExecutorBackend`` JVM on this host, from the pod spec's environment.

Not a kubelet: no images, containers, cgroups or probes. It reads the pod's env (resolving
``status.podIP`` to 127.0.0.1 and ``metadata.name``), moves the block manager off the driver's
fixed port and the local dirs into a temporary directory (all executors share this host), starts
the JVM from pyspark's jars, and reports the pod Running; when the JVM exits the pod becomes
Succeeded/Failed with its exit code; when the pod is deleted the JVM gets SIGTERM (SIGKILL
after a grace).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from sessionsched.backends.spark_home import spark_home, spark_jars
from tests.backends.kubernetes.fake_apiserver import FakeApiServer, free_port

BACKEND_CLASS = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"


class FakeKubelet:
    def __init__(self, fake: FakeApiServer, namespace: str, work_dir: Path,
                 ports: range = range(21600, 21999)) -> None:
        self.fake, self.namespace, self.work_dir, self.ports = fake, namespace, work_dir, ports
        self.procs: dict[str, subprocess.Popen] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)

    def __enter__(self) -> FakeKubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        for proc in self.procs.values():
            _end(proc)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            live = {p["metadata"]["name"]: p for p in
                    self.fake.pods(self.namespace, "spark-role=executor")}
            for name, pod in live.items():
                if name not in self.procs and pod["status"].get("phase") == "Pending":
                    self.procs[name] = self._start(pod)
                    self.fake.set_pod_phase(self.namespace, name, "Running", node="n1")
            for name, proc in list(self.procs.items()):
                if name not in live and proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)  # the pod was deleted
                elif name in live and proc.poll() is not None \
                        and live[name]["status"].get("phase") == "Running":
                    code = proc.returncode
                    self.fake.set_pod_phase(self.namespace, name,
                                            "Succeeded" if code == 0 else "Failed",
                                            exit_code=code if code >= 0 else 128 - code)

    def _start(self, pod: dict) -> subprocess.Popen:
        name = pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]
        env: dict[str, str] = {}
        for var in container.get("env") or []:
            if "value" in var:
                env[var["name"]] = var["value"]
            else:
                path = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
                env[var["name"]] = {"status.podIP": "127.0.0.1", "metadata.name": name}.get(
                    path, "")
        opts = [v for k, v in sorted(env.items()) if k.startswith("SPARK_JAVA_OPT_")]
        port = free_port(self.ports.start, self.ports.stop - 1)
        opts = [re.sub(r"^-Dspark\.blockManager\.port=\d+$", f"-Dspark.blockManager.port={port}",
                       o) for o in opts]
        local = self.work_dir / name
        local.mkdir(parents=True, exist_ok=True)
        memory = env.get("SPARK_EXECUTOR_MEMORY", "512m")
        cmd = ["java", *opts, f"-Xms{memory}", f"-Xmx{memory}", "-cp", f"{spark_jars()}/*",
               BACKEND_CLASS, "--driver-url", env["SPARK_DRIVER_URL"],
               "--executor-id", env["SPARK_EXECUTOR_ID"], "--cores", env["SPARK_EXECUTOR_CORES"],
               "--app-id", env["SPARK_APPLICATION_ID"], "--hostname", "127.0.0.1",
               "--resourceProfileId", env.get("SPARK_RESOURCE_PROFILE_ID", "0"),
               "--podName", name]
        run_env = {**os.environ, **env, "SPARK_LOCAL_DIRS": str(local), "SPARK_LOCAL_IP":
                   "127.0.0.1", "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable}
        run_env.pop("SPARK_CONF_DIR", None)
        with open(local / "executor.log", "ab") as log:
            return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=run_env,
                                    cwd=local, start_new_session=True)


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
