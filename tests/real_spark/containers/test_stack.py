"""The compose stack for real: images built from docker/, a master and two workers from the
`spark` image, the scheduler from `sessionsched`, driven from this host the way users drive
it — the host's own spark-submit against the scheduler's Spark REST port, and `sessionsched
submit`. Then the scheduler's container is SIGKILLed and started again."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from sessionsched.backends.spark_home import spark_submit
from tests.real_spark.containers.conftest import RunningStack, client_env
from tests.sparkcluster import SMALL, conf_args, wait_until
from tests.support.http_client import HTTP

# The first test also waits for the images (a cold build is minutes) and the stack to start.
pytestmark = [pytest.mark.containers, pytest.mark.timeout(1200)]

ONE_CORE = {**SMALL, "spark.cores.max": "1"}
PY_APP = '''import sys, time
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
n = spark.sparkContext.parallelize(range(4), 2).map(lambda x: time.sleep(0.5) or x).sum()
spark.stop()
sys.exit(0 if n == 6 else 3)
'''
APP_END_S = 300  # a JVM driver, then its executor, started on a loaded 2-core machine
SUBMIT_S = 120
DRIVER_ID = re.compile(r"driver-\d{14}-\d{4}")


@pytest.fixture(scope="module")
def apps(stack: RunningStack, jvm_app_jar) -> dict[str, str]:
    """The apps, in the directory the containers see at the same path."""
    jar = stack.apps_dir / "sleep-app.jar"
    shutil.copyfile(jvm_app_jar, jar)
    py = stack.apps_dir / "sum.py"
    py.write_text(PY_APP)
    for f in (jar, py):
        f.chmod(0o644)
    return {"jar": str(jar), "py": str(py)}


def rest_submit(stack: RunningStack, jar: str, name: str, queue: str, *app_args: str) -> str:
    """The host's spark-submit, cluster deploy mode, to the scheduler's Spark REST port."""
    conf = {**ONE_CORE, "spark.app.name": name, "spark.sessionsched.queue": queue,
            "spark.master.rest.enabled": "true"}
    result = subprocess.run(
        [spark_submit(), "--master", stack.rest_master, "--deploy-mode", "cluster",
         "--class", "SleepApp", *conf_args(conf), f"file:{jar}", *app_args],
        capture_output=True, text=True, timeout=SUBMIT_S, env=client_env())
    found = DRIVER_ID.search(result.stdout + result.stderr)
    assert result.returncode == 0 and found, result.stderr[-2000:]
    return found.group()


def sessionsched_submit(stack: RunningStack, py: str, queue: str, *wrapper: str,
                        timeout_s: float = SUBMIT_S) -> subprocess.CompletedProcess:
    """`sessionsched submit` from this host, run in the apps directory (the scheduler checks
    the working directory and the app file on its side of the mount)."""
    return subprocess.run(
        [sys.executable, "-m", "sessionsched.cli", "submit", "--server", stack.url,
         "--queue", queue, *wrapper, *conf_args(ONE_CORE), py],
        capture_output=True, text=True, timeout=timeout_s, env=client_env(),
        cwd=stack.apps_dir)


def state_of(stack: RunningStack, app_id: str) -> str:
    return stack.app(app_id)["state"]


def test_spark_submit_and_sessionsched_submit_run_to_finished(stack, apps):
    jvm = rest_submit(stack, apps["jar"], "container-jvm", "default", "500", "2", "0")
    # --wait follows the app and exits with its code; the id is the only stdout line.
    py = sessionsched_submit(stack, apps["py"], "default", "--wait", timeout_s=APP_END_S)
    assert py.returncode == 0, py.stderr[-2000:]
    py_id = py.stdout.strip()

    wait_until(lambda: state_of(stack, jvm) in ("FINISHED", "FAILED", "KILLED"), APP_END_S,
               "the REST-submitted JVM app to end", interval_s=1)
    jvm_app, py_app = stack.app(jvm), stack.app(py_id)
    assert (jvm_app["state"], jvm_app["exit_code"]) == ("FINISHED", 0)
    assert (py_app["state"], py_app["exit_code"]) == ("FINISHED", 0)
    # Both ran on the stack's Spark: the master in its container knows their applications.
    completed = {a["id"]: a["name"] for a in stack.master_json()["completedapps"]}
    assert completed.get(jvm_app["spark_app_id"]) == "container-jvm"
    assert py_app["spark_app_id"] in completed
    # The REST door answers status with the scheduler's id, as a Spark master would.
    status = HTTP.get(f"{stack.url}/v1/submissions/status/{jvm}", timeout=10).json()
    assert status["driverState"] == "FINISHED"


def test_a_killed_scheduler_container_loses_nothing(stack, apps):
    # Queue `one` runs one app at a time: a long JVM driver runs, a Python app waits.
    running = rest_submit(stack, apps["jar"], "container-long", "one", "600000", "1", "0")
    wait_until(lambda: stack.app(running)["executors"] >= 1, APP_END_S,
               "the long driver's first executor", interval_s=1)
    queued = sessionsched_submit(stack, apps["py"], "one")
    assert queued.returncode == 0, queued.stderr[-2000:]
    queued_id = queued.stdout.strip()
    # Queued: ACCEPTED, first in line (1-based; known from the next cycle's view), held by the
    # queue's max_running_apps.
    wait_until(lambda: (stack.app(queued_id)["state"], stack.app(queued_id)["position"])
               == ("ACCEPTED", 1), 30, "the second app queued first in line", interval_s=0.5)
    keys = ("id", "state", "queue", "priority", "position", "spark_app_id", "exit_code")
    before = {a["id"]: {k: a[k] for k in keys} for a in stack.apps()}
    driver_ids = {d["id"] for d in stack.master_json()["activedrivers"]}
    assert len(driver_ids) == 1

    scheduler = stack.stack.container("scheduler")
    scheduler.kill()  # SIGKILL: no clean shutdown
    scheduler.reload()
    assert scheduler.status == "exited"
    scheduler.start()
    wait_until(stack.healthy, 180, "the restarted scheduler container healthy", interval_s=1)

    after = {a["id"]: {k: a[k] for k in keys} for a in stack.apps()}
    assert after == before  # every app, its state, position, priority and Spark app id
    # The running driver was adopted, not launched again: still the master's only driver.
    assert {d["id"] for d in stack.master_json()["activedrivers"]} == driver_ids
    wait_until(lambda: stack.app(running)["executors"] >= 1, 60,
               "the adopted driver's executor seen again", interval_s=1)

    # spark-submit --kill through the scheduler; the queued app then runs to the end.
    killed = subprocess.run([spark_submit(), "--master", stack.rest_master, "--kill", running],
                            capture_output=True, text=True, timeout=SUBMIT_S,
                            env=client_env())
    assert killed.returncode == 0, killed.stderr[-2000:]
    wait_until(lambda: state_of(stack, running) == "KILLED", 120, "the long app KILLED")
    wait_until(lambda: state_of(stack, queued_id) in ("FINISHED", "FAILED", "KILLED"),
               APP_END_S, "the queued app to run and end", interval_s=1)
    assert (stack.app(queued_id)["state"], stack.app(queued_id)["exit_code"]) == ("FINISHED", 0)
