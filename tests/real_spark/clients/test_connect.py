"""The Spark Connect door (doors/connect) with the real Spark Connect client
(``SparkSession.builder.remote``) on a real cluster of the module's own (6 cores: 1:2 and 1:1
are whole numbers of 1-core executors, 2:4 and 3:3), one scheduler for the module:

- a session is an app of kind ``connect`` in its queue with the priority its connection string
  asked for; it runs DataFrame queries and a Python UDF in its own driver and ends FINISHED on
  ``spark.stop()``;
- two sessions in a ``fairshare`` queue at 5000 and 10000 split the executors 1:2, then 1:1
  after ``sessionsched priority``;
- a session opened while its queue is full waits (its first call is held and retried, not
  failed) and runs when another stops; a killed session's client gets an error naming the kill;
- a scheduler restart: the driver is adopted and the same client's calls go on (a call made
  while the scheduler is down is retried by the client and answered once it is back).

Between tests every live app is killed and the cluster left idle."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionsched.backends.local import LocalCluster
from sessionsched.commands._serverproc import ServerProcess
from tests.sparkcluster import (
    SLACK,
    free_ports,
    master_ports,
    started_cluster,
    stop_server_and_its_apps,
    wait_idle,
    wait_until,
)
from tests.support.http_client import HTTP

pytestmark = pytest.mark.cluster

SESSIONSCHED = str(Path(sys.executable).with_name("sessionsched"))
CORES = 6
# spark.* parameters of the connection string: the session's driver's Spark properties
SMALL = {"spark.executor.cores": "1", "spark.executor.memory": "512m",
         "spark.driver.memory": "512m", "spark.ui.port": "0"}
SA = {"admission": "stateaware"}  # the second session admitted beside one that wants it all


class Sched:
    """The module's scheduler; ``restart()`` stops it (its drivers live on) and starts it
    again on the same config and state."""

    def __init__(self, config: dict, workdir: Path):
        self.config, self.workdir = config, workdir
        self.connect_port = config["connect"]["port"]
        self.server = ServerProcess.start(config, workdir)

    @property
    def url(self) -> str:
        return self.server.url

    def restart(self, between=lambda: None) -> None:
        self.server.stop()
        between()
        self.server = ServerProcess.start(self.config, self.workdir)


@pytest.fixture(scope="module")
def connect_cluster(tmp_path_factory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("connect-cluster")

    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(directory, workers=1, cores=CORES, memory="6g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=180)

    with started_cluster(make) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def module_sched(connect_cluster, tmp_path_factory) -> Iterator[Sched]:
    """Queue ``adhoc`` runs two sessions at most; ``fair`` shares by priority, at once."""
    work = tmp_path_factory.mktemp("connect-sched")
    api_port, door_port = free_ports(2)
    config = {
        # The default cycle: each one reads the master, and at 100 ms the idle server and the
        # master it reads took ~10 % of a core, ~6 % at 200 (submissions and an agent's new
        # demand wake a cycle at once either way).
        "server": {"state_dir": str(work / "state"), "cycle_ms": 200, "port": api_port,
                   "heartbeat_s": 1.0},
        "cluster": {"backend": "standalone", "master": connect_cluster.master_url,
                    "master_ui": connect_cluster.master_ui},
        "queues": [{"name": "root", "queues": [
            {"name": "default"},
            {"name": "adhoc", "policy": "fairshare", "max_running_apps": 2},
            {"name": "fair", "policy": "fairshare", "reclaim_timeout": 0, **SA},
            {"name": "team", "policy": "fairshare", "connect_share_level": "user", **SA}]}],
        "connect": {"port": door_port, "hold_s": 30},
    }
    s = Sched(config, work / "server")
    try:
        yield s
    finally:
        stop_server_and_its_apps(s.server)


@pytest.fixture
def sched(module_sched, connect_cluster) -> Iterator[Sched]:
    """The module's scheduler; every app still live after the test is killed, the cluster
    left idle."""
    yield module_sched
    for app in apps(module_sched):
        if app["state"] in ("ACCEPTED", "STARTING", "RUNNING"):
            HTTP.post(f"{module_sched.url}/api/v1/apps/{app['id']}/kill", timeout=30)
    wait_until(lambda: all(a["state"] in ("FINISHED", "FAILED", "KILLED")
                           for a in apps(module_sched)), 120, "every app to end")
    wait_idle(connect_cluster, 120)


def remote(sched, **params):
    from pyspark.sql import SparkSession

    extra = "".join(f";{k}={v}" for k, v in {**SMALL, **params}.items())
    return SparkSession.builder.remote(f"sc://127.0.0.1:{sched.connect_port}/{extra}").create()


def apps(sched) -> list[dict]:
    return HTTP.get(f"{sched.url}/api/v1/apps", timeout=10).json()


def app_of(sched, session) -> dict:
    sid = session.client._session_id
    return next(a for a in apps(sched) if a["kind"] == "connect" and sid[:8] in a["name"])


def app(sched, app_id: str) -> dict:
    return HTTP.get(f"{sched.url}/api/v1/apps/{app_id}", timeout=10).json()


def ended(sched, app_id: str) -> dict:
    return wait_until(
        lambda: (a := app(sched, app_id))["state"] in ("FINISHED", "FAILED", "KILLED") and a,
        120, f"{app_id} to end")


def cli(sched, *args: str) -> str:
    out = subprocess.run([SESSIONSCHED, *args, "--server", sched.url], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_a_session_runs_queries_and_a_udf_and_ends_on_stop(sched):
    from pyspark.sql.functions import udf

    spark = remote(sched, user_id="alice", queue="adhoc", priority=7000)
    assert spark.range(100).selectExpr("sum(id) AS s").collect()[0].s == 4950

    @udf("int")
    def plus_one(x):
        return x + 1

    rows = spark.range(3).select(plus_one("id").alias("y")).collect()
    assert [r.y for r in rows] == [1, 2, 3]
    a = app_of(sched, spark)
    assert (a["user"], a["queue"], a["priority"], a["state"]) == \
        ("alice", "root.adhoc", 7000, "RUNNING")
    (line,) = [x for x in cli(sched, "apps").splitlines() if a["id"] in x]
    assert "connect" in line and "7000" in line, line
    spark.stop()
    assert ended(sched, a["id"])["state"] == "FINISHED"


# --- two sessions share the executors by priority ---------------------------------------------


def held(sched, *ids: str) -> tuple[int, ...]:
    return tuple(app(sched, i)["executors"] for i in ids)


def settle(sched, ids, expected, timeout_s: float, what: str) -> None:
    """The apps hold ``expected`` executors, and still do 3 s later (converged, not passing)."""
    def converged():
        if held(sched, *ids) != expected:
            return False
        time.sleep(3)
        return held(sched, *ids) == expected
    wait_until(converged, timeout_s, what, interval_s=0.5)


def busy_query(spark, release: Path) -> int:
    """12 one-row tasks of a Python UDF, each waiting until ``release`` exists: the session
    asks for 12 executors until the test lets its tasks end. The sum of the ids."""
    from pyspark.sql.functions import udf

    path = str(release)

    @udf("long")
    def when_released(x):
        import os
        import time
        deadline = time.time() + 600
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.2)
        return x

    df = spark.range(0, 12, 1, 12).select(when_released("id").alias("x"))
    return df.selectExpr("sum(x) AS s").collect()[0].s


def paced_query(spark, marks: Path, tasks: int, task_s: float) -> int:
    """``tasks`` one-row tasks of a Python UDF, each ``task_s`` long, each leaving a file in
    ``marks`` as it starts: ``POOL.START_TIME.UNIQUE`` (its job's fair scheduler pool). The
    sum of the ids."""
    from pyspark.sql.functions import udf

    where = str(marks)

    @udf("long")
    def paced(x):
        import os
        import time
        import uuid

        from pyspark import TaskContext
        pool = TaskContext.get().getLocalProperty("spark.scheduler.pool")
        open(os.path.join(where, f"{pool}.{time.time():.3f}.{uuid.uuid4().hex}"), "w").close()
        time.sleep(task_s)
        return x

    df = spark.range(0, tasks, 1, tasks).select(paced("id").alias("x"))
    return df.selectExpr("sum(x) AS s").collect()[0].s


def both(*calls, timeout_s: float = 600) -> list:
    """The calls' results, run side by side in threads (one deadline for all: on this loaded
    2-core machine 36 one-second UDF tasks took 5 minutes); a call's exception is raised."""
    got: dict[int, object] = {}

    def run(i, call):
        try:
            got[i] = call()
        except Exception as e:  # noqa: BLE001 - raised again in the test's thread
            got[i] = e

    runs = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(calls)]
    for t in runs:
        t.start()
    deadline = time.monotonic() + SLACK * timeout_s
    for t in runs:
        t.join(max(0.0, deadline - time.monotonic()))
    assert len(got) == len(calls), f"{len(calls) - len(got)} call(s) still running after " \
        f"{SLACK * timeout_s:g}s"
    for value in got.values():
        if isinstance(value, Exception):
            raise value
    return [got[i] for i in range(len(calls))]


