"""A stage of another resource profile on a real standalone cluster (``rdd.withResources``):
the app's agent reads the profile (one core and a GPU) and reports its demand, the scheduler
grants executors of it within the app's queue limit (``max_cores: 2`` where the GPU stage's
four tasks would ask for four executors and the worker has four GPUs), fitted on the worker
that has the GPUs; the tasks read their GPU addresses from ``TaskContext.resources()``; once
the stage is over the GPU executors are given back (Spark's idle timeout, the cap of that
profile back to 0) while the app lives on.

A cluster of its own: one plain worker (``started_cluster``) and a second worker the test
starts with ``spark.worker.resource.gpu.amount=4`` and a discovery script printing fixed
addresses, stopped by PID (as tests/real_spark/test_worker_gpus.py does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sessionsched.backends import procs
from sessionsched.backends.local import WORKER_CLASS, LocalCluster
from sessionsched.backends.master import MasterClient
from sessionsched.backends.spark_home import spark_class, spark_home
from sessionsched.client import SchedulerClient, Submission
from sessionsched.client.errors import ApiError
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import (
    SMALL,
    gpu_discovery_script,
    master_ports,
    started_cluster,
    stop_server_and_its_apps,
    wait_until,
)

pytestmark = pytest.mark.cluster

JVM_S = 240  # bound on JVM starts on a loaded host

APP_SOURCE = '''
import json, os, sys, threading, time
from pyspark import TaskContext
from pyspark.resource import ExecutorResourceRequests, ResourceProfileBuilder, TaskResourceRequests
from pyspark.sql import SparkSession

script, until = sys.argv[1], sys.argv[2]
sc = SparkSession.builder.getOrCreate().sparkContext
store = sc._jsc.sc().statusStore()
as_java = sc._jvm.scala.jdk.javaapi.CollectionConverters.asJava
most = {}


def by_profile():
    counts = {}
    for e in as_java(store.executorList(True)):
        if e.id() != "driver":
            counts[e.resourceProfileId()] = counts.get(e.resourceProfileId(), 0) + 1
    return counts


def watch():  # the most executors of each profile held at once
    while True:
        for rp, n in by_profile().items():
            most[rp] = max(most.get(rp, 0), n)
        time.sleep(0.2)


threading.Thread(target=watch, daemon=True).start()
print("DEFAULT", sc.parallelize(range(4), 2).map(lambda x: x * 2).sum(), flush=True)
gpu = (ResourceProfileBuilder()
       .require(ExecutorResourceRequests().cores(1).memory("512m").resource("gpu", 1, script))
       .require(TaskResourceRequests().cpus(1).resource("gpu", 1)).build)  # a property


def task(x):
    time.sleep(4)
    return TaskContext.get().resources()["gpu"].addresses


addresses = sc.parallelize(range(4), 4).withResources(gpu).map(task).collect()
print("GPU " + json.dumps({"addresses": addresses, "most": most}), flush=True)
deadline = time.monotonic() + 120
while by_profile().get(gpu.id, 0) and time.monotonic() < deadline:
    time.sleep(0.5)
print("AFTER " + json.dumps({"held": by_profile()}), flush=True)
while not os.path.exists(until) and time.monotonic() < deadline + 120:
    time.sleep(0.2)
'''


def line(log: str, tag: str) -> dict | None:
    for text in log.splitlines():
        if text.startswith(tag + " "):
            return json.loads(text.removeprefix(tag + " "))
    return None


def test_a_stage_of_a_gpu_profile_gets_executors_of_it_within_the_grant(tmp_path):
    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(tmp_path / "cluster", workers=1, cores=1, memory="1g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S)

    script = gpu_discovery_script(tmp_path, 4)
    conf = tmp_path / "gpu-worker.conf"
    conf.write_text(f"spark.worker.resource.gpu.amount 4\n"
                    f"spark.worker.resource.gpu.discoveryScript {script}\n")
    app = tmp_path / "gpu_stage.py"
    app.write_text(APP_SOURCE)
    until = tmp_path / "done"
    with started_cluster(make) as cluster:
        work = tmp_path / "gpu-worker"
        work.mkdir()
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": cluster.host}
        with open(tmp_path / "gpu-worker.log", "ab") as log:
            worker = subprocess.Popen(
                [spark_class(), WORKER_CLASS, "--host", cluster.host, "--cores", "4",
                 "--memory", "3g", "--work-dir", str(work), "--properties-file", str(conf),
                 cluster.master_url],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        master = MasterClient(cluster.master_ui, timeout_s=5.0)
        server = None
        try:
            wait_until(lambda: len(master.read_master().alive_workers()) == 2, JVM_S,
                       "the GPU worker to be ALIVE")
            state = tmp_path / "server"
            server = ServerProcess.start({
                "server": {"state_dir": str(state / "state"), "cycle_ms": 200,
                           "heartbeat_s": 1.0},
                "cluster": {"backend": "standalone", "master": cluster.master_url,
                            "master_ui": cluster.master_ui, "driver_slots": 2},
                "defaults": {"queue": "root.gpu"},
                "queues": [{"name": "root", "queues": [
                    {"name": "gpu", "policy": "fifo", "max_cores": 2}]}],
            }, state)
            api = SchedulerClient(server.url)
            props = {**SMALL, "spark.driver.host": "127.0.0.1",
                     "spark.dynamicAllocation.executorIdleTimeout": "3s",
                     "spark.pyspark.python": sys.executable}
            argv = ["--name", "gpu-stage"]
            for k, v in props.items():
                argv += ["--conf", f"{k}={v}"]
            argv += [str(app), str(script), str(until)]
            app_id = api.submit(Submission(tuple(argv), str(tmp_path), queue="root.gpu")).id
            most_seen = 0

            def log() -> str:
                try:
                    return api.log(app_id, tail=400)
                except ApiError:  # no driver log yet: the app is still queued
                    return ""

            def gpu_done():
                nonlocal most_seen
                most_seen = max(most_seen, api.app(app_id).executors)
                if api.app(app_id).state.terminal:
                    pytest.fail(f"the app ended: {log()}")
                return line(log(), "AFTER")

            after = wait_until(gpu_done, 2 * JVM_S, "the GPU stage done and its executors gone",
                               interval_s=0.3)
            gpu = line(log(), "GPU")
            print(api.log(app_id, tail=3000))  # shown when an assertion below fails
            # Four tasks, each read the one GPU address its executor was given.
            assert len(gpu["addresses"]) == 4
            assert all(len(a) == 1 and a[0] in "0123" for a in gpu["addresses"])
            # Executors of the GPU profile came, never more than the queue's grant (2 cores
            # of 1-core executors), though the stage asked for four and the worker has 4 GPUs.
            gpu_most = gpu["most"].get("1", 0)
            assert 1 <= gpu_most <= 2, gpu
            assert most_seen <= 2
            # Given back after the stage, while the app lives on.
            assert after["held"].get("1", 0) == 0, after
            assert api.app(app_id).state.value == "RUNNING"
            until.touch()
            wait_until(lambda: api.app(app_id).state.terminal, 120, "the app to end")
            assert api.app(app_id).state.value == "FINISHED"
            api.close()
        finally:
            if server is not None:
                stop_server_and_its_apps(server)
            master.close()
            procs.stop_group(procs.identify(worker.pid), grace_s=10.0)
            worker.wait(timeout=30)
