"""The demo's pure parts: its scheduler config is valid, its summary tells the order right.
(The demo itself runs real Spark for a few minutes: `make demo`; on the memory backend, in
seconds, below.)"""

from __future__ import annotations

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


def app(n: int, name: str, queue: str, priority: int, started_s: float | None, state="FINISHED"):
    def t(s):
        return None if s is None else f"2026-11-21T17:00:{s:06.3f}Z"

    return App.from_json(
        {
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
            "spark_app_id": None,
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
