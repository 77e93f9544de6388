"""Decayed fair share survives a restart, a ``kill -9`` and a takeover: the store
keeps each queue's and user's decayed usage (``engine.arbitration.decay``), the service puts
it back before its first cycle, and ``GET /api/v1/queues`` shows the same numbers before and
after (to within the decay of the seconds the restart took). The hourly usage rollup
(``GET /api/v1/usage?by=queue|user``, docs/operator/usage.md) too: the same figures after."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from sessionsched.backends.memory import WORK, MemoryCluster
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.model import Resources
from tests.sparkcluster import free_ports, wait_until
from tests.support.cli_helpers import REPO, SLEEP_TASKS
from tests.support.http_client import HTTP
from tests.support.stepped_service import Clock, stepped_service

HALF_LIFE_S = 600.0
ONE_CORE = {"spark.executor.cores": "1", "spark.executor.memory": "512m"}
TEAMS = [{"name": "root", "usage_half_life": HALF_LIFE_S, "queues": [
    {"name": "a", "reclaim_timeout": 0}, {"name": "b", "reclaim_timeout": 0}]}]
DEFAULTS = {"defaults": {"queue": "root.a"}}
TASK_S = 5.0  # long enough for usage the decay shows after a restart, short for the suite


def decayed(queues: list[dict]) -> dict[str, tuple[float | None, dict | None]]:
    return {q["name"]: (q["decayed_cores"], q["decayed_users"]) for q in queues}


def test_the_stepped_service_keeps_decayed_usage_across_a_restart(state_dir, tmp_path):
    cluster = MemoryCluster(Resources(6, 8192), driver_slots=4, driver_start_s=1.0,
                            executor_start_s=1.0, executor_idle_timeout_s=60)
    clock = Clock()
    with stepped_service(state_dir, cluster, tmp_path, clock, TEAMS, **DEFAULTS) as s:
        b = s.submit("b-long", queue="root.b", **ONE_CORE, **{WORK: "30x100000"})
        s.until_true(lambda: s.executors(b) == (6,), "B to take the whole idle cluster")
        for _ in range(20):  # 20 minutes of B holding the cluster, a cycle a minute
            s.cycle(60.0)
        before = decayed(s.client.get("/api/v1/queues").json())
    # 6 executors + the driver for two half-lives: about 7 x 3/4 = 5.25 cores.
    assert 4.5 < before["root.b"][0] < 6.0, before
    assert before["root.a"][0] == 0.0 and before["root"][0] == pytest.approx(before["root.b"][0])
    assert list(before["root.b"][1]) == [s.app(b)["user"]]  # per user: the one user

    with stepped_service(state_dir, cluster, tmp_path, clock, TEAMS, **DEFAULTS) as s:
        s.cycle()  # no time passed: the same numbers
        after = decayed(s.client.get("/api/v1/queues").json())
        for name, (cores, users) in before.items():
            assert after[name][0] == pytest.approx(cores, rel=1e-9), name
            assert (after[name][1] or {}) == pytest.approx(users or {}, rel=1e-9), name
        # The restored past still counts: A's newcomer gets more than B while B's is higher.
        a = s.submit("a-new", queue="root.a", **ONE_CORE, **{WORK: "30x100000"})
        s.until_true(lambda: s.executors(a)[0] >= 5, "A to get most of the cluster", step_s=1.0)
        assert s.executors(b)[0] <= 1


def serve_config(state_dir: Path, port: int, **server) -> dict:
    return {
        "server": {"port": port, "state_dir": str(state_dir), "cycle_ms": 100, **server},
        "cluster": {"backend": "memory", "workers": 1, "cores": 4, "driver_slots": 4,
                    "driver_start_s": 0.2, "executor_start_s": 0.2, "work_s": 3},
        "queues": TEAMS, **DEFAULTS,
    }


def queues_of(url: str) -> list[dict]:
    return HTTP.get(f"{url}/api/v1/queues", timeout=10, follow_redirects=True).json()


def burn_then_read(url: str) -> dict:
    """An app in root.b runs 4 one-core tasks of 5 s and ends; the decayed usage then."""
    r = HTTP.post(f"{url}/api/v1/apps", timeout=10, json={
        "argv": [str(SLEEP_TASKS)], "cwd": str(REPO), "name": "burn", "queue": "root.b",
        "conf": {**ONE_CORE, WORK: f"4x{TASK_S:g}"}})
    assert r.status_code == 201, r.text
    app_id = r.json()["id"]
    wait_until(lambda: HTTP.get(f"{url}/api/v1/apps/{app_id}", timeout=10).json()["state"]
               in ("FINISHED", "FAILED", "KILLED"), 120, "the app to end")
    # Ended: no usage any more, so the numbers only decay from here (by 2^(-s/600) a second).
    return decayed(queues_of(url))


def assert_kept(before: dict, after: dict) -> None:
    """Equal but for the decay of the seconds between the two reads (< 60 s: > 93 %)."""
    for name, (cores, users) in before.items():
        if cores is None:
            continue
        got = after[name][0]
        assert got is not None and 0.93 * cores <= got <= cores, (name, cores, got)
        for user, d in (users or {}).items():
            assert 0.93 * d <= after[name][1][user] <= d, (name, user)


def usage_settled(url: str) -> dict:
    """Once the ended app's last figures are written (the meter writes a moment after the
    cycle: by app and by queue then agree), the queue and user lines."""
    def get(by: str) -> list[dict]:
        return HTTP.get(f"{url}/api/v1/usage", params={"by": by}, timeout=10).json()

    def settled() -> dict | None:
        apps, queues = get("app"), {q["queue"]: q for q in get("queue")}
        held = queues.get("root.b", {}).get("held_core_s", -1.0)
        if abs(held - sum(a["held_core_s"] for a in apps)) > 0.01:
            return None
        return {"queue": queues, "user": {u["user"]: u for u in get("user")}}

    lines = wait_until(settled, 30, "the ended app's usage written")
    # 4 one-core tasks, seen a report late at most
    assert lines["queue"]["root.b"]["held_core_s"] >= 0.9 * 4 * TASK_S
    return lines


def _kill9(server: ServerProcess) -> None:
    if server.proc.poll() is None:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)


@pytest.mark.timeout(240)
def test_decayed_usage_survives_a_kill_9(tmp_path):
    (port,) = free_ports(1)
    config = serve_config(tmp_path / "state", port)
    server = ServerProcess.start(config, tmp_path / "first")
    try:
        before = burn_then_read(server.url)
        assert before["root.b"][0] > 0.01, before  # 5 cores x 5 s at a 600 s half-life
        usage_before = usage_settled(server.url)
    finally:
        _kill9(server)
    server = ServerProcess.start(config, tmp_path / "second")
    try:
        assert_kept(before, decayed(queues_of(server.url)))
        assert usage_settled(server.url) == usage_before
    finally:
        server.stop()


@pytest.mark.timeout(300)
def test_decayed_usage_survives_a_takeover(pg_server, tmp_path):
    db_url = pg_server.fresh_database()
    port_a, port_b = free_ports(2)
    a = ServerProcess.start(serve_config(tmp_path / "a", port_a, db_url=db_url, standby=True),
                            tmp_path / "a")
    b = None
    try:
        before = burn_then_read(a.url)
        assert before["root.b"][0] > 0.01, before
        usage_before = usage_settled(a.url)
        b = ServerProcess.start(serve_config(tmp_path / "b", port_b, db_url=db_url,
                                             standby=True), tmp_path / "b")
        wait_until(lambda: HTTP.get(f"{b.url}/api/v1/health", timeout=5).json()["leader"],
                   30, "the standby to learn who leads")
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        wait_until(lambda: HTTP.get(f"{b.url}/api/v1/health", timeout=5).json()["role"]
                   == "leader", 30, "the standby to take over")
        assert_kept(before, decayed(queues_of(b.url)))
        assert usage_settled(b.url) == usage_before
    finally:
        for server in (a, b):
            if server is not None:
                server.stop()
