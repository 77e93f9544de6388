"""A committed submission and an agent's report of a new demand wake the scheduling cycle
(``inbox.Waker``): an app that can start now is launched in the cycle it arrives in, and a job
that just started is granted its executors, not at the next tick -- at most one woken cycle
per ``cycle_ms``, none while cycles are run by hand. On the memory cluster; the service cycles on
its own APScheduler here (the stepped service would hide the wake)."""

from __future__ import annotations

import random
import threading
import time

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger
from fastapi.testclient import TestClient

from sessionsched.backends.memory import MemoryBackend, MemoryCluster
from sessionsched.model import Resources
from sessionsched.server.app import create_app
from sessionsched.service.inbox import Waker, stop_cycles
from tests.support.server_helpers import make_config
from tests.support.stepped_service import Clock, stepped_service

QUEUES = [{"name": "root", "queues": [{"name": "default"}]}]
WAIT_S = 30.0  # a slow, loaded machine; the tick it must not wait for is an hour away


def wait_until(condition, what: str, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"not {what} after {timeout_s:g}s"
        time.sleep(0.02)
    return value


def test_a_submission_is_launched_by_the_cycle_it_wakes_not_by_the_next_tick(tmp_path):
    (tmp_path / "job.py").write_text("print('hello')\n")
    cluster = MemoryCluster(Resources(4, 8192), driver_slots=4)
    config = make_config(tmp_path / "state", queues=QUEUES, server={"cycle_ms": 200})
    with TestClient(create_app(config, MemoryBackend(cluster))) as client:
        service = client.app.state.service
        # The ticks an hour apart from now on: only a woken cycle can launch the app.
        service._scheduler.reschedule_job("cycle", trigger=IntervalTrigger(hours=1))
        r = client.post("/api/v1/apps", json={"argv": ["job.py"], "cwd": str(tmp_path),
                                              "name": "solo"})
        assert r.status_code == 201, r.text
        app_id = r.json()["id"]
        app = wait_until(lambda: (a := client.get(f"/api/v1/apps/{app_id}").json())["state"]
                         != "ACCEPTED" and a, "launched")
        assert app["state"] in ("STARTING", "RUNNING", "FINISHED")
        assert service.inbox.waker.woken == 1


def test_a_reported_demand_is_granted_by_the_cycle_it_wakes(tmp_path):
    (tmp_path / "job.py").write_text("print('hello')\n")
    # The memory cluster reports its own job's demand (1) as an agent would, once the driver
    # is up: on a loaded machine a cycle after that would grant 1, not the agent's 2. Its
    # driver never comes up here: the demand is the agent's alone.
    cluster = MemoryCluster(Resources(4, 8192), driver_slots=4, driver_start_s=3600.0)
    config = make_config(tmp_path / "state", queues=QUEUES, server={"cycle_ms": 10})
    with TestClient(create_app(config, MemoryBackend(cluster))) as client:
        service = client.app.state.service
        waker = service.inbox.waker
        service._scheduler.reschedule_job("cycle", trigger=IntervalTrigger(hours=1))
        app_id = client.post("/api/v1/apps", json={"argv": ["job.py"], "cwd": str(tmp_path),
                                                   "name": "solo"}).json()["id"]
        wait_until(lambda: client.get(f"/api/v1/apps/{app_id}").json()["state"] != "ACCEPTED",
                   "launched")
        agent = {"app_id": app_id, "control": "full"}
        held = client.post("/api/v1/agent/register", json=agent).json()["version"]
        wait_until(lambda: time.monotonic() - waker._woken_at > 0.01, "a cycle_ms later")
        report = client.post("/api/v1/agent/heartbeat", json={**agent, "demand": 2}).json()
        assert report["grant"] == 0  # answered at once; the cycle it woke decides

        def told() -> dict | None:
            answer = client.post("/api/v1/agent/watch", json={
                "app_id": app_id, "version": held, "wait_s": 0}).json()
            return answer if answer["grant"] else None

        assert wait_until(told, "granted")["grant"] == 2
        assert waker.woken == 2  # the submission's cycle, the demand's


def test_at_most_one_woken_cycle_per_cycle_ms_and_none_while_one_runs():
    clock = Clock()
    started, ended = threading.Semaphore(0), threading.Semaphore(0)
    go = threading.Event()

    def cycle():  # a woken cycle that runs until the test lets it end
        started.release()
        go.wait(WAIT_S)
        ended.release()

    scheduler = BackgroundScheduler(daemon=True)
    scheduler.start()
    try:
        waker = Waker(scheduler, cycle, cycle_s=0.2, clock=clock)
        assert not waker.wake()  # not armed: cycles are run by hand
        waker.arm()
        assert [waker.wake() for _ in range(3)] == [True, False, False]  # a burst at once
        assert started.acquire(timeout=WAIT_S)
        clock.now += 0.25
        assert not waker.wake()  # a cycle later, but the woken one still runs: the tick
        go.set()
        assert ended.acquire(timeout=WAIT_S)
        wait_until(lambda: not waker._busy, "the woken cycle done")
        assert waker.wake()  # done, and more than a cycle after the last wake: woken again
        assert ended.acquire(timeout=WAIT_S)
        wait_until(lambda: not waker._busy, "the woken cycle done")
        clock.now += 0.1
        assert not waker.wake()  # done, but less than a cycle after the last wake: the tick
        assert waker.woken == 2
    finally:
        go.set()
        scheduler.shutdown(wait=True)
    assert not waker.wake()  # the service stopped: nothing to wake


def test_a_stepped_service_wakes_nothing(tmp_path):
    cluster = MemoryCluster(Resources(4, 8192), driver_slots=4)
    with stepped_service(tmp_path / "state", cluster, tmp_path, Clock(), QUEUES) as s:
        app_id = s.submit("solo")
        assert s.service.inbox.waker.woken == 0 and s.app(app_id)["state"] == "ACCEPTED"
        s.cycle()  # the one cycle it arrives in launches it
        assert s.app(app_id)["state"] == "STARTING"


def test_stopping_while_a_wake_is_handed_out_kills_no_thread(monkeypatch):
    """``stop_cycles`` at every moment of a wake's hand-out: APScheduler's plain ``shutdown``
    killed its loop's thread with ``JobLookupError`` in about 3 % of these stops (62 of 2,000
    here), printed at the end of the runs that stopped a server."""
    died: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(repr(args.exc_value)))
    stop_at = random.Random(7)  # where in the hand-out the stop lands: spread over ~2 ms
    for _ in range(1000):
        scheduler = BackgroundScheduler(daemon=True)
        scheduler.start()
        waker = Waker(scheduler, lambda: None, cycle_s=0.0)
        waker.arm()
        assert waker.wake()
        time.sleep(stop_at.random() * 0.002)
        stop_cycles(scheduler, waker)
        assert not scheduler.running and not waker.wake()
    assert died == []
