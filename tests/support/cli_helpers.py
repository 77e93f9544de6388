"""Helpers for tests that use the real ``sessionsched`` command and a real scheduler
(``sessionsched serve`` as a child process on a free 127.0.0.1 port, real SQLite in a temporary
state directory). The fixtures built on them are below (the folders that use them import them in
their conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from sessionsched.backends.ports import free_port
from sessionsched.commands._serverproc import ServerProcess

REPO = Path(__file__).resolve().parents[2]
SLEEP_TASKS = REPO / "examples" / "apps" / "sleep_tasks.py"
QUEUES = [
    {
        "name": "root",
        "queues": [
            {"name": "etl", "admission": "stateaware", "policy": "priority"},
            {"name": "adhoc", "admission": "stateaware", "policy": "fairshare"},
        ],
    }
]
# Variables that would make the CLI talk to another server or read another spark-defaults.
_CLEAN_ENV = ("SESSIONSCHED_SERVER", "SESSIONSCHED_TOKEN", "SPARK_CONF_DIR")


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
    env.update(extra)
    return env


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout_s: float = 60
) -> subprocess.CompletedProcess:
    """The real command in its own process: exit code, stdout and stderr as a user sees them."""
    return subprocess.run(
        [sys.executable, "-m", "sessionsched.cli", *args],
        cwd=cwd,
        env=env if env is not None else cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


@contextmanager
def offline_scheduler(directory: Path, **more):
    """A real scheduler whose cluster cannot be reached: submissions are accepted and queue,
    nothing is launched, so queue positions stay put while a test looks at them. ``more``:
    further sections of its config (``plans``)."""
    closed = free_port()
    config = {
        "server": {"state_dir": str(directory / "state"), "cycle_ms": 50},
        "cluster": {
            "backend": "standalone",
            "master": f"spark://127.0.0.1:{closed}",
            "master_ui": f"http://127.0.0.1:{closed}",
            "driver_slots": 1,
        },
        "defaults": {"queue": "root.etl"},
        "queues": QUEUES,
        **more,
    }
    server = ServerProcess.start(config, directory / "server")
    try:
        yield server
    finally:
        server.stop()


# Fixtures (re-exported by tests/commands/conftest.py; other directories import them).


@pytest.fixture
def offline_server(tmp_path):
    with offline_scheduler(tmp_path) as server:
        yield server


@pytest.fixture(scope="module")
def shared_offline_server(tmp_path_factory):
    """One offline scheduler for a module's tests that only read or are refused."""
    with offline_scheduler(tmp_path_factory.mktemp("shared")) as server:
        yield server


@pytest.fixture
def app_dir(tmp_path) -> Path:
    """A working directory with a tiny application file, ``job.py``."""
    d = tmp_path / "work"
    d.mkdir()
    (d / "job.py").write_text("print('hello')\n")
    return d


def gpu_memory_config(state: Path, workers: int, cores: int, memory: str, gpus: int,
                      leaves: list[dict]) -> dict:
    """A scheduler's config on a memory cluster of ``workers`` alike, each declaring ``gpus``
    GPUs, quick to start drivers and executors; its queues: ``leaves`` under root, the first
    the default."""
    return {
        "server": {"state_dir": str(state), "cycle_ms": 50},
        "cluster": {"backend": "memory", "driver_start_s": 0.2, "executor_start_s": 0.2,
                    "worker_groups": [{"count": workers, "cores": cores, "memory": memory,
                                       "resources": {"gpu": gpus}}]},
        "defaults": {"queue": f"root.{leaves[0]['name']}"},
        "queues": [{"name": "root", "queues": leaves}],
    }


# A memory-cluster app of up to two executors of 1 GPU each, each task taking a GPU, its work
# one stage of 2 tasks of 600 s: it holds its GPUs while the test looks (the executor-notes
# tests share it).
TWO_GPU_EXECUTORS = {"spark.executor.resource.gpu.amount": "1",
                     "spark.task.resource.gpu.amount": "1",
                     "spark.dynamicAllocation.maxExecutors": "2",
                     "spark.sessionsched.memory.work": "2x600"}
