"""Never twice across two clusters, with real processes: ``sessionsched serve`` leading two
``memory`` clusters on a real PostgreSQL store is ``kill -9``-ed three times in the middle of
a burst of submissions, a standby taking over each time (a new standby is started for the
next kill). Nothing acknowledged is lost, nothing is submitted twice, and no app is launched
twice across both clusters: each one placed (its cluster committed before its launch) and
launched at most once, on the cluster recorded for it. One app in five finds its cluster's
master unreachable at its first launch on each (``spark.sessionsched.memory.launchFailures``):
it is moved to the other cluster (``moved``, then placed again with its next attempt), or,
having left that one already, tried again where it is.

The memory clusters live in each server's process, so the drivers of a killed leader die with
it: what the new leader does is adopt each launched app on its recorded cluster only, find
its driver gone there and end it (``service/restore.py``), never launch it again. The leaders'
launches are counted outside them: each server appends every batch of drivers it launched to
one file (``SESSIONSCHED_FAULT_LOG``, ``service/faulthook.py``) before it records them."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from sessionsched.backends.memory import LAUNCH_FAILURES, WORK
from sessionsched.commands._serverproc import ServerProcess
from sessionsched.model import AppState
from sessionsched.service.restore import UNRECORDED
from sessionsched.service.watch import GONE
from sessionsched.store import Store
from tests.server.test_standby import health
from tests.sparkcluster import wait_until
from tests.support.cli_helpers import REPO, SLEEP_TASKS
from tests.support.http_client import HTTP

KILLS = 3
MAX_APPS = 150  # the burst's bound; it is stopped once the last takeover launched again
# Small clusters, short apps: a spills to b, and apps start and end through every round.
CLUSTER = {"backend": "memory", "workers": 1, "cores": 4, "driver_start_s": 0.1,
           "executor_start_s": 0.1, "work_s": 0.3}
PLACED = re.compile(r"placed on cluster (\S+) \(placement (\d+)\)")
FLAKY = {WORK: "1x1", LAUNCH_FAILURES: "1"}  # nothing started at its first try on each


def config(db_url: str, state_dir: Path) -> dict:
    return {
        "server": {"state_dir": str(state_dir), "cycle_ms": 100, "db_url": db_url,
                   "standby": True},
        "clusters": [{"name": "a", **CLUSTER, "driver_slots": 2},
                     {"name": "b", **CLUSTER, "driver_slots": 3}],
        "queues": [{"name": "root", "queues": [{"name": "default"}]}],
    }


def submit(url: str, name: str, conf: dict) -> str:
    """One native submission; its id once acknowledged (201), following a standby's redirect.
    Raises on anything else."""
    r = httpx.post(f"{url}/api/v1/apps", timeout=10, follow_redirects=True,
                   json={"argv": [str(SLEEP_TASKS)], "cwd": str(REPO), "name": name,
                         "conf": conf})
    if r.status_code != 201:
        raise RuntimeError(f"{r.status_code}: {r.text}")
    return r.json()["id"]


def launched_lines(path: Path) -> list[list[str]]:
    """Each batch of drivers a leader launched, as the ids it wrote, in the order written."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [line.split()[1:] for line in text.splitlines() if line.startswith("launched ")]


