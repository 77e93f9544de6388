"""Two ``sessionsched serve`` processes on one real PostgreSQL store: one leads, the other is a
standby that sends every client to the leader, and takes over within 10 s of the leader's
``kill -9`` while a client is submitting — nothing acknowledged lost, nothing twice, nothing
launched twice. The cluster is the memory backend (it lives in each server's process: the
drivers the leader ran die with it; ``test_standby_spark.py`` adopts real ones)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from sessionsched.backends.memory import WORK
from sessionsched.client import ApiError, SchedulerClient, Submission
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.config import tokens_file as tokens
from sessionsched.server.leader import LOCK_NAME
from sessionsched.service.restore import UNRECORDED
from sessionsched.service.watch import GONE
from sessionsched.store import Store
from sessionsched.store.leadership import Leadership, lock_key
from tests.sparkcluster import free_ports, wait_until
from tests.support.cli_helpers import REPO, SLEEP_TASKS, run_cli
from tests.support.http_client import HTTP

ENDED = ("FINISHED", "FAILED", "KILLED")


def ha_config(db_url: str, port: int, state_dir: Path) -> dict:
    return {
        "server": {"port": port, "state_dir": str(state_dir), "cycle_ms": 100,
                   "db_url": db_url, "standby": True},
        # Four drivers at once, each working about a second: most of a burst waits.
        "cluster": {"backend": "memory", "workers": 1, "cores": 4, "driver_slots": 4,
                    "driver_start_s": 0.2, "executor_start_s": 0.2, "work_s": 3},
        "queues": [{"name": "root", "queues": [{"name": "default"}]}],
    }


def health(url: str) -> dict | None:
    try:
        return HTTP.get(f"{url}/api/v1/health", timeout=5).json()
    except httpx.TransportError:
        return None


def submit(url: str, name: str) -> str:
    """One native submission; its id once acknowledged (201). Raises on anything else,
    following a standby's redirect as every client does."""
    r = httpx.post(f"{url}/api/v1/apps", timeout=10, follow_redirects=True,
                   json={"argv": [str(SLEEP_TASKS)], "cwd": str(REPO), "name": name,
                         "conf": {WORK: "1x1"}})
    if r.status_code != 201:
        raise RuntimeError(f"{r.status_code}: {r.text}")
    return r.json()["id"]


def usage_by_app(url: str) -> dict[str, dict]:
    r = HTTP.get(f"{url}/api/v1/usage", params={"by": "app"}, timeout=10)
    assert r.status_code == 200, r.text
    return {u["app"]: u for u in r.json()}


