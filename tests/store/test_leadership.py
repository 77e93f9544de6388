"""Active/standby on a real PostgreSQL server: one leader, loss when its session is cut, and
takeover by a standby process within 10 s of the leader's ``kill -9``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from sessionsched.store import Store, Writer
from sessionsched.store.leadership import Leadership, NotLeader, lock_key
from tests.sparkcluster import wait_until
from tests.store import leader_proc

ROOT = Path(__file__).resolve().parents[2]


def lock_holders(url: str, key: int) -> list[int]:
    """PIDs of the server sessions holding the advisory lock ``key``."""
    with psycopg.connect(url, connect_timeout=10) as c:
        return [pid for (pid,) in c.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = ((%(k)s >> 32) & 4294967295)::oid "
            "AND objid = (%(k)s & 4294967295)::oid", {"k": key})]


def test_leadership_needs_postgresql():
    with pytest.raises(ValueError, match="active/standby needs a PostgreSQL store"):
        Leadership("sqlite:///x.db")


def test_one_leader_and_a_leader_whose_session_is_cut_has_lost(pg_server):
    url = pg_server.fresh_database()
    first, second = Leadership(url, check_s=0.2), Leadership(url, check_s=0.2)
    lost: list[str] = []
    try:
        assert first.try_acquire() and first.is_leader
        assert not second.try_acquire()
        assert not second.acquire(timeout_s=0.5)  # a standby waits; the lock stays taken
        assert len(lock_holders(url, lock_key("sessionsched"))) == 1
        store = Store(url)
        writer = Writer(store, before_commit=first.fence)
        writer.start()
        try:
            writer.submit(lambda s: Store.add_events(s, [])).result(30)  # the leader writes

            # The server ends the leader's session (what a restart or a cut network does) and
            # waits until it is gone. Before the leader has noticed, the fence keeps its
            # writes out.
            with psycopg.connect(url, autocommit=True) as c:
                for pid in lock_holders(url, lock_key("sessionsched")):
                    assert c.execute("SELECT pg_terminate_backend(%s, 10000)", [pid]).fetchone()[0]
            with pytest.raises(NotLeader, match="^state store unavailable: this scheduler no "
                                                "longer leads 'sessionsched'"):
                writer.submit(lambda s: Store.add_events(s, [])).result(30)
            first.keep(on_lost=lost.append)
            wait_until(lambda: lost, 10, "the leader to learn it lost")
            with pytest.raises(NotLeader, match="does not lead 'sessionsched' \\(lost: "):
                writer.submit(lambda s: Store.add_events(s, [])).result(30)
        finally:
            writer.stop()
            store.close()
        assert not first.is_leader and first.lost and "\n" not in lost[0]
        with pytest.raises(RuntimeError, match="compete again"):
            first.try_acquire()
        assert second.acquire(timeout_s=10) and second.is_leader
        second.release()  # a clean hand-over: the next one leads at once
        third = Leadership(url)
        try:
            assert third.try_acquire()
        finally:
            third.release()
    finally:
        first.release()
        second.release()


def test_the_standby_process_takes_over_within_10s_of_the_leaders_kill_9(pg_server):
    url = pg_server.fresh_database()
    procs: list[subprocess.Popen] = []
    lines: dict[int, list[str]] = {}

    def start() -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", leader_proc.__name__, url], cwd=ROOT,
                                stdout=subprocess.PIPE, text=True, start_new_session=True)
        procs.append(proc)
        out = lines.setdefault(proc.pid, [])
        threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True).start()
        return proc

    def said(proc: subprocess.Popen, what: str) -> int:
        return sum(1 for line in list(lines[proc.pid]) if line.startswith(what))

    try:
        leader = start()
        wait_until(lambda: said(leader, "leader"), 60, "the first process to lead")
        standby = start()
        wait_until(lambda: said(standby, "try") >= 3, 60, "the second to try three times")
        assert not said(standby, "leader")
        assert len(lock_holders(url, lock_key(leader_proc.NAME))) == 1

        os.kill(leader.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        wait_until(lambda: said(standby, "leader"), 10, "the standby to take over")
        takeover_s = time.monotonic() - killed_at
        print(f"takeover {takeover_s:.2f}s after kill -9")
        assert leader.wait(10) == -signal.SIGKILL
        assert len(lock_holders(url, lock_key(leader_proc.NAME))) == 1
        assert not said(standby, "lost")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
