"""Two real standalone clusters behind one scheduler (docs/operator/clusters.md): a
``sessionsched serve`` process with ``clusters: [a, b]`` (spill-over: a first), each a
``LocalCluster`` of one 2-core worker whose master keeps its state for a restart
(``recovery``), and client-mode PySpark apps whose one executor takes a whole worker.

1. Two such apps: one runs on a, the other on b, each in its own master's applications.
2. a's master is killed (SIGKILL; its worker and the app's executor live on): a is said
   unreachable; a new submission is launched on b (beside b's app, whose cores it gets when
   that app ends) and runs there; the app on a stays RUNNING (adopted, not failed, not
   launched anywhere again).
3. a's master starts again on its ports and takes its application back: a is reachable, the app
   on a is still RUNNING there, launched once (it ends there: by its work, or killed if a
   recovered driver is slow to work again). Nothing lost, nothing launched twice.
4. A notebook session (``sessionsched.session``, in a process of its own) asking for b: its
   driver connects to b's master, the one its cluster is (never the first cluster's).

Not the session's ``spark_cluster``: a master is killed here.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys

import httpx
import pytest

from sessionsched.backends.local import LocalCluster
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import (
    SMALL,
    conf_args,
    free_port,
    master_ports,
    spark_env,
    started_cluster,
    stop_server_and_its_apps,
    wait_until,
)
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

JVM_S = 180  # bound on a JVM start (a master, a driver with its executor) on 2 loaded cores
NOTICE_S = 60  # bound on the scheduler noticing a change of a cluster (a cycle is 100 ms)
WHOLE = {**SMALL, "spark.executor.cores": "2", "spark.cores.max": "2"}  # a worker's 2 cores
NOTEBOOK = """import sys
import sessionsched
spark = sessionsched.session("notebook", server=sys.argv[1], progress=False, conf={
    "spark.sessionsched.cluster": "b", "spark.executor.cores": "1",
    "spark.executor.memory": "512m", "spark.driver.memory": "512m",
    "spark.driver.host": "127.0.0.1", "spark.ui.enabled": "false"})
print("SESSION", spark.sessionsched.app_id, spark.sparkContext.master, flush=True)
print("SUM", spark.sparkContext.parallelize(range(4), 2).sum(), flush=True)
spark.stop()
"""


@pytest.fixture
def two(tmp_path):
    """Clusters a and b, started; stopped by PID at the end however the test ends."""

    def maker(name: str):
        def make() -> LocalCluster:
            port, rest_port, ui_port = master_ports()
            return LocalCluster(tmp_path / name, workers=1, cores=2, memory="2g", port=port,
                                ui_port=ui_port, rest_port=rest_port, start_timeout_s=JVM_S,
                                recovery=True)
        return make

    with contextlib.ExitStack() as stack:
        yield {name: stack.enter_context(started_cluster(maker(name))) for name in "ab"}


def app(server: ServerProcess, app_id: str) -> dict:
    return HTTP.get(f"{server.url}/api/v1/apps/{app_id}", timeout=10).json()


def submit_whole(server: ServerProcess, app_path, until, name: str) -> str:
    """A client-mode PySpark app of one 2-core executor, running until ``until`` exists."""
    argv = [*conf_args(WHOLE), str(app_path), "--tasks", "1", "--task-s", "1",
            "--until", str(until)]
    r = HTTP.post(f"{server.url}/api/v1/apps", timeout=30,
                   json={"argv": argv, "cwd": str(app_path.parent), "name": name})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def launches(server: ServerProcess, app_id: str) -> int:
    events = HTTP.get(f"{server.url}/api/v1/apps/{app_id}/events", timeout=10).json()
    return sum(e["kind"] == "launch" for e in events)


def reachable(server: ServerProcess) -> dict[str, bool]:
    """Each cluster's reachability as ``/metrics`` says it."""
    text = HTTP.get(f"{server.url}/metrics", timeout=10).text
    return {name: float(v) == 1.0 for name, v in re.findall(
        r'^sessionsched_clusters_reachable\{cluster="(\w+)"\} (\S+)$', text, re.M)}


def master_apps(cluster: LocalCluster, which: str = "activeapps") -> dict[str, str]:
    """The applications the (current) master lists as active (or ``which``): id -> state."""
    view = HTTP.get(f"{cluster.master_ui}/json/", timeout=10).json()
    return {a["id"]: a["state"] for a in view[which]}


def seen_by(server: ServerProcess, clusters: dict[str, LocalCluster]) -> str:
    """What the scheduler and the masters saw, for a failure's report: the server log's end,
    the apps, each master's applications."""
    out = [server.log_path.read_text(errors="replace")[-6000:]]
    reads = {"apps": f"{server.url}/api/v1/apps",
             **{f"master {n}": f"{c.master_ui}/json/" for n, c in clusters.items()}}
    for what, url in reads.items():
        try:
            out.append(f"{what}: {HTTP.get(url, timeout=10).text[:3000]}")
        except httpx.HTTPError as e:
            out.append(f"{what}: unreadable ({e})")
    return "\n".join(out)


