"""Fixtures for the container tests: the images (built when their inputs changed) and the
compose stack (master, two workers, scheduler) on ports of 18000-18999, host network,
127.0.0.1 only. Docker must be running: ``make test`` starts it; here a missing daemon fails the
tests with one line rather than skipping them."""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import httpx
import pytest
import yaml

from sessionsched.backends import BackendError
from sessionsched.backends.master import MasterClient
from sessionsched.backends.ports import free_port_in
from tests.conftest import C1_ONLY
from tests.real_spark.containers.images import Images, ensure_images
from tests.real_spark.containers.stack import Stack, remove_leftovers, running_stack
from tests.sparkcluster import wait_until
from tests.support.http_client import HTTP

# Below the kernel's ephemeral ports (32768-60999): a port chosen here is bound only when the
# containers start, seconds later, and meanwhile a process another test starts on port 0 may
# be given it. 17000-17999 is the other tests' range (sparkcluster).
PORT_RANGE = range(18000, 19000)
STACK_START_S = 240  # three JVMs and the scheduler starting at once on a loaded 2-core machine
# Every JVM in the containers (the master, the workers, and the drivers and executors they
# and the scheduler launch: they inherit it) stops at the C1 compiler, as the JVMs on this host
# do (tests/conftest.py says why: ~40 % of their CPU, for the same Spark behaviour). Set by the
# tests only: compose.yaml, what users run, is left as it is.
CONTAINER_ENV = {"JAVA_TOOL_OPTIONS": C1_ONLY}


@dataclass(frozen=True)
class Ports:
    scheduler: int
    master: int
    master_rest: int
    master_ui: int
    worker_1_ui: int
    worker_2_ui: int

    @classmethod
    def free(cls) -> Ports:
        taken: set[int] = set()
        for _ in range(6):
            taken.add(free_port_in(random.sample(PORT_RANGE, len(PORT_RANGE)), taken))
        return cls(*sorted(taken))


@dataclass(frozen=True)
class RunningStack:
    stack: Stack
    ports: Ports
    apps_dir: Path  # the same path on this host and in the scheduler and workers

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports.scheduler}"

    @property
    def rest_master(self) -> str:
        """What spark-submit users pass as --master: the scheduler's Spark REST port."""
        return f"spark://127.0.0.1:{self.ports.scheduler}"

    @property
    def master_ui(self) -> str:
        return f"http://127.0.0.1:{self.ports.master_ui}"

    def app(self, app_id: str) -> dict:
        return HTTP.get(f"{self.url}/api/v1/apps/{app_id}", timeout=10).raise_for_status().json()

    def apps(self) -> list[dict]:
        return HTTP.get(f"{self.url}/api/v1/apps", timeout=10).raise_for_status().json()

    def master_json(self) -> dict:
        return HTTP.get(f"{self.master_ui}/json/", timeout=10).raise_for_status().json()

    def healthy(self) -> bool:
        """The scheduler answers and docker's HEALTHCHECK (the image's) says so too."""
        self.stack.check_running()
        container = self.stack.container("scheduler")
        container.reload()
        return container.attrs["State"].get("Health", {}).get("Status") == "healthy"


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env(timeout=300)
        client.ping()
    except docker.errors.DockerException as e:
        pytest.fail(f"the Docker daemon is not reachable (make test starts dockerd): {e}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def images(docker_client) -> Images:
    built = ensure_images(docker_client)
    how = "cached" if built.built_s is None else f"built in {built.built_s:.0f}s"
    print(f"\nimages {built.spark}, {built.sessionsched}: {how}", file=sys.stderr)
    return built


def server_config(ports: Ports) -> dict:
    """Queue `one` admits one app at a time: the second waits, so a restart has a queued app
    to keep."""
    return {
        "server": {"host": "127.0.0.1", "port": ports.scheduler,
                   "state_dir": "/var/lib/sessionsched", "cycle_ms": 200},
        "cluster": {"backend": "standalone", "master": f"spark://127.0.0.1:{ports.master}",
                    "master_ui": f"http://127.0.0.1:{ports.master_ui}", "driver_slots": 2},
        "queues": [{"name": "root", "queues": [
            {"name": "one", "max_running_apps": 1}, {"name": "default"}]}],
    }


@pytest.fixture(scope="module")
def stack(request, docker_client, images) -> Iterator[RunningStack]:
    remove_leftovers(docker_client)
    ports = Ports.free()
    # Readable by the containers' users (spark, sessionsched), unlike pytest's 0700 tmp dirs.
    apps_dir = Path(tempfile.mkdtemp(prefix="sessionsched-apps-"))
    apps_dir.chmod(0o755)
    config = apps_dir / "sessionsched.yaml"
    config.write_text(yaml.safe_dump(server_config(ports)))
    env = {
        "SESSIONSCHED_TAG": images.tag,
        "SESSIONSCHED_PORT": str(ports.scheduler),
        "SESSIONSCHED_CONFIG": str(config),
        "SESSIONSCHED_APPS": str(apps_dir),
        "SPARK_MASTER_PORT": str(ports.master),
        "SPARK_MASTER_REST_PORT": str(ports.master_rest),
        "SPARK_MASTER_WEBUI_PORT": str(ports.master_ui),
        "SPARK_WORKER_1_WEBUI_PORT": str(ports.worker_1_ui),
        "SPARK_WORKER_2_WEBUI_PORT": str(ports.worker_2_ui),
        "SPARK_WORKER_CORES": "2",
        "SPARK_WORKER_MEMORY": "2g",
    }
    try:
        with running_stack(docker_client, uuid.uuid4().hex[:8], env, CONTAINER_ENV) as started:
            running = RunningStack(started, ports, apps_dir)
            try:
                wait_until(lambda: _alive_workers(running) == 2, STACK_START_S,
                           "the master and its 2 workers")
                wait_until(running.healthy, STACK_START_S, "the scheduler container healthy")
            except BaseException:
                _print_logs(running)
                raise
            failed = request.session.testsfailed
            yield running
            if request.session.testsfailed > failed:
                _print_logs(running)
    finally:
        shutil.rmtree(apps_dir, ignore_errors=True)


def _print_logs(running: RunningStack) -> None:
    """What the containers and the apps' driver logs say, for a failed test's report."""
    for service in running.stack.containers:
        print(f"--- {service}\n{running.stack.logs(service)}", file=sys.stderr)
    try:
        for app in running.apps():
            log = HTTP.get(f"{running.url}/api/v1/apps/{app['id']}/log",
                            params={"tail": 40}, timeout=10).text
            print(f"--- {app['id']} {app['name']} {app['state']}\n{log}", file=sys.stderr)
    except httpx.HTTPError as e:
        print(f"--- apps: {e}", file=sys.stderr)


def _alive_workers(running: RunningStack) -> int:
    """Read as the scheduler reads the master: a master not answering yet, or answering its
    HTML page (Spark's UI listens before its pages are attached, the root page before
    /json/: CI, twice), is not up yet."""
    running.stack.check_running()
    client = MasterClient(running.master_ui)
    try:
        return len(client.read_master().alive_workers())
    except BackendError:
        return 0
    finally:
        client.close()


def client_env() -> dict[str, str]:
    """The environment for spark-submit and sessionsched run on this host. No PYSPARK_PYTHON:
    `sessionsched submit` forwards it, and this host's Python is not in the containers."""
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env