def test_two_sessions_in_a_fairshare_queue_split_1_to_2_then_1_to_1(sched, tmp_path):
    low = remote(sched, user_id="alice", queue="fair", priority=5000)
    high = remote(sched, user_id="bob", queue="fair", priority=10000)
    # a DataFrame query in each, at once (the two drivers start side by side)
    assert both(lambda: low.range(10).selectExpr("sum(id) AS s").collect()[0].s,
                lambda: high.range(20).filter("id % 2 = 0").count()) == [45, 10]
    a, b = app_of(sched, low)["id"], app_of(sched, high)["id"]
    release = tmp_path / "release"
    got: dict[str, int] = {}
    runs = [threading.Thread(target=lambda n=n, s=s: got.setdefault(n, busy_query(s, release)),
                             daemon=True) for n, s in (("low", low), ("high", high))]
    for t in runs:
        t.start()
    # weights 5000:10000 of 6 cores: 2 and 4
    settle(sched, (a, b), (2, 4), 180, "the sessions at 2 and 4 executors")
    assert "10000" in cli(sched, "priority", a, "10000")
    # 10000:10000: 3 and 3 (the higher one's 4th executor reclaimed, its task retried)
    settle(sched, (a, b), (3, 3), 120, "the sessions at 3 and 3 executors")
    release.touch()
    for t in runs:
        t.join(SLACK * 180)
    assert got == {"low": 66, "high": 66}  # sum(range(12)): every task counted once
    low.stop()
    high.stop()
    assert [ended(sched, i)["state"] for i in (a, b)] == ["FINISHED", "FINISHED"]


