"""A scheduler (``sessionsched serve``) run as a child process on a free 127.0.0.1 port, for the
demo and for tests that need a real server. Not a command itself.

The child gets its own process session, so a Ctrl-C in the terminal reaches only the parent,
which then stops things in the right order (apps first, then the server). It is stopped by its
PID only: SIGTERM, then SIGKILL if it has not gone within the timeout.
"""

from __future__ import annotations

import copy
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from ..backends.ports import free_port

_TRIES = 3  # starts of a server whose port was taken before it bound it (``start``)


class ServerStartError(RuntimeError):
    """The server did not come up; ``str()`` is one line: why, its log's last line, the log."""


def last_log_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


@dataclass
class ServerProcess:
    proc: subprocess.Popen
    url: str
    config_path: Path
    log_path: Path
    verify: ssl.SSLContext | bool = True

    @classmethod
    def start(cls, config: dict, workdir: Path, ready_timeout_s: float = 60.0,
              pick_port: Callable[[], int] = free_port) -> ServerProcess:
        """Write ``config`` (a server YAML as a dict; ``server.port``, unless given, is set to
        a free port of ``pick_port``) into ``workdir`` and start ``sessionsched serve`` on it;
        return once it answers.

        A port found free is bound by the server only later, and an outgoing connection of
        any process may take it meanwhile (its local port drawn from the same range): a
        server that then finds its port in use is started again on another, twice at most."""
        given = (config.get("server") or {}).get("port")
        log_path = workdir / "server.log"
        attempt = 1
        while True:
            seen = log_path.stat().st_size if log_path.exists() else 0
            try:
                return cls._start(config, workdir, ready_timeout_s, given or pick_port())
            except ServerStartError:
                with open(log_path, "rb") as log:
                    log.seek(seen)
                    taken = b"address already in use" in log.read()
                if given or not taken or attempt == _TRIES:
                    raise
            attempt += 1

    @classmethod
    def _start(cls, config: dict, workdir: Path, ready_timeout_s: float,
               port: int) -> ServerProcess:
        workdir.mkdir(parents=True, exist_ok=True)
        config = copy.deepcopy(config)
        server = config.setdefault("server", {})
        server["host"] = "127.0.0.1"
        server["port"] = port
        config_path = workdir / "sessionsched.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        log_path = workdir / "server.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "sessionsched.cli", "serve", "--config", str(config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        scheme = "https" if server.get("tls") else "http"
        self = cls(proc, f"{scheme}://127.0.0.1:{server['port']}", config_path, log_path)
        if server.get("tls"):  # verified with its own (self-signed) certificate
            self.verify = ssl.create_default_context(cafile=server["tls"]["cert"])
        try:
            self.wait_ready(ready_timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        # One client for the whole wait: each builds a TLS context (~20 ms of CPU), the poll
        # itself ~1 ms.
        with httpx.Client(verify=self.verify, timeout=2) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise ServerStartError(
                        f"the scheduler exited with code {self.proc.returncode} while starting "
                        f"({last_log_line(self.log_path)!r}; log: {self.log_path})"
                    )
                try:
                    # health: open with auth on too
                    answer = client.get(f"{self.url}/api/v1/health")
                    if answer.status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
        raise ServerStartError(
            f"the scheduler did not answer at {self.url} within {timeout_s:g}s "
            f"({last_log_line(self.log_path)!r}; log: {self.log_path})"
        )

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """Stop the server by its PID (SIGTERM, then SIGKILL); its exit code."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout_s)
        return self.proc.returncode
