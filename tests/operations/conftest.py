"""The operations port (``operations.port.Operations``) in-process, over the memory cluster,
its cycles stepped by the test on a clock of its own (``create_app(..., run_cycles=False)``):
every door's behaviour — who may, the limits, the waiting, the outcomes — checked once, here,
in milliseconds; the doors' own tests keep only their wire formats."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sessionsched.backends.memory import MemoryBackend, MemoryCluster
from sessionsched.config import ServerConfig
from sessionsched.config import tokens_file as tokens
from sessionsched.model import Resources
from sessionsched.operations import auth
from sessionsched.operations.outcomes import Outcome
from sessionsched.operations.port import Operations
from sessionsched.server.app import create_app

USERS = {"alice": "user", "bob": "user", "carol": "user", "dave": "user", "root": "admin"}
QUEUES = [{"name": "root", "queues": [{"name": "default"}, {"name": "etl"}]}]
TOKENS = {"mode": "tokens", "run_as_root": True}


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Port:
    """The port of a served app whose cycles the test runs; callers by name."""

    def __init__(self, client: TestClient, clock: Clock, cwd: Path, made: dict[str, str]):
        self.ops: Operations = client.app.state.ops
        self.service = self.ops.service
        self.clock = clock
        self.cwd = cwd
        self.made = made

    def caller(self, name: str | None) -> auth.Caller:
        """The caller a user's token names (None: no token); the admin with auth off."""
        out = self.ops.identify(self.made.get(name) if name else None)
        assert out.ok, out
        return out.value

    def agent(self, app_id: str) -> auth.Caller:
        out = self.ops.identify(self.ops.gate.secret_for(app_id))
        assert out.ok, out
        return out.value

    def run(self, operation: Coroutine[Any, Any, Outcome], cycles: bool = True) -> Outcome:
        """The operation awaited while the test steps a cycle every 10 ms (``cycles``), as
        the served scheduler would."""

        async def main() -> Outcome:
            task = asyncio.ensure_future(operation)
            while not task.done():
                await asyncio.sleep(0.01)
                if cycles and not task.done():
                    self.service.cycle()
            return task.result()

        return asyncio.run(main())

    def submit(self, who: str | None = None, caller: auth.Caller | None = None,
               **body: Any) -> Outcome:
        """``submit_argv`` of ``job.py`` by ``who`` (or ``caller``); ``body``: its fields."""
        args = {"conf": {}, "env": {}, "queue": None, "priority": None, "name": None, **body}
        argv = args.pop("argv", ["job.py"])
        cwd = args.pop("cwd", str(self.cwd))
        return self.run(self.ops.submit_argv(caller or self.caller(who), "test:1", argv, cwd,
                                             **args))

    def submitted(self, who: str | None = None, **body: Any) -> str:
        out = self.submit(who, **body)
        assert out.ok, out
        return out.value.id

    def cycle(self, after_s: float = 0.0) -> None:
        self.clock.now += after_s
        self.service.cycle()


@pytest.fixture
def port(tmp_path):
    """``port(auth=..., queues=..., **sections)``: a context giving a ``Port``; an ``auth``
    section turns tokens on (``TOKENS``, a tokens file naming ``USERS``) unless it names
    another ``mode``."""
    (tmp_path / "job.py").write_text("print('hello')\n")
    path = tmp_path / "tokens.json"
    made = {name: tokens.create(path, name, role) for name, role in USERS.items()}

    @contextmanager
    def start(auth: dict | None = None, queues: list | None = None,
              **sections: Any) -> Iterator[Port]:
        data: dict[str, Any] = {
            "server": {"state_dir": str(tmp_path / "state"), "cycle_ms": 50},
            "queues": queues or QUEUES, **sections}
        if auth is not None:
            data["auth"] = {**TOKENS, "tokens_file": str(path), **auth}
        cluster = MemoryCluster(Resources(4, 8192), driver_slots=4, driver_start_s=1.0,
                                executor_start_s=1.0, executor_idle_timeout_s=5, work_s=2)
        clock = Clock()
        app = create_app(ServerConfig.model_validate(data), MemoryBackend(cluster),
                         run_cycles=False, clock=clock)
        with TestClient(app) as client:
            yield Port(client, clock, tmp_path, made)

    return start
