"""GPUs on a real standalone cluster, on one cluster of the module's own (``gpu_cluster``),
started once for the three tests here (each waits for it to be idle first): a plain worker of
1 core (``started_cluster``) and a second worker of 4 cores and 4 GPUs the fixture starts with
``spark.worker.resource.gpu.amount=4`` and a discovery script printing fixed addresses in its
properties file (how a worker declares GPUs without any, as Spark's own tests do), stopped by
PID at the module's end. One cluster, not one per test: each of its starts is three JVMs.

- The shape of the GPU worker in the master's ``/json/``, as the standalone backend reads it
  (``clusterview.workers_of``): a worker of 4 gpu, all free, beside the plain one.
- A stage of another resource profile (``rdd.withResources``): the app's agent reads the
  profile (one core and a GPU) and reports its demand, the scheduler grants executors of it
  within the app's queue limit (``max_cores: 2`` where the GPU stage's four tasks would ask
  for four executors and the worker has four GPUs), fitted on the worker that has the GPUs;
  the tasks read their GPU addresses from ``TaskContext.resources()``; the scheduler's target
  for the app never above those 2, its record of the app's executors above it only for a
  moment (surplus it takes back); once the stage is over
  the GPU executors are given back (Spark's idle timeout, the cap of that profile back to 0)
  while the app lives on.
- Two GPU apps in one ``fairshare`` queue split the GPU worker's GPUs: two apps of
  ``examples/apps/gpu_tasks.py`` (executors of 1 core and 1 GPU, tasks of 1 GPU, dynamic
  allocation, eight tasks each: each wants all four GPUs) submitted through the scheduler.
  While both run each holds 2 executors: the scheduler's record says so, and the worker's own
  ``/json/`` gives each app's executors two GPU addresses, the two apps' disjoint; the tasks
  read their addresses from ``TaskContext.resources()``; both finish.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessionsched.backends import procs
from sessionsched.backends.clusterview import ClusterView, capacity_for_managed, workers_of
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
    wait_idle,
    wait_until,
)
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

JVM_S = 240  # bound on JVM starts on a loaded host
GPUS = (("gpu", 4),)  # the GPU worker's
SURPLUS_S = 60  # bound on taking back executors over the grant, on a loaded host


@dataclass(frozen=True)
class GpuCluster:
    cluster: LocalCluster
    script: Path  # the discovery script, also the GPU executors'
    worker_ui: str  # the GPU worker's UI
    worker_log: Path


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory) -> Iterator[GpuCluster]:
    directory = tmp_path_factory.mktemp("gpu-cluster")

    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(directory / "cluster", workers=1, cores=1, memory="1g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S)

    script = gpu_discovery_script(directory, 4)
    conf = directory / "gpu-worker.conf"
    conf.write_text(f"spark.worker.resource.gpu.amount 4\n"
                    f"spark.worker.resource.gpu.discoveryScript {script}\n")
    log_path = directory / "gpu-worker.log"
    with started_cluster(make) as cluster:
        work = directory / "gpu-worker"
        work.mkdir(exist_ok=True)
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": cluster.host}
        with open(log_path, "ab") as log:
            worker = subprocess.Popen(
                [spark_class(), WORKER_CLASS, "--host", cluster.host, "--cores", "4",
                 "--memory", "3g", "--work-dir", str(work), "--properties-file", str(conf),
                 cluster.master_url],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        master = MasterClient(cluster.master_ui, timeout_s=5.0)
        try:
            wait_until(lambda: len(master.read_master().alive_workers()) == 2, JVM_S,
                       "the GPU worker to be ALIVE")
            (gpu_worker,) = [w for w in master.read_master().alive_workers() if w.resources]
            yield GpuCluster(cluster, script, gpu_worker.webui, log_path)
        finally:
            master.close()
            procs.stop_group(procs.identify(worker.pid), grace_s=10.0)
            worker.wait(timeout=30)


def start_server(tmp_path: Path, cluster: LocalCluster, queue: dict) -> ServerProcess:
    """``sessionsched serve`` on the GPU cluster, its one queue ``root.gpu``."""
    state = tmp_path / "server"
    return ServerProcess.start({
        "server": {"state_dir": str(state / "state"), "cycle_ms": 200, "heartbeat_s": 1.0},
        "cluster": {"backend": "standalone", "master": cluster.master_url,
                    "master_ui": cluster.master_ui, "driver_slots": 2},
        "defaults": {"queue": "root.gpu"},
        "queues": [{"name": "root", "queues": [{"name": "gpu", **queue}]}],
    }, state)


def test_a_workers_gpus_as_the_master_reports_them(gpu_cluster):
    cluster = gpu_cluster.cluster
    wait_idle(cluster)
    client = MasterClient(cluster.master_ui, timeout_s=5.0)
    try:
        sizes = sorted(((w.size, w.free) for w in workers_of(ClusterView(
            client.read_master(), ()))), key=lambda sf: sf[0].custom)
        assert [(s.cores, s.mem_mib, s.custom, f.custom) for s, f in sizes] == [
            (1, 1024, (), ()), (4, 3072, GPUS, GPUS)], gpu_cluster.worker_log
    finally:
        client.close()


# --- a stage of a GPU profile ------------------------------------------------------------------


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
deadline = time.monotonic() + 360  # 120 s on a quiet machine, times tests.sparkcluster.SLACK
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


def test_a_stage_of_a_gpu_profile_gets_executors_of_it_within_the_grant(gpu_cluster, tmp_path):
    cluster, script = gpu_cluster.cluster, gpu_cluster.script
    wait_idle(cluster)
    app = tmp_path / "gpu_stage.py"
    app.write_text(APP_SOURCE)
    until = tmp_path / "done"
    server = start_server(tmp_path, cluster, {"policy": "fifo", "max_cores": 2})
    try:
        api = SchedulerClient(server.url)
        props = {**SMALL, "spark.driver.host": "127.0.0.1",
                 "spark.dynamicAllocation.executorIdleTimeout": "3s",
                 "spark.pyspark.python": sys.executable}
        argv = ["--name", "gpu-stage"]
        for k, v in props.items():
            argv += ["--conf", f"{k}={v}"]
        argv += [str(app), str(script), str(until)]
        app_id = api.submit(Submission(tuple(argv), str(tmp_path), queue="root.gpu")).id
        most_target, over_since = 0, None

        def log() -> str:
            try:
                return api.log(app_id, tail=400)
            except ApiError:  # no driver log yet: the app is still queued
                return ""

        def gpu_done():
            nonlocal most_target, over_since
            seen = api.app(app_id)
            most_target = max(most_target, seen.target)
            if seen.state.terminal:
                pytest.fail(f"the app ended: {log()}")
            # Above the grant only for a moment: a default executor the master launched
            # before the grant moved to the GPU profile registers anyway (a standalone master
            # stops launches at a lower limit, it kills none), and is taken back as surplus.
            if seen.executors <= 2:
                over_since = None
            elif over_since is None:
                over_since = time.monotonic()
            elif time.monotonic() - over_since > SURPLUS_S:
                pytest.fail(f"{seen.executors} executors for {SURPLUS_S} s, over a grant of 2")
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
        assert most_target == 2
        # Given back after the stage, while the app lives on.
        assert after["held"].get("1", 0) == 0, after
        assert api.app(app_id).state.value == "RUNNING"
        until.touch()
        wait_until(lambda: api.app(app_id).state.terminal, 120, "the app to end")
        assert api.app(app_id).state.value == "FINISHED"
        api.close()
    finally:
        stop_server_and_its_apps(server)


# --- two GPU apps in a fairshare queue ---------------------------------------------------------


GPU_APP = Path(__file__).resolve().parents[2] / "examples" / "apps" / "gpu_tasks.py"
TASK_LINE = re.compile(r"^gpu-\w: task \d+: gpu (\S*)$", re.M)


def gpus_by_app(worker_ui: str) -> dict[str, list[str]]:
    """Each app's GPU addresses over its executors on the worker, from the worker's /json/."""
    data = HTTP.get(f"{worker_ui.rstrip('/')}/json/", timeout=5).json()
    held: dict[str, list[str]] = {}
    for e in data.get("executors", []):
        gpu = (e.get("resources") or {}).get("gpu") or {}
        held.setdefault(e["appid"], []).extend(gpu.get("addresses", []))
    return held


def test_two_gpu_apps_in_a_fairshare_queue_split_the_gpus(gpu_cluster, tmp_path):
    cluster, script = gpu_cluster.cluster, gpu_cluster.script
    wait_idle(cluster)
    until = tmp_path / "done"
    start = time.monotonic()

    def mark(what: str) -> None:  # where the time goes, shown with -s or when it fails
        print(f"{time.monotonic() - start:5.1f}s {what}", flush=True)

    master = MasterClient(cluster.master_ui, timeout_s=5.0)
    server = None
    try:
        gpu_workers = [w for w in master.read_master().alive_workers() if w.resources]
        assert [w.resources for w in gpu_workers] == [GPUS], "the worker did not declare its GPUs"
        server = start_server(tmp_path, cluster, {"policy": "fairshare"})
        api = SchedulerClient(server.url)
        mark("server started")
        props = {**SMALL, "spark.driver.host": "127.0.0.1",
                 "spark.pyspark.python": sys.executable,
                 "spark.executor.resource.gpu.amount": "1",
                 "spark.task.resource.gpu.amount": "1",
                 "spark.executor.resource.gpu.discoveryScript": str(script)}
        ids = []
        for name in ("gpu-a", "gpu-b"):
            argv = ["--name", name]
            for k, v in props.items():
                argv += ["--conf", f"{k}={v}"]
            argv += [str(GPU_APP), "--tasks", "8", "--task-s", "1", "--until", str(until)]
            ids.append(api.submit(Submission(tuple(argv), str(tmp_path), queue="root.gpu")).id)

        def log(app_id: str) -> str:
            try:
                return api.log(app_id, tail=2000)
            except ApiError:  # no driver log yet: the app is still queued
                return ""

        def split() -> dict[str, list[str]] | None:
            apps = [api.app(i) for i in ids]
            for a in apps:
                if a.state.terminal:
                    pytest.fail(f"{a.name} ended: {log(a.id)}")
            if [a.executors for a in apps] != [2, 2] or not all(a.spark_app_id for a in apps):
                return None
            held = gpus_by_app(gpu_cluster.worker_ui)
            mine = {a.spark_app_id: sorted(held.get(a.spark_app_id, [])) for a in apps}
            return mine if all(len(g) == 2 for g in mine.values()) else None

        held = wait_until(split, 2 * JVM_S, "both apps to hold 2 GPU executors at once",
                          interval_s=0.3)
        mark(f"both hold 2 GPU executors: {held}")
        # Two GPUs each, the two apps' disjoint: all four in use.
        first, second = held.values()
        assert sorted(first + second) == ["0", "1", "2", "3"], held
        # As the master and the workers describe them, each app's executors ask one GPU: to a
        # scheduler that did not manage the first app, its two GPUs are not there to give.
        # (Read until the workers' lists show both of its executors: a list read a moment
        # after the worker's own page may lag it on a loaded machine.)
        first_id = next(iter(held))

        def listed() -> ClusterView | None:
            v = master.read()
            return v if len(v.executors_of(first_id)) == 2 else None

        view = wait_until(listed, JVM_S, "the first app's 2 executors in the workers' lists",
                          interval_s=0.3)
        assert {a.id: a.resources_per_executor for a in view.master.active_apps} == {
            a: (("gpu", 1),) for a in held}
        assert capacity_for_managed(view, [a for a in held if a != first_id], ()).custom == (
            ("gpu", 2),)
        until.touch()
        wait_until(lambda: all(api.app(i).state.terminal for i in ids), 120, "both apps to end")
        mark("both ended")
        for i in ids:
            app, text = api.app(i), log(i)
            assert app.state.value == "FINISHED", text
            # The tasks read one GPU address each from TaskContext.resources().
            seen = TASK_LINE.findall(text)
            assert seen and all(g in ("0", "1", "2", "3") for g in seen), text
        api.close()
    finally:
        if server is not None:
            stop_server_and_its_apps(server)
        master.close()
