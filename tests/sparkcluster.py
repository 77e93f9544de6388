"""Real Spark for tests: one local standalone cluster per test session, and small helpers.

Fixtures (registered for every test by ``tests/conftest.py``):

* ``spark_cluster`` (session): a started ``LocalCluster`` (1 worker, 4 cores, 4g; workers may
  advertise more cores than the machine has) on free ports in 17000-17999 (the range this
  project's machines reserve for it; ``$SESSIONSCHED_TEST_PORTS``, e.g. ``40000-40999``,
  picks another), in a temporary directory; workers and drivers take ports the OS picks.
  Stopped by PID at the end of the session, also when tests fail. Use
  ``spark_cluster.master_url`` / ``.master_ui`` / ``.rest_url``.
* ``pyspark_app`` (session): the path of ``APP_SOURCE``, a tiny PySpark app (see its doc).
* ``jvm_app_jar`` (session): a jar with ``SleepApp`` (``JAVA_SOURCE``), compiled with ``javac``
  against pyspark's jars: ``SleepApp TASK_MS TASKS EXIT_CODE``.

Helpers: ``wait_until`` (poll a condition with a timeout), ``wait_idle`` (the cluster runs
nothing), ``free_port``, ``SMALL`` (Spark
properties for 1-core/512m executors and a 512m driver), ``DYNAMIC`` (dynamic allocation on),
``spark_env`` (environment for a spark-submit run by a test), ``spark_submit_process`` (run
spark-submit outside sessionsched, always stopped at the end).
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from sessionsched.backends import procs
from sessionsched.backends.local import ClusterError, LocalCluster
from sessionsched.backends.ports import free_port_in, port_free
from sessionsched.backends.spark_home import spark_home, spark_jars, spark_submit
from tests import wait_bounds
from tests.support.ports import worker_share

T = TypeVar("T")

def _port_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high)


# Agents sharing a machine each set their own range in SESSIONSCHED_TEST_PORTS ("LOW-HIGH").
# Each pytest-xdist worker chooses in a slice of it (``support.ports``).
_LOW, _HIGH = _port_range(os.environ.get("SESSIONSCHED_TEST_PORTS", "17000-17999"))
_SHARE = worker_share(range(_LOW, _HIGH + 1))
PORT_RANGE = (_SHARE.start, _SHARE.stop - 1)

SMALL = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    "spark.ui.port": "0",  # any free port: never Spark's default 4040
}
DYNAMIC = {
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true",
}

APP_SOURCE = '''"""Test app: ``app.py [--tasks N] [--task-s S] [--hold-s H] [--until PATH]
[--exit-code C] [--no-spark]``.

Runs jobs of N tasks that each sleep S seconds, again and again until H seconds have passed
and PATH exists (at least one job), prints ``SPARK_APP_ID <id>``, then exits with code C.
``--no-spark`` exits with C at once, without a SparkContext.
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--tasks", type=int, default=2)
p.add_argument("--task-s", type=float, default=1.0)
p.add_argument("--hold-s", type=float, default=0.0)
p.add_argument("--until", default=None)
p.add_argument("--exit-code", type=int, default=0)
p.add_argument("--no-spark", action="store_true")
a = p.parse_args()
if not a.no_spark:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    print(f"SPARK_APP_ID {sc.applicationId}", flush=True)
    task_s = a.task_s
    end = time.time() + a.hold_s
    while True:
        sc.parallelize(range(a.tasks), a.tasks).map(lambda x: time.sleep(task_s) or x).count()
        if time.time() >= end and (a.until is None or os.path.exists(a.until)):
            break
    spark.stop()