def test_three_leaders_killed_in_a_burst_over_two_clusters_launch_nothing_twice(
        pg_server, tmp_path, monkeypatch):
    db_url = pg_server.fresh_database()
    fault_log = tmp_path / "launched.log"
    monkeypatch.setenv("SESSIONSCHED_FAULT_LOG", str(fault_log))  # the servers inherit it
    started = time.monotonic()
    servers: list[ServerProcess] = []

    def start(n: int) -> ServerProcess:
        server = ServerProcess.start(config(db_url, tmp_path / f"s{n}"), tmp_path / f"s{n}")
        servers.append(server)
        return server

    try:
        leader = start(0)
        assert health(leader.url)["role"] == "leader"
        standby = start(1)
        wait_until(lambda: (h := health(standby.url)) and h["leader"] == leader.url, 30,
                   "the standby to learn who leads")

        acked: dict[str, str] = {}  # id -> name
        unsure: list[str] = []  # names whose answer was lost with a leader: never sent again
        target = [leader.url]
        stop = threading.Event()

        def client() -> None:
            i = 0
            while not stop.is_set() and i < MAX_APPS:
                name = f"burst-{i}"
                i += 1
                try:
                    conf = FLAKY if i % 5 == 0 else {WORK: "1x1"}
                    acked[submit(target[0], name, conf)] = name
                    time.sleep(0.03)  # about as fast as the clusters end them
                except (httpx.TransportError, RuntimeError):
                    unsure.append(name)
                    time.sleep(0.05)  # a takeover under way: 503, or nobody answers yet

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        kills: list[tuple[float, float]] = []  # (epoch of the kill, seconds to the takeover)
        for k in range(KILLS):
            # The leader is killed while it launches: drivers run on both clusters, apps wait.
            launches_before = len(launched_lines(fault_log))
            wait_until(lambda b=launches_before: len(launched_lines(fault_log)) >= b + 3, 60,
                       "the leader to launch three batches", interval_s=0.02)
            os.kill(leader.proc.pid, signal.SIGKILL)
            killed_at, killed_epoch = time.monotonic(), time.time()
            wait_until(lambda s=standby: (h := health(s.url)) and h["role"] == "leader", 10,
                       "the standby to take over", interval_s=0.02)
            kills.append((killed_epoch, time.monotonic() - killed_at))
            target[0] = standby.url
            assert leader.proc.wait(10) == -signal.SIGKILL
            leader = standby
            if k < KILLS - 1:
                standby = start(k + 2)
                wait_until(lambda s=standby, u=leader.url: (h := health(s.url))
                           and h["leader"] == u, 30, "the new standby to learn who leads")
        # The last leader launches too before the burst stops.
        launches_before = len(launched_lines(fault_log))
        wait_until(lambda: len(launched_lines(fault_log)) > launches_before, 30,
                   "the last leader to launch")
        stop.set()
        thread.join(30)

        def all_ended() -> list[dict] | None:
            apps = HTTP.get(f"{leader.url}/api/v1/apps", timeout=10).json()
            return apps if all(x["state"] in ("FINISHED", "FAILED", "KILLED")
                               for x in apps) else None

        wait_until(all_ended, 60, "every app to end", interval_s=0.2)
        store = Store(db_url)
        try:
            stored = {app.id: app for app in store.load_apps()}
            trails = {app_id: store.events(app_id) for app_id in stored}
        finally:
            store.close()
        wall_s = time.monotonic() - started
    finally:
        for server in servers:
            server.stop()

    # --- nothing lost, nothing submitted twice ---------------------------------------------
    assert set(acked) <= set(stored)  # every acknowledged submission is on disk
    names = [app.submission.name for app in stored.values()]
    assert len(names) == len(set(names))  # each submission once
    assert set(names) - set(acked.values()) <= set(unsure)  # the rest were in flight

    # --- launched at most once, across both clusters, where its cluster was recorded -------
    launched = Counter(app_id for batch in launched_lines(fault_log) for app_id in batch)
    assert set(launched) <= set(stored)
    assert max(launched.values()) == 1, launched.most_common(3)  # never twice, by any leader
    first_kill = kills[0][0]
    placed_on = Counter()
    outcomes = Counter()
    for app_id, app in stored.items():
        trail = trails[app_id]
        kinds = [e.kind for e in trail]
        placed = [PLACED.fullmatch(e.detail) for e in trail if e.kind == "placed"]
        moves = [e.detail for e in trail if e.kind == "moved"]
        launch_rows = [e for e in trail if e.kind == "launch"]
        assert len(launch_rows) <= 1, (app_id, trail)  # launched once at most
        assert app.state.terminal, app
        if launched[app_id] or launch_rows:
            assert placed, (app_id, trail)  # its cluster committed before its launch
        # Placed once, or again after each move off a cluster where nothing was started:
        # its attempts 1, 2, ... and each move naming the cluster it left, in order.
        assert [int(m[2]) for m in placed] == list(range(1, len(placed) + 1)), trail
        assert [m.split(":")[0] for m in moves] == [
            f"taken off cluster {m[1]}" for m in placed[:-1]], (app_id, trail)
        if len(placed) > 1:
            assert app.submission.conf.get(LAUNCH_FAILURES) == "1", (app_id, trail)
            outcomes["moved"] += 1
        if placed:  # last placed on the cluster the app's row records, before its launch
            assert app.cluster == placed[-1][1] in ("a", "b"), (app_id, app.cluster, trail)
            last = len(kinds) - 1 - kinds[::-1].index("placed")
            assert not launch_rows or last < kinds.index("launch"), trail
            placed_on[app.cluster] += 1
        if not placed:
            assert app.cluster is None and not launched[app_id], (app_id, trail)
        if app.state is AppState.FINISHED:  # ran to its end on one leader
            assert launched[app_id] == 1 and launch_rows, (app_id, trail)
            outcomes["finished"] += 1
        elif app.reason == GONE:  # its driver died with a killed leader's memory cluster
            assert launch_rows and first_kill <= app.finished_at, (app_id, trail)
            outcomes["gone"] += 1
        elif app.reason == UNRECORDED:  # killed between its launch decision and its record
            assert placed and not launch_rows, (app_id, trail)
            outcomes["unrecorded"] += 1
        else:
            pytest.fail(f"{app_id} ended {app.state.value}: {app.reason}")
    assert placed_on["a"] and placed_on["b"], placed_on  # both clusters launched
    assert outcomes["gone"] >= KILLS, outcomes  # each kill cut running drivers short
    assert outcomes["moved"], outcomes  # launches that started nothing went elsewhere
    assert all(s < 10 for _, s in kills), kills
    print(f"{len(stored)} apps ({len(acked)} acknowledged, {len(unsure)} unanswered), "
          f"{sum(launched.values())} launched (a {placed_on['a']}, b {placed_on['b']}), "
          f"{dict(outcomes)}; takeovers {', '.join(f'{s:.2f}s' for _, s in kills)} after "
          f"each kill -9; {wall_s:.1f}s in all")