def test_the_standby_redirects_then_takes_over_after_the_leaders_kill_9(pg_server, tmp_path):
    db_url = pg_server.fresh_database()
    port_a, port_b = free_ports(2)
    a = ServerProcess.start(ha_config(db_url, port_a, tmp_path / "a"), tmp_path / "a")
    b = None
    try:
        assert health(a.url)["role"] == "leader" and health(a.url)["leader"] == a.url
        b = ServerProcess.start(ha_config(db_url, port_b, tmp_path / "b"), tmp_path / "b")
        seen = wait_until(lambda: (h := health(b.url)) and h["leader"] and h, 30,
                          "the standby to learn who leads")
        assert seen["status"] == "standby" and seen["role"] == "standby"
        assert seen["leader"] == a.url

        # --- what the standby answers ---------------------------------------------------
        first = submit(a.url, "before-0")
        r = HTTP.get(f"{b.url}/api/v1/apps/{first}?x=1", timeout=10)
        assert r.status_code == 307 and r.headers["location"] == f"{a.url}/api/v1/apps/{first}?x=1"
        r = httpx.post(f"{b.url}/api/v1/apps/{first}/priority", json={"priority": 7000},
                       timeout=10, follow_redirects=True)  # a write, through the standby
        assert r.status_code == 200 and r.json()["priority"] == 7000
        assert HTTP.get(f"{b.url}/v1/submissions/readyz", timeout=10).status_code == 503
        assert HTTP.get(f"{a.url}/v1/submissions/readyz", timeout=10).status_code == 200
        assert "sessionsched_leader 0.0" in HTTP.get(f"{b.url}/metrics", timeout=10).text
        assert "sessionsched_leader 1.0" in HTTP.get(f"{a.url}/metrics", timeout=10).text
        # Our CLI against the standby's address: the submission lands on the leader.
        done = run_cli("submit", "--server", b.url, str(SLEEP_TASKS), cwd=REPO)
        assert done.returncode == 0, done.stderr
        via_b = done.stdout.strip()
        done = run_cli("status", "--server", b.url, via_b, "--json", cwd=REPO)
        assert done.returncode == 0 and via_b in done.stdout, done.stderr

        # --- kill -9 the leader in the middle of a burst ----------------------------------
        acked: dict[str, str] = {first: "before-0", via_b: ""}
        unsure: list[str] = []  # names whose answer was lost with the leader
        stop = threading.Event()
        killed = threading.Event()
        first_ack_after_kill: list[float] = []

        def client() -> None:
            i = 0
            while not stop.is_set() and i < 200:
                name = f"burst-{i}"
                i += 1
                url = b.url if killed.is_set() else a.url
                try:
                    acked[submit(url, name)] = name
                    if killed.is_set() and not first_ack_after_kill:
                        first_ack_after_kill.append(time.monotonic())
                except (httpx.TransportError, RuntimeError):
                    unsure.append(name)  # may or may not be stored; never sent again
                    if killed.is_set():
                        time.sleep(0.05)  # the standby is taking over: 503, retry-after 1

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        wait_until(lambda: len(acked) >= 12, 60, "a dozen acknowledged submissions")

        def one_ended_with_executors() -> dict | None:
            usage = usage_by_app(a.url)
            return usage if any(u["state"] == "FINISHED" and u["held_core_s"] > 0
                                for u in usage.values()) else None

        # What apps used, as the leader had it, once one has ended with executors counted.
        usage_before = wait_until(one_ended_with_executors, 30, "an app to end with executors")
        os.kill(a.proc.pid, signal.SIGKILL)
        killed_at, killed_epoch = time.monotonic(), time.time()
        killed.set()
        led = wait_until(lambda: (h := health(b.url)) and h["role"] == "leader" and h, 10,
                         "the standby to take over", interval_s=0.02)
        takeover_s = time.monotonic() - killed_at
        assert led["leader"] == b.url and led["status"] in ("ok", "degraded")
        wait_until(lambda: first_ack_after_kill, 10, "a submission acknowledged by the new leader")
        # Our CLI given both addresses passes over the dead one.
        done = run_cli("status", "--server", f"{a.url},{b.url}", first, "--json", cwd=REPO)
        assert done.returncode == 0 and first in done.stdout, done.stderr
        stop.set()
        thread.join(30)
        first_ack_s = first_ack_after_kill[0] - killed_at
        print(f"takeover: leader role {takeover_s:.2f}s, first acknowledged submission "
              f"{first_ack_s:.2f}s after kill -9; {len(acked)} acknowledged, "
              f"{len(unsure)} unanswered")
        assert a.proc.wait(10) == -signal.SIGKILL

        # --- nothing lost, nothing twice, nothing launched twice, nothing stuck -------------
        def all_ended() -> list[dict] | None:
            apps = HTTP.get(f"{b.url}/api/v1/apps", timeout=10).json()
            return apps if all(x["state"] in ENDED for x in apps) else None

        apps = {x["id"]: x for x in wait_until(all_ended, 120, "every app to end",
                                                interval_s=0.2)}
        assert set(acked) <= set(apps)  # every acknowledged submission is there
        names = [x["name"] for x in apps.values() if x["name"].startswith("burst-")]
        assert len(names) == len(set(names))  # each once
        unacked = set(names) - set(acked.values())
        assert unacked <= set(unsure) and len(unacked) <= 1, unacked  # at most the one in flight
        store = Store(db_url)
        try:
            for app_id, app in apps.items():
                launches = [e for e in store.events(app_id) if e.kind == "launch"]
                if not launches:  # launched by the leader as it was killed, before its record
                    assert (app["state"], app["reason"]) == ("FAILED", UNRECORDED), app
                    continue  # ended, not launched a second time (service/restore.py)
                assert len(launches) == 1, (app_id, launches)  # launched once, never twice
                if app["state"] == "FAILED":  # its driver died with the leader's memory cluster
                    assert app["reason"] == GONE and launches[0].at < killed_epoch, app
                else:
                    assert app["state"] == "FINISHED", app  # run to its end
        finally:
            store.close()
        assert takeover_s < 10
        # Usage (docs/operator/usage.md) is the store's: the new leader shows what the old one
        # counted. An app that had ended keeps its figures exactly; one the kill cut short is
        # counted on from its stored levels to its end, so never less than before.
        usage_after = usage_by_app(b.url)
        for app_id, was in usage_before.items():
            now = usage_after[app_id]
            if was["state"] in ENDED:
                assert now == was, app_id
            else:
                assert now["held_core_s"] >= was["held_core_s"], app_id
                assert now["driver_core_s"] >= was["driver_core_s"], app_id
        # The hourly rollup lost nothing and counted nothing twice across the kill -9 and the
        # takeover: every app has ended, and once the meter wrote the last end the queues'
        # lines add up to the apps' (each app line rounded to the millisecond).
        def rolled_up() -> list[dict] | None:
            lines = HTTP.get(f"{b.url}/api/v1/usage", params={"by": "queue"}, timeout=10).json()
            return lines if sum(q["apps"] for q in lines) == len(usage_after) else None

        lines = wait_until(rolled_up, 30, "the queues' lines to count every app")
        for kind in ("held_core_s", "busy_core_s", "driver_core_s", "queued_s"):
            assert sum(q[kind] for q in lines) == pytest.approx(
                sum(u[kind] for u in usage_after.values()), abs=0.001 * len(usage_after)), kind
    finally:
        for server in (a, b):
            if server is not None:
                server.stop()


