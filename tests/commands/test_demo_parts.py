"""The demo's pure parts: its scheduler config is valid, its summary tells the order right,
and with two clusters its verdict holds only when each app ran on one cluster and both ran
apps. (The demo itself runs real Spark for a few minutes: `make demo`; on the memory backend,
in seconds, below, with one cluster and with two.)"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from sessionsched.client import App
from sessionsched.commands.demo import (
    BURST,
    DRIVER_SLOTS,
    _ordinal,
    _verdict,
    demo_config,
    summary_table,
)
from sessionsched.commands.demo_clusters import (
    cluster_verdict,
    local_entries,
    memory_entries,
    placements,
    start_clusters,
    with_clusters,
)
from sessionsched.config import ServerConfig


def test_demo_config_is_a_valid_server_config(tmp_path):
    cfg = ServerConfig.model_validate(
        demo_config("spark://127.0.0.1:1", "http://127.0.0.1:2", tmp_path)
    )
    leaves = {q.name: q for q in cfg.queue_tree().leaves()}
    assert set(leaves) == {"root.etl", "root.adhoc"}
    assert (leaves["root.etl"].policy.value, leaves["root.adhoc"].policy.value) == (
        "priority",
        "fairshare",
    )
    assert cfg.cluster.driver_slots == DRIVER_SLOTS
    assert {app.queue for app in BURST} == set(leaves)  # every demo app has its queue


def app(n: int, name: str, queue: str, priority: int, started_s: float | None, state="FINISHED",
        cluster: str | None = None, spark_app_id: str | None = None):
    def t(s):
        return None if s is None else f"2026-11-21T17:00:{s:06.3f}Z"

    placed = {} if cluster is None else {"cluster": cluster}  # as the API: only once placed
    return App.from_json(
        {
            **placed,
            "id": f"driver-20261121170000-000{n}",
            "name": name,
            "user": "u",
            "queue": queue,
            "priority": priority,
            "state": state,
            "position": None,
            "submitted_at": t(0.0),
            "started_at": t(started_s),
            "first_executor_at": None,
            "finished_at": t(started_s + 10) if started_s is not None else None,
            "exit_code": 0 if state == "FINISHED" else None,
            "executors": 0,
            "target": 0,
            "demand": 0,
            "spark_app_id": spark_app_id,
            "kind": "submit",
            "reason": "",
            "warnings": [],
        }
    )


def test_summary_orders_by_start_and_the_verdict_names_the_jump():
    # Submitted: daily, report, urgent (boosted); started: daily, urgent, report.
    apps = [
        app(1, "etl-daily", "root.etl", 5000, 1.0),
        app(2, "etl-report", "root.etl", 4000, 30.0),
        app(3, "etl-urgent", "root.etl", 9000, 20.0),
    ]
    demo = {a.name: d for d in BURST for a in apps if a.name == d.name}
    ids = {a.id: demo[a.name] for a in apps}
    console = Console(width=200, record=True)
    console.print(summary_table(apps, ids))
    rows = [line.split() for line in console.export_text().splitlines() if "etl-" in line]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("1", "1", "etl-daily"),
        ("2", "3", "etl-urgent"),
        ("3", "2", "etl-report"),
    ]
    assert _verdict(apps, ids) == (
        "etl-urgent was submitted 3rd overall with priority 1000, raised to 9000, "
        "and started 2nd in root.etl."
    )


def test_no_verdict_when_the_boosted_app_never_started():
    apps = [app(1, "etl-urgent", "root.etl", 1000, None, state="KILLED")]
    ids = {apps[0].id: next(d for d in BURST if d.boost)}
    assert _verdict(apps, ids) == ""


def test_ordinals():
    assert [_ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "101st",
    ]


def test_the_demo_runs_on_the_memory_backend_without_spark(tmp_path):
    # The whole demo, as `sessionsched demo --backend memory` runs it: the burst's sleeping
    # stages become the memory cluster's work, the boosted app jumps its queue, all end.
    from tests.support.cli_helpers import REPO, run_cli

    done = run_cli("demo", "--backend", "memory", "--keep", str(tmp_path / "demo"),
                   "--timeout", "120", cwd=REPO, timeout_s=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cluster: in memory (no Spark)" in done.stdout
    assert "etl-report     FAILED (exit code 3)" in done.stdout  # --exit-code 3, simulated
    assert "etl-urgent was submitted 5th overall with priority 1000, raised to 9000" in done.stdout
    assert not (tmp_path / "demo" / "cluster").exists()  # no Spark cluster was started


# --- two clusters ----------------------------------------------------------------------------


@pytest.mark.parametrize("entries", [
    memory_entries(),
    local_entries([SimpleNamespace(directory=Path("/tmp/d/cluster-a")),
                   SimpleNamespace(directory=Path("/tmp/d/cluster-b"))]),
], ids=["memory", "local"])
def test_two_cluster_config_is_valid_spill_one_slot_each(tmp_path, entries):
    cfg = ServerConfig.model_validate(with_clusters(demo_config(None, None, tmp_path), entries))
    registry = cfg.cluster_registry()
    assert [c.name for c in registry] == ["a", "b"]
    assert {c.driver_slots for c in registry} == {1}
    assert cfg.placement == "spill"
    if entries[0]["backend"] == "local":
        assert [c.dir for c in registry] == ["/tmp/d/cluster-a", "/tmp/d/cluster-b"]
    assert {q.name for q in cfg.queue_tree().leaves()} == {"root.etl", "root.adhoc"}


def _apps(*rows):
    """(name, cluster it names, started) -> apps, ids a1, a2, ..."""
    return [app(n, name, "root.etl", 5000, 1.0 if started else None,
                state="FINISHED" if started else "KILLED", cluster=where,
                spark_app_id=f"app-{n}" if started else None)
            for n, (name, where, started) in enumerate(rows, 1)]


ONE_EACH = (("x", "a", True), ("y", "b", True), ("z", None, False))


@pytest.mark.parametrize("rows, placed, masters, held, says", [
    (ONE_EACH, {1: ["a"], 2: ["b"]}, None, True,
     "each app ran on exactly one cluster (placed once, where it says): a ran 1 (x), "
     "b ran 1 (y); both clusters were used."),
    (ONE_EACH, {1: ["a"], 2: ["b"]}, {"a": {"app-1"}, "b": {"app-2"}}, True,
     "where it says, on its master alone): a ran 1 (x)"),
    ((("x", "a", True), ("y", "b", True), ("w", "b", True)), {1: ["a"], 2: ["b"], 3: ["b"]},
     {"a": {"app-1"}, "b": {"app-2", "app-3"}}, True, "on its master alone): a ran 1 (x), "
     "b ran 2 (y, w); both clusters were used."),
    (ONE_EACH, {1: ["a"], 2: ["a", "b"]}, None, False,
     "y on b was placed 2 times (a, b)"),
    (ONE_EACH, {1: ["a"], 2: ["a"]}, None, False, "y on b was placed 1 times (a)"),
    (ONE_EACH, {1: ["a"]}, None, False, "y on b was placed 0 times (never)"),
    ((("x", "a", True), ("y", "a", True)), {1: ["a"], 2: ["a"]}, None, False,
     "cluster b ran no app"),
    (ONE_EACH, {1: ["a"], 2: ["b"]}, {"a": {"app-1", "app-2"}, "b": {"app-2"}}, False,
     "y's application app-2 is on the masters of a, b, not b alone"),
    (ONE_EACH, {1: ["a"], 2: ["b"]}, {"a": {"app-1"}, "b": set()}, False,
     "on the masters of no cluster, not b alone"),
], ids=["held", "masters-agree", "two-on-b", "placed-twice", "placed-elsewhere", "never-placed",
        "b-idle", "on-two-masters", "on-no-master"])
def test_the_two_cluster_verdict(rows, placed, masters, held, says):
    apps = _apps(*rows)
    by_id = {apps[n - 1].id: where for n, where in placed.items()}
    ok, line = cluster_verdict(apps, by_id, masters)
    assert ok is held
    assert says in line
    assert line.startswith("two clusters: NOT as expected: ") is not held


def test_placements_read_the_placed_lines_of_each_trail():
    trails = {"d1": [{"kind": "state", "detail": "ACCEPTED -> STARTING"},
                     {"kind": "placed", "detail": "placed on cluster b (placement 1)"}],
              "d2": []}
    client = SimpleNamespace(events=lambda app_id: trails[app_id])
    assert placements(client, ["d1", "d2"]) == {"d1": ["b"], "d2": []}


def test_the_summary_has_a_cluster_column_only_behind_several():
    for clustered in (False, True):
        apps = [app(1, "etl-daily", "root.etl", 5000, 1.0, cluster="b" if clustered else None)]
        ids = {apps[0].id: BURST[0]}
        console = Console(width=200, record=True)
        console.print(summary_table(apps, ids))
        header, row = [line.split() for line in console.export_text().splitlines()[1:3]]
        assert ("CLUSTER" in header) is clustered
        assert row[4] == ("b" if clustered else "5000")


def test_each_cluster_is_handed_over_before_it_starts(tmp_path, monkeypatch):
    # b's start fails: a (started) and b (perhaps half started) are both in the caller's list,
    # which its cleanup stops, whatever interrupts the start.
    import sessionsched.backends.local as local

    class Fake:
        def __init__(self, directory, **worker):
            self.directory, self.master_url, self.master_ui = Path(directory), "spark://x", "u"

        def start(self):
            if self.directory.name == "cluster-b":
                raise KeyboardInterrupt

    monkeypatch.setattr(local, "LocalCluster", Fake)
    into, said = [], []
    with pytest.raises(KeyboardInterrupt):
        start_clusters(tmp_path, into, said.append)
    assert [c.directory.name for c in into] == ["cluster-a", "cluster-b"]
    assert said == ["cluster a: spark://x (UI u)"]


@pytest.mark.parametrize("failures, error, started", [
    # a port found free and taken before the master bound it: tried again on other ports
    ({"cluster-a": 1, "cluster-b": 2}, None, ["cluster-a", "cluster-b"]),
    ({"cluster-b": 3}, "cluster b did not start: rest port 1 on 127.0.0.1 is already in use",
     ["cluster-a", "cluster-b"]),
])
def test_a_cluster_that_lost_a_port_is_started_again(tmp_path, monkeypatch, failures, error,
                                                      started):
    import sessionsched.backends.local as local
    from sessionsched.cli import UserError

    tries: dict[str, int] = {}

    class Fake:
        def __init__(self, directory, **worker):
            self.directory, self.master_url, self.master_ui = Path(directory), "spark://x", "u"

        def start(self):
            name = self.directory.name
            tries[name] = tries.get(name, 0) + 1
            if tries[name] <= failures.get(name, 0):
                raise local.ClusterError("rest port 1 on 127.0.0.1 is already in use; "
                                         "choose another")

    monkeypatch.setattr(local, "LocalCluster", Fake)
    into: list = []
    if error is None:
        start_clusters(tmp_path, into, lambda line: None)
    else:
        with pytest.raises(UserError, match=error):
            start_clusters(tmp_path, into, lambda line: None)
    assert [c.directory.name for c in into] == started  # one each, the last tried


def test_the_demo_runs_on_two_memory_clusters(tmp_path):
    # `sessionsched demo --clusters 2 --backend memory`: apps spill over from a to b, the
    # summary names each app's cluster, and the verdict holds.
    from tests.support.cli_helpers import REPO, run_cli

    done = run_cli("demo", "--clusters", "2", "--backend", "memory", "--keep",
                   str(tmp_path / "demo"), "--timeout", "120", cwd=REPO, timeout_s=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "cluster a: in memory (no Spark)" in done.stdout
    assert "cluster b: in memory (no Spark)" in done.stdout
    assert " STARTING on a" in done.stdout and " STARTING on b" in done.stdout
    header = next(line for line in done.stdout.splitlines() if "SUBMITTED" in line)
    assert "CLUSTER" in header.split()
    assert "each app ran on exactly one cluster (placed once, where it says): a ran " in (
        done.stdout)
    assert "; both clusters were used." in done.stdout
    assert not list((tmp_path / "demo").glob("cluster*"))  # no Spark cluster was started


def test_the_verdict_claims_the_masters_only_for_the_apps_they_were_asked_of():
    # An app that ended before its SparkContext has no application for a master to list.
    apps = _apps(("x", "a", True), ("y", "b", True))
    apps[1] = App.from_json({**apps[1].raw, "spark_app_id": None})
    ok, line = cluster_verdict(apps, {apps[0].id: ["a"], apps[1].id: ["b"]},
                               {"a": {"app-1"}, "b": set()})
    assert ok and "(placed once, where it says, 1 of 2 seen on its master alone)" in line