def test_one_app_on_each_a_lost_master_sends_new_work_to_the_other_and_loses_nothing(
        two, pyspark_app, tmp_path):
    a, b = two["a"], two["b"]
    config = {
        "server": {"port": free_port(), "state_dir": str(tmp_path / "state"), "cycle_ms": 100},
        "clusters": [{"name": n, "backend": "standalone", "master": c.master_url,
                      "master_ui": c.master_ui} for n, c in two.items()],
        "placement": "spill",
        "queues": [{"name": "root", "queues": [{"name": "default"}]}],
    }
    flags = {n: tmp_path / f"{n}.done" for n in ("first", "second")}
    server = ServerProcess.start(config, tmp_path / "server")
    try:
        wait_until(lambda: reachable(server) == {"a": True, "b": True}, NOTICE_S,
                   "both clusters to be reachable")

        # 1. Two whole-cluster apps: one on each.
        first = submit_whole(server, pyspark_app, flags["first"], "first")
        # Its executor, not RUNNING: on a loaded machine its driver may be up for 5 s before
        # its job asks for one, and is then RUNNING as an idle driver that holds nothing (the
        # demand admission's rule), so a would still be free for the second.
        wait_until(lambda: app(server, first)["executors"] >= 1, JVM_S, "first's executor")
        second = submit_whole(server, pyspark_app, flags["second"], "second")
        wait_until(lambda: app(server, second)["state"] == "RUNNING", JVM_S, "second to run")
        spark_ids = {i: app(server, i)["spark_app_id"] for i in (first, second)}
        assert (app(server, first)["cluster"], app(server, second)["cluster"]) == ("a", "b")
        # Each in its own master's active apps only (its state there, RUNNING or WAITING for
        # more executors, is the master's own bookkeeping and may lag the executors).
        assert set(master_apps(a)) == {spark_ids[first]}
        assert set(master_apps(b)) == {spark_ids[second]}

        # 2. a's master dies; its worker and first's executor run on.
        os.kill(a.process("master").pid, signal.SIGKILL)
        wait_until(lambda: reachable(server) == {"a": False, "b": True}, NOTICE_S,
                   "a to be said unreachable")
        third = submit_whole(server, pyspark_app, flags["first"], "third")
        # b's cores are second's: third starts there beside it (its driver on this host) and
        # gets them when second ends; a, unreachable, is offered nothing.
        started = wait_until(lambda: (t := app(server, third))["state"] != "ACCEPTED" and t,
                             NOTICE_S, "third to be launched")
        assert started["cluster"] == "b", started
        # Its launch's audit row is written after the launch itself, not in the commit that
        # made it STARTING (service/carrying.py): waited for, then counted once.
        assert wait_until(lambda: launches(server, third), NOTICE_S, "third's launch row") == 1
        flags["second"].touch()
        wait_until(lambda: app(server, third)["state"] == "RUNNING", JVM_S,
                   "third to run once second ends")
        assert app(server, third)["cluster"] == "b"
        # second's cores free as its SparkContext stops, before its driver process has exited
        # and been seen to: third may run first.
        wait_until(lambda: app(server, second)["state"] == "FINISHED", NOTICE_S,
                   "second to be seen finished")
        after = app(server, first)
        assert (after["state"], after["cluster"]) == ("RUNNING", "a"), after

        # 3. a's master is back and takes its application back.
        a.start_master()
        wait_until(lambda: reachable(server)["a"], NOTICE_S, "a to be reachable again")
        # Recovered, it is WAITING (for executors beyond the one it kept) or RUNNING.
        wait_until(lambda: master_apps(a).get(spark_ids[first]) in ("WAITING", "RUNNING"),
                   JVM_S, "a's new master to take first back")
        assert app(server, first)["state"] == "RUNNING"
        flags["first"].touch()  # third may end, and first once it runs a job again
        wait_until(lambda: app(server, third)["state"] == "FINISHED", JVM_S, "third to finish")
        # first is ended here if it has not finished: whether a driver goes on working after
        # its master's recovery is Spark's part (a loaded run once saw it wait past 180 s).
        if app(server, first)["state"] == "RUNNING":
            HTTP.post(f"{server.url}/api/v1/apps/{first}/kill", timeout=30)
        wait_until(lambda: app(server, first)["state"] in ("FINISHED", "KILLED"), JVM_S,
                   "first to end")
        apps = {x["id"]: x for x in HTTP.get(f"{server.url}/api/v1/apps", timeout=10).json()}
        assert {i: (x["state"], x["cluster"]) for i, x in apps.items() if i != first} == {
            second: ("FINISHED", "b"), third: ("FINISHED", "b")}
        assert apps[first]["cluster"] == "a"
        assert {i: launches(server, i) for i in apps} == {first: 1, second: 1, third: 1}

        # 4. A notebook asking for b connects to b's master.
        script = tmp_path / "notebook.py"
        script.write_text(NOTEBOOK)
        done = subprocess.run([sys.executable, str(script), server.url], cwd=tmp_path,
                              env=spark_env(), capture_output=True, text=True, timeout=JVM_S)
        said = dict(line.split(" ", 1) for line in done.stdout.splitlines()
                    if line.startswith(("SESSION", "SUM")))
        assert done.returncode == 0 and said.get("SUM") == "6", done.stderr[-2000:]
        session_id, master = said["SESSION"].split()
        assert master == b.master_url
        wait_until(lambda: app(server, session_id)["state"] == "FINISHED", NOTICE_S,
                   "the session to end")
        assert app(server, session_id)["cluster"] == "b"
    except AssertionError:
        # Once in 32 quiet runs this test failed early, before a's master came back, and its
        # output was lost: a failure now shows what the scheduler and the masters saw.
        print(seen_by(server, two))
        raise
    finally:
        stop_server_and_its_apps(server)
