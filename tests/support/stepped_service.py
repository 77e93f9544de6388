"""The service stepped by hand on a memory cluster, for the tests that do so (``test_cycles*``):
in-process (``create_app(..., run_cycles=False, clock=...)`` behind a TestClient), on a clock
of the test's own, one cycle at a time. Deterministic and fast: no Spark, no sleep.

``stepped_service(state_dir, cluster, cwd, clock, queues)`` opens one; a second one opened on
the same ``state_dir`` and ``cluster`` is the same scheduler restarted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.memory import MemoryBackend, MemoryCluster
from sessionsched.server.app import create_app
from tests.support.server_helpers import make_config

START_S = 1.0  # driver and executor start latency of the ``cluster`` fixture's cluster


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Stepped:
    """A service whose cycles the test runs, on a memory cluster that outlives it."""

    def __init__(self, client: TestClient, clock: Clock, cluster: MemoryCluster, cwd: Path):
        self.client = client
        self.service = client.app.state.service
        self.clock = clock
        self.cluster = cluster
        self.cwd = cwd

    def submit(self, name: str, priority: int = 5000, queue: str | None = None,
               **conf: str) -> str:
        argv = [f"--conf={k}={v}" for k, v in conf.items()] + ["job.py"]
        body = {"argv": argv, "cwd": str(self.cwd), "name": name, "priority": priority}
        if queue is not None:
            body["queue"] = queue
        r = self.client.post("/api/v1/apps", json=body)
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def cycle(self, after_s: float = 0.0) -> None:
        self.clock.now += after_s
        self.service.cycle()
        self.service.usage_thread.drain()  # the usage the cycle counted is on disk

    def until(self, app_id: str, state: str, step_s: float = 0.5, cycles: int = 100) -> dict:
        """Cycles (``step_s`` apart) until the app is in ``state``; its record then."""
        return self.until_true(lambda: (a := self.app(app_id))["state"] == state and a,
                               f"{app_id} {state}", step_s, cycles)

    def until_true(self, condition, what: str, step_s: float = 0.5, cycles: int = 100):
        """Cycles (``step_s`` apart) until ``condition()`` is truthy; that value."""
        for _ in range(cycles):
            value = condition()
            if value:
                return value
            self.cycle(step_s)
        pytest.fail(f"not {what} after {cycles} cycles")

    def app(self, app_id: str) -> dict:
        return self.client.get(f"/api/v1/apps/{app_id}").json()

    def events(self, app_id: str) -> list[dict]:
        return self.client.get(f"/api/v1/apps/{app_id}/events").json()

    def executors(self, *ids: str) -> tuple[int, ...]:
        return tuple(self.app(i)["executors"] for i in ids)

    def done(self, future):
        """Run cycles (no time passing) until the operation (a service call's future, or an
        HTTP request sent from another thread) is done: a priority change reaches the inbox
        only once the writer has committed it. Its result."""
        for _ in range(100):
            self.cycle()
            try:
                return future.result(timeout=0.1)
            except TimeoutError:
                continue
        pytest.fail("the operation was not done after 100 cycles")


@contextmanager
def stepped_service(state_dir: Path, cluster: MemoryCluster, cwd: Path, clock: Clock,
                    queues: list[dict], **sections) -> Iterator[Stepped]:
    """The app on ``cluster`` (a MemoryBackend over it), opened; ``cwd`` holds ``job.py``."""
    (cwd / "job.py").write_text("print('hello')\n")
    app = create_app(make_config(state_dir, queues=queues, **sections), MemoryBackend(cluster),
                     run_cycles=False, clock=clock)
    with TestClient(app) as client:
        yield Stepped(client, clock, cluster, cwd)