# --- share level user: a user's sessions in one driver, a fair scheduler pool each -------------


def test_a_users_second_session_joins_her_driver_in_a_pool_of_its_own(sched, tmp_path):
    first = remote(sched, user_id="alice", queue="team")
    assert first.range(10).count() == 10
    started = time.monotonic()
    second = remote(sched, user_id="alice", queue="team")
    assert second.range(7).count() == 7  # at once: her driver is up
    joined_s = time.monotonic() - started
    (a,) = [x for x in apps(sched) if x["kind"] == "connect" and x["state"] == "RUNNING"]
    assert a["user"] == "alice" and app_of(sched, first)["id"] == a["id"]
    pools = [f"session-{s.client._session_id[:8]}" for s in (first, second)]
    # both sessions' jobs at once, 36 tasks of 1 s each, each job in its session's pool
    marks = tmp_path / "started"
    marks.mkdir()
    assert both(lambda: paced_query(first, marks, 36, 1.0),
                lambda: paced_query(second, marks, 36, 1.0)) == [630, 630]  # sum(range(36))
    starts = sorted((float(f.name.split(".", 1)[1].rsplit(".", 1)[0]), f.name.split(".")[0])
                    for f in marks.iterdir())
    assert {pool for _, pool in starts} == set(pools)
    # From the later job's first task on, the fair scheduler gives freed slots to both pools
    # in turn; FIFO would have started every task of the earlier job before the later's first.
    # The window: the starts from then on, as many as the earlier job still had to start (at
    # most 12), which FIFO would fill with the earlier pool alone. (Counted from the later
    # job's start, not from the first task: on a loaded machine one session's query reaches
    # the driver seconds after the other's.)
    began = {p: min(t for t, q in starts if q == p) for p in pools}
    later = max(pools, key=began.__getitem__)
    (earlier,) = set(pools) - {later}
    after = [pool for t, pool in starts if t >= began[later]]
    window = after[:min(after.count(earlier), 12)]
    assert len(window) >= 6, f"the two jobs hardly overlapped: {after}"
    assert min(window.count(p) for p in pools) >= len(window) // 4, window
    first.stop()
    assert app(sched, a["id"])["state"] == "RUNNING"  # her second session still uses it
    second.stop()
    assert ended(sched, a["id"])["state"] == "FINISHED"
    assert joined_s < 30, joined_s


