"""A real PostgreSQL server for tests, from the installed binaries (Debian's ``postgresql``).

``PgServer`` runs ``initdb`` into a directory of its own and starts ``postgres`` directly (its
PID is ours to stop), listening on 127.0.0.1 only, on a port of ``PORT_RANGE`` (the range this
project's machines reserve for it), with its Unix socket in its own directory. initdb refuses
to run as root, so as root the server runs as the ``postgres`` user the package creates.
``stop()`` stops it by PID (fast shutdown, then SIGKILL); ``start()`` again restarts it on the
same data, port and socket — a restart under a running client.

``fresh_database()`` makes an empty database for one test. The ``pg_server`` session fixture
(registered for every test by ``tests/conftest.py``) starts one server for the test session,
the first time a test asks for it, and stops it at the end, also when tests fail.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sessionsched.backends.ports import free_port_in
from tests.support.ports import worker_share

# The range this project's machines reserve for it, below the kernel's ephemeral ports (an
# outgoing connection may take one of those between the check and the bind);
# ``$SESSIONSCHED_PG_PORTS`` ("LOW-HIGH") picks another (agents sharing a machine).
# Each pytest-xdist worker chooses in a slice of it (``support.ports``): (low, high), half open.
_LOW, _HIGH = (int(p) for p in os.environ.get("SESSIONSCHED_PG_PORTS", "24000-24999").split("-", 1))
_SHARE = worker_share(range(_LOW, _HIGH))
PORT_RANGE = (_SHARE.start, _SHARE.stop)
START_TIMEOUT_S = 60.0  # a loaded 2-core machine
STOP_TIMEOUT_S = 30.0


def pg_bindir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb``."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.parent.name)])
    if not found:
        raise RuntimeError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): "
                           "`make test` installs Debian's postgresql package")
    return found[-1].parent


class PgServer:
    def __init__(self, port: int | None = None, base: Path | None = None):
        self.bindir = pg_bindir()
        # A free port drawn at random, not the first: test workers running in parallel each
        # start a server, and initdb runs between choosing the port and binding it.
        ports = range(*PORT_RANGE)
        self.port = port or free_port_in(random.sample(ports, len(ports)))
        self.base = Path(tempfile.mkdtemp(prefix="sessionsched-pg-", dir=base))
        self.data = self.base / "data"
        self.sockets = self.base / "sockets"
        self.log = self.base / "postgres.log"
        self._user = "postgres" if os.geteuid() == 0 else None
        self.proc: subprocess.Popen | None = None
        self._databases = 0

    @property
    def version(self) -> str:
        out = subprocess.run([self.bindir / "postgres", "--version"], capture_output=True,
                             text=True, check=True, timeout=30)
        return out.stdout.strip()

    def url(self, database: str = "postgres") -> str:
        """A plain ``postgresql://`` URL, as an operator would write it in ``server.db_url``."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        self.sockets.mkdir(parents=True)
        if self._user is not None:
            pw = pwd.getpwnam(self._user)
            for path in (self.base, self.sockets):
                os.chown(path, pw.pw_uid, pw.pw_gid)
        # trust on loopback: a throwaway server only this test session can reach.
        self._run([self.bindir / "initdb", "-D", self.data, "-U", "postgres", "-A", "trust",
                   "-E", "UTF8", "--locale=C.UTF-8", "--no-instructions", "--no-sync"])

    def start(self) -> None:
        """Start ``postgres`` and wait until it accepts connections."""
        log = open(self.log, "ab")  # noqa: SIM115 - the child keeps it
        try:
            self.proc = subprocess.Popen(
                self._as_user([self.bindir / "postgres", "-D", self.data, "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1",
                 "-c", f"unix_socket_directories={self.sockets}", "-c",
                 "max_connections=50"]),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            ready = subprocess.run(
                [self.bindir / "pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-t", "2"],
                capture_output=True, timeout=30)
            if ready.returncode == 0:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}: "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            if time.monotonic() >= deadline:
                self.stop()
                raise RuntimeError(f"postgres not ready after {START_TIMEOUT_S:g}s")
            time.sleep(0.1)

    def stop(self, immediate: bool = False) -> None:
        """Fast shutdown by PID (SIGINT: sessions are ended, open transactions rolled back, a
        checkpoint written), or with ``immediate`` SIGQUIT (no checkpoint: for a server whose
        data is thrown away); SIGKILL if it has not stopped in time."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGQUIT if immediate else signal.SIGINT)
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def remove(self) -> None:
        self.stop(immediate=True)
        shutil.rmtree(self.base, ignore_errors=True)

    def fresh_database(self) -> str:
        """A new empty database; its URL."""
        self._databases += 1
        name = f"test_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as c:
            c.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def _as_user(self, argv: list) -> list[str]:
        """``argv`` run as the postgres user when this is root, through ``setpriv`` (it execs:
        the PID is the server's). Not Popen's ``user=``: that makes Python fork the test
        worker whole instead of vfork-and-exec, and a worker that has run a Spark Connect
        client has gRPC's threads, whose fork handlers then ran in the child and crashed it
        (postgres "exited with -7", the log holding gRPC's epoll error)."""
        argv = [str(a) for a in argv]
        if self._user is None:
            return argv
        return ["setpriv", f"--reuid={self._user}", f"--regid={self._user}", "--init-groups",
                "--", *argv]

    def _run(self, argv: list) -> None:
        done = subprocess.run(self._as_user(argv), capture_output=True, text=True,
                              timeout=120, cwd=self.base)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(str(argv[0])).name} failed: {done.stderr.strip()}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server for the test session, stopped by PID at the end."""
    server = PgServer()
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()