def test_a_standby_needs_postgresql_and_a_second_leader_is_refused(pg_server, tmp_path):
    done = run_cli("serve", "--standby", "--port", str(free_ports(1)[0]), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("--standby: a standby needs a PostgreSQL store shared "
                                        "with the leader (server.db_url: postgresql://...); "
                                        "SQLite serves one scheduler only"), done.stderr

    db_url = pg_server.fresh_database()
    port_a, port_b = free_ports(2)
    a = ServerProcess.start(ha_config(db_url, port_a, tmp_path / "a"), tmp_path / "a")
    try:
        config = ha_config(db_url, port_b, tmp_path / "b")
        config["server"]["standby"] = False
        with pytest.raises(Exception, match=f"another scheduler leads this store at {a.url} "
                                            r"\(host .*, pid \d+\); to run this one as its "
                                            r"standby, start it with --standby"):
            ServerProcess.start(config, tmp_path / "b")
        with SchedulerClient(a.url) as c:
            assert c.queues()  # the leader was not disturbed
        # A standby stops cleanly, without ever leading.
        b = ServerProcess.start(ha_config(db_url, port_b, tmp_path / "b2"), tmp_path / "b2")
        assert health(b.url)["role"] == "standby"
        b.stop()
        log = b.log_path.read_text()
        assert "Application shutdown complete" in log and "leading the store" not in log
        assert health(a.url)["role"] == "leader"
    finally:
        a.stop()


def test_a_token_goes_with_the_redirect_and_the_leader_applies_the_rules(pg_server, tmp_path):
    """With auth on, a client pointed at the standby is answered by the leader as itself:
    its token follows the 307 (``SchedulerClient`` follows it, not httpx, which would drop the
    header on the way to another host), and the leader's rules and refusals come back."""
    path = tmp_path / "tokens.json"
    made = {name: tokens.create(path, name, role)
            for name, role in (("alice", "user"), ("bob", "user"), ("root", "admin"))}
    db_url = pg_server.fresh_database()
    configs = []
    for port, name in zip(free_ports(2), "ab", strict=True):
        config = ha_config(db_url, port, tmp_path / name)
        config["auth"] = {"mode": "tokens", "tokens_file": str(path), "run_as_root": True}
        configs.append(config)
    a = ServerProcess.start(configs[0], tmp_path / "a")
    b = None
    try:
        b = ServerProcess.start(configs[1], tmp_path / "b")
        wait_until(lambda: (h := health(b.url)) and h["leader"] == a.url, 30,
                   "the standby to learn who leads")
        # Long enough to outlive the calls below on a loaded machine: a change of an ended
        # app's priority is a 409, not the rule this test is about.
        job = Submission(argv=(str(SLEEP_TASKS),), cwd=str(REPO), name="alices",
                         conf={WORK: "1x600"})
        with SchedulerClient(b.url, token=made["alice"]) as alice:
            app = alice.submit(job)
            assert (app.user, alice.app(app.id).user) == ("alice", "alice")
        with SchedulerClient(b.url, token=made["bob"]) as bob, \
                pytest.raises(ApiError) as refused:
            bob.set_priority(app.id, 6000)
        assert (refused.value.status, refused.value.detail) == (
            403, f"user bob may re-prioritise only their own apps; {app.id} is alice's")
        with SchedulerClient(b.url) as nobody, pytest.raises(ApiError) as refused:
            nobody.apps()
        assert refused.value.status == 401
        with SchedulerClient(b.url, token=made["root"]) as root:
            assert root.set_priority(app.id, 9000).priority == 9000
            said = [e["detail"] for e in root.audit(app.id)]
        # Who did it, as the leader saw them through the standby's redirect.
        assert said[0].startswith("submit submission by alice from 127.0.0.1:")
        assert said[1].startswith("Admin root updated the priority from 5000 to 9000 (from ")
        assert len(said) == 2  # bob's refused change left no trace
    finally:
        for server in (a, b):
            if server is not None:
                server.stop()


def lock_sessions(db_url: str) -> list[int]:
    """PostgreSQL sessions holding the schedulers' leadership lock."""
    key = lock_key(LOCK_NAME)
    with psycopg.connect(db_url, connect_timeout=10) as c:
        return [pid for (pid,) in c.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = ((%(k)s >> 32) & 4294967295)::oid "
            "AND objid = (%(k)s & 4294967295)::oid", {"k": key})]