# --- waiting, killing --------------------------------------------------------------------------


def test_a_session_waits_while_its_queue_is_full_and_a_killed_one_is_told(sched):
    first = remote(sched, user_id="alice", queue="adhoc")
    second = remote(sched, user_id="bob", queue="adhoc")
    assert both(lambda: first.range(10).count(), lambda: second.range(20).count()) == [10, 20]
    third = remote(sched, user_id="carol", queue="adhoc")
    got: dict = {}
    waiter = threading.Thread(target=lambda: got.setdefault("n", third.range(30).count()),
                              daemon=True)
    waiter.start()
    queued = wait_until(lambda: next((a for a in apps(sched) if a["user"] == "carol"
                                      and a["state"] == "ACCEPTED"
                                      and a["position"] is not None), None), 60,
                        "the third session's app to wait in its queue (a cycle placed it)")
    assert queued["position"] == 1
    waiter.join(5)  # held (hold_s 30), then retried by the client: waiting, not failed
    assert waiter.is_alive() and not got
    first.stop()
    waiter.join(SLACK * 240)
    assert got == {"n": 30}

    killed = app_of(sched, second)
    cli(sched, "kill", killed["id"])
    assert ended(sched, killed["id"])["state"] == "KILLED"
    with pytest.raises(Exception) as e:
        second.range(5).count()
    assert "was killed" in str(e.value) and killed["id"] in str(e.value)
    third.stop()


# --- a scheduler restart -----------------------------------------------------------------------


def test_a_restarted_scheduler_adopts_the_driver_and_the_session_goes_on(sched):
    spark = remote(sched, user_id="alice", queue="adhoc", priority=6000)
    assert spark.range(10).count() == 10
    before = app_of(sched, spark)
    got: dict = {}
    during = threading.Thread(target=lambda: got.setdefault("n", spark.range(40).count()),
                              daemon=True)
    # a call while the scheduler is down: UNAVAILABLE, which the client retries
    sched.restart(between=lambda: (during.start(), during.join(2)))
    during.join(SLACK * 120)
    assert got == {"n": 40}
    after = wait_until(lambda: (a := app(sched, before["id"]))["state"] == "RUNNING" and a,
                       60, "the driver adopted")
    assert (after["kind"], after["user"], after["priority"]) == ("connect", "alice", 6000)
    assert spark.range(5).selectExpr("sum(id) AS s").collect()[0].s == 10
    spark.stop()
    assert ended(sched, before["id"])["state"] == "FINISHED"