sys.exit(a.exit_code)
'''

JAVA_SOURCE = """
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public class SleepApp {
  public static void main(String[] args) throws Exception {
    long taskMs = args.length > 0 ? Long.parseLong(args[0]) : 1000;
    int tasks = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    int code = args.length > 2 ? Integer.parseInt(args[2]) : 0;
    JavaSparkContext sc = new JavaSparkContext(new SparkConf());
    System.out.println("SPARK_APP_ID " + sc.sc().applicationId());
    List<Integer> items = new ArrayList<>();
    for (int i = 0; i < tasks; i++) items.add(i);
    sc.parallelize(items, tasks).map(x -> { Thread.sleep(taskMs); return x; }).count();
    sc.stop();
    if (code != 0) System.exit(code);
  }
}
"""


# Every bound is written as sized on a quiet machine and given SLACK times over: the project's CI
# has run the suite 2.8x slower than a quiet machine, a Spark app's first executors 2 min after
# its start where 15-20 s is usual. A bound only says when to give up: a wait that passes takes
# no longer for it. ``wait_bounds`` still reports each wait against the bound as written, so
# one that comes close on a quiet machine shows before it fails on a slow one.
SLACK = 3


def wait_until(condition: Callable[[], T], timeout_s: float = 15.0, what: str = "the condition",
               interval_s: float = 0.05) -> T:
    """Call ``condition`` until it returns something truthy, and return that. Fails the test
    after ``SLACK`` times ``timeout_s`` seconds."""
    start = time.monotonic()
    deadline = start + SLACK * timeout_s
    while True:
        value = condition()
        if value:
            wait_bounds.record(time.monotonic() - start, timeout_s, what)
            return value
        if time.monotonic() >= deadline:
            wait_bounds.record(time.monotonic() - start, timeout_s, what)
            pytest.fail(f"timed out after {SLACK * timeout_s:g}s waiting for {what}")
        time.sleep(interval_s)


def free_port(taken: set[int] = frozenset()) -> int:
    """A port of PORT_RANGE that is free now on 127.0.0.1."""
    ports = range(PORT_RANGE[0], PORT_RANGE[1] + 1)
    return free_port_in(random.sample(ports, len(ports)), taken)


def free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        ports.append(free_port(set(ports)))
    return ports


def master_ports() -> tuple[int, int, int]:
    """(master, rest, ui) ports, the REST port being the master's + 1 as ``cluster up`` does."""
    while True:
        port = free_port()
        if port + 1 > PORT_RANGE[1] or not port_free(port + 1):
            continue
        return port, port + 1, free_port({port, port + 1})


def wait_idle(cluster: LocalCluster, timeout_s: float = 60) -> None:
    """Wait until the cluster runs no application and no driver (what an earlier test
    started has wound down), so a test can count on the whole cluster."""
    from sessionsched.backends.master import MasterClient

    client = MasterClient(cluster.master_ui)
    try:
        def idle() -> bool:
            view = client.read()
            return (not view.master.active_apps and not view.executors
                    and all(d.exit_code is not None for d in view.master.drivers))

        wait_until(idle, timeout_s, "the test cluster to be idle")
    finally:
        client.close()


def stop_server_and_its_apps(server) -> None:
    """Stop a ``ServerProcess`` whose apps ran on a real cluster. Drivers run in their own
    sessions and outlive a stopped server (it adopts them on restart), so a test kills every
    live app through the API first, then stops the server."""
    import httpx

    from tests.support.http_client import HTTP

    if server.proc.poll() is None:
        try:
            for app in HTTP.get(f"{server.url}/api/v1/apps", timeout=10).json():
                if app["state"] in ("ACCEPTED", "STARTING", "RUNNING"):
                    HTTP.post(f"{server.url}/api/v1/apps/{app['id']}/kill", timeout=30)
        except httpx.HTTPError:
            pass
    server.stop()


def spark_env() -> dict[str, str]:
    """The environment for a spark-submit a test starts itself: loopback only."""
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}


def gpu_discovery_script(directory: Path, count: int) -> Path:
    """A GPU discovery script that prints ``count`` fixed addresses, "0" up: how a worker
    declares GPUs without any (``spark.worker.resource.gpu.discoveryScript``), as Spark's own
    tests do."""
    addresses = ", ".join(f'"{i}"' for i in range(count))
    script = directory / "gpus.sh"
    script.write_text(f"#!/bin/sh\necho '{{\"name\": \"gpu\", \"addresses\": [{addresses}]}}'\n")
    script.chmod(0o755)
    return script


def conf_args(conf: dict[str, str]) -> list[str]:
    return [arg for k, v in conf.items() for arg in ("--conf", f"{k}={v}")]


@contextlib.contextmanager
def spark_submit_process(args: list[str], log_path: Path) -> Iterator[subprocess.Popen]:
    """spark-submit ARGS outside sessionsched, in its own process group; the group is stopped
    when the block ends, however it ends."""
    with open(log_path, "ab") as log:
        popen = subprocess.Popen([spark_submit(), *args], stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, env=spark_env(),
                                 start_new_session=True)
    proc = procs.ProcessId(popen.pid, procs.start_ticks(popen.pid) or 0)
    try:
        yield popen
    finally:
        procs.stop_group(proc, grace_s=10.0)
        popen.wait(timeout=10)


@contextlib.contextmanager
def started_cluster(make: Callable[[], LocalCluster], attempts: int = 3) -> Iterator[LocalCluster]:
    """The cluster ``make`` builds, started; stopped by PID at the end however the test ends.
    ``make`` is called again (with ports chosen afresh) when a start fails: a port may be taken
    between choosing it and the master binding it."""
    last: ClusterError | None = None
    for _ in range(attempts):
        cluster = make()
        cluster.start_timeout_s *= SLACK  # its bound, as a wait's (SLACK)
        try:
            cluster.start()
        except ClusterError as e:
            last = e
            continue
        try:
            yield cluster
        finally:
            cluster.stop()
        return
    pytest.fail(f"could not start the test Spark cluster: {last}")


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("spark-cluster")

    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(directory, workers=1, cores=4, memory="4g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=180)

    with started_cluster(make) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def pyspark_app(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("apps") / "app.py"
    path.write_text(APP_SOURCE)
    return path


@pytest.fixture(scope="session")
def jvm_app_jar(tmp_path_factory) -> Path:
    """SleepApp compiled against pyspark's Spark jars, packed into a jar."""
    directory = tmp_path_factory.mktemp("jvm-app")
    source = directory / "SleepApp.java"
    source.write_text(JAVA_SOURCE)
    classes = directory / "classes"
    classpath = str(spark_jars(spark_home()) / "*")
    result = subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(source)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        pytest.fail(f"javac failed: {result.stderr.strip()[-500:]}")
    jar = directory / "sleep-app.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nMain-Class: SleepApp\n\n")
        for cls in sorted(classes.rglob("*.class")):
            z.write(cls, cls.relative_to(classes).as_posix())
    return jar