def test_a_leader_rides_out_a_postgresql_restart_and_leads_on(pg_server, tmp_path):
    db_url = pg_server.fresh_database()
    a = ServerProcess.start(ha_config(db_url, free_ports(1)[0], tmp_path / "a"), tmp_path / "a")
    try:
        submit(a.url, "before")
        pg_server.stop()  # every session ends, the lock's too
        pg_server.start()
        # Writes come back by themselves once the lock is regained (nobody led in between).
        after = wait_until(lambda: _try_submit(a.url, "after"), 30,
                           "a submission acknowledged after the restart", interval_s=0.2)
        assert a.proc.poll() is None and health(a.url)["role"] == "leader"
        assert "leadership regained; nobody led in between" in a.log_path.read_text()
        assert len(lock_sessions(db_url)) == 1
        assert {x["id"] for x in HTTP.get(f"{a.url}/api/v1/apps", timeout=10).json()} >= {after}
    finally:
        a.stop()


def test_a_leader_that_another_replaced_while_its_lock_was_lost_stops(pg_server, tmp_path):
    db_url = pg_server.fresh_database()
    a = ServerProcess.start(ha_config(db_url, free_ports(1)[0], tmp_path / "a"), tmp_path / "a")
    other = Leadership(db_url, name=LOCK_NAME)
    try:
        # The server lets a vanished leader's session (and the lock) go within seconds.
        with other._engine.connect() as c:  # a connection made as the lock's is
            assert [c.exec_driver_sql(f"SHOW tcp_keepalives_{k}").scalar()
                    for k in ("idle", "interval", "count")] == ["5", "1", "3"]
        # Another scheduler led (and wrote) while its lock's session was cut: what that one
        # leaves behind is its announcement in the leader row.
        with psycopg.connect(db_url, autocommit=True) as c:
            c.execute("UPDATE leader SET url = 'http://127.0.0.1:1', since = since + 1")
            for pid in lock_sessions(db_url):
                assert c.execute("SELECT pg_terminate_backend(%s, 10000)", [pid]).fetchone()[0]
        # It stopped itself: SIGTERM to its own process, shut down in order (uvicorn then
        # re-raises the signal).
        assert a.proc.wait(30) == -signal.SIGTERM
        log = a.log_path.read_text()
        assert log.count("another scheduler led while the lock was lost: stopping") == 1
        assert "Application shutdown complete" in log.split("lock was lost")[1]
        assert not lock_sessions(db_url)
    finally:
        other.release()
        a.stop()


def _try_submit(url: str, name: str) -> str | None:
    try:
        return submit(url, name)
    except (httpx.TransportError, RuntimeError):
        return None
