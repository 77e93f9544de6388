"""The crash loop: ``sessionsched serve`` (memory backend) killed -9 again and again while four
clients submit through Spark's REST protocol, each time at a named point of the fault hook
(``service/faulthook.py``) -- a submission committed but not answered, a cycle's launches
committed but not carried out, drivers launched but their handles not recorded -- then run
to the end without faults. Asserted: every acknowledged submission is there exactly once
(and no request was stored twice), no driver was launched twice, nothing is stuck (every app
ends)."""

from __future__ import annotations

import collections
import itertools
import random
import threading
import time
from pathlib import Path

import httpx
import pytest

from sessionsched.backends.memory import WORK
from sessionsched.commands._serverproc import ServerProcess, ServerStartError
from sessionsched.service.faulthook import POINTS
from sessionsched.store import Store
from tests.sparkcluster import wait_until
from tests.support.http_client import HTTP

pytestmark = pytest.mark.crashloop

ROUNDS = 12  # each point four times
PACE_S = 0.3
TERMINAL = {"FINISHED", "FAILED", "KILLED"}


def config(state_dir: Path) -> dict:
    return {
        "server": {"state_dir": str(state_dir), "cycle_ms": 50},
        "cluster": {"backend": "memory", "workers": 4, "cores": 8, "memory": "32g",
                    "driver_start_s": 0.2, "executor_start_s": 0.2},
        # At most 8 running: in-cluster drivers never take every core from the executors.
        "queues": [{"name": "root", "queues": [
            {"name": "default", "admission": "none", "max_running_apps": 8}]}],
    }


class Clients:
    """Four clients submitting one app at a time, each request named uniquely, each at most
    ``PACE_S`` apart (so the apps of all rounds can run to their end in the last one)."""

    def __init__(self) -> None:
        self.acked: list[tuple[str, str]] = []  # (submission id, request name)
        self.sent = 0
        self._names = itertools.count()
        self._lock = threading.Lock()

    def run(self, url: str, n: int = 4) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._client, args=(url,), daemon=True)
                   for _ in range(n)]
        for t in threads:
            t.start()
        return threads

    def _client(self, url: str) -> None:
        with httpx.Client(base_url=url, timeout=10) as http:
            while True:
                with self._lock:
                    name = f"req-{next(self._names)}"
                    self.sent += 1
                body = {"action": "CreateSubmissionRequest", "appResource": "file:/opt/a.jar",
                        "mainClass": "Main", "clientSparkVersion": "4.0.1",
                        "sparkProperties": {"spark.app.name": name, WORK: "0.3"}}
                try:
                    r = http.post("/v1/submissions/create", json=body)
                except httpx.TransportError:
                    return  # the server is gone
                time.sleep(PACE_S)  # pacing the load, not waiting for anything
                if r.status_code == 200 and r.json().get("success"):
                    with self._lock:
                        self.acked.append((r.json()["submissionId"], name))


@pytest.mark.timeout(300)
def test_kills_at_the_fault_points_lose_nothing_and_launch_nothing_twice(tmp_path,
                                                                          monkeypatch):
    state_dir = tmp_path / "state"
    fault_log = tmp_path / "faults.log"
    monkeypatch.setenv("SESSIONSCHED_FAULT_LOG", str(fault_log))
    rng = random.Random(10)
    clients = Clients()
    killed_at: list[str] = []
    for i in range(ROUNDS):
        point = POINTS[i % len(POINTS)]
        at = rng.randint(5, 40) if point == "submit-committed" else rng.randint(1, 6)
        monkeypatch.setenv("SESSIONSCHED_FAULT_KILL", f"{point}:{at}")
        try:
            server = ServerProcess.start(config(state_dir), tmp_path / f"run-{i}")
        except ServerStartError as e:  # killed at its point while starting: a crash too
            assert "exited with code -9" in str(e), e
            killed_at.append(point)
            continue
        threads = clients.run(server.url)
        try:
            server.proc.wait(30)  # until the hook kills it
            killed_at.append(point)
        except Exception:  # noqa: BLE001 - the point was not reached: kill -9 it ourselves
            server.proc.kill()
            server.proc.wait(10)
            killed_at.append("none")
        for t in threads:
            t.join(15)
    assert killed_at.count("none") <= 2, killed_at  # the hook, not luck, did the killing

    monkeypatch.delenv("SESSIONSCHED_FAULT_KILL")
    server = ServerProcess.start(config(state_dir), tmp_path / "last")
    try:
        def all_ended() -> list[dict] | None:
            apps = HTTP.get(f"{server.url}/api/v1/apps", timeout=10).json()
            return apps if all(a["state"] in TERMINAL for a in apps) else None

        apps = wait_until(all_ended, 90, "every app to end after the last restart")
    finally:
        server.stop()

    store = Store(f"sqlite:///{state_dir / 'sessionsched.db'}")
    try:
        stored = store.load_apps()
        submitted = collections.Counter(
            e.app_id for a in stored for e in store.events(a.id) if e.kind == "submitted")
        launch_rows = collections.Counter(
            e.app_id for a in stored for e in store.events(a.id) if e.kind == "launch")
    finally:
        store.close()
    by_id = {a.id: a for a in stored}
    acked = dict(clients.acked)
    assert len(acked) >= 50, (len(acked), killed_at)
    assert [i for i in acked if i not in by_id] == []  # nothing acknowledged is lost
    assert {i: by_id[i].name for i in acked} == acked  # each is the request acknowledged
    names = collections.Counter(a.name for a in stored)
    assert [n for n, c in names.items() if c > 1] == []  # no request stored twice
    assert len(stored) <= clients.sent
    assert set(submitted.values()) == {1} and len(submitted) == len(stored)
    assert {a["id"] for a in apps} == set(by_id) and all(a.state.terminal for a in stored)

    launched = collections.Counter(
        app_id for line in fault_log.read_text().splitlines()
        if line.startswith("launched ") for app_id in line.split()[1:])
    assert launched and max(launched.values()) == 1  # no driver launched twice
    assert max(launch_rows.values()) == 1
    assert set(launch_rows) <= set(launched)  # a recorded launch is a real one
    finished = [a for a in stored if a.state.value == "FINISHED"]
    assert finished and {a.id for a in finished} <= set(launched)
