"""The example of docs/operator/simulator.md ("An example from real logs"): the event logs
real Spark wrote in examples/eventlogs/logs (examples/eventlogs/make_logs.py; no Spark
needed here) still make examples/eventlogs/day.yaml, and ``simulate --compare`` of it under
fifo.yaml and fairshare.yaml shows the two small apps behind the big one finishing sooner
under ``fairshare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessionsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/eventlogs"


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the workload's header names the config as given


def test_the_logs_make_the_committed_workload(at_root, tmp_path, capsys):
    out = tmp_path / "day.yaml"
    assert main(["workload", "from-eventlogs", f"{EXAMPLE}/logs", "-o", str(out), "--config",
                 f"{EXAMPLE}/fifo.yaml", "--cluster", "workers=1,cores=4,memory=4g"]) == 0
    assert capsys.readouterr().err == f"{out}: 3 app(s)\n"
    assert out.read_text() == (ROOT / EXAMPLE / "day.yaml").read_text()


def test_fairshare_finishes_the_small_apps_sooner(at_root, capsys):
    assert main(["simulate", "--compare", f"{EXAMPLE}/day.yaml", f"{EXAMPLE}/day.yaml",
                 "--config-a", f"{EXAMPLE}/fifo.yaml", "--config-b", f"{EXAMPLE}/fairshare.yaml",
                 "--json", "-"]) == 0
    figures = json.loads(capsys.readouterr().out)["compare"]
    gains = {r["name"]: r for r in figures["gains"]}
    assert sorted(gains) == ["dashboard", "report"]
    for r in gains.values():  # about 80 s under fifo, about half under fairshare
        assert r["completion_b"] < 0.6 * r["completion_a"], r
    assert [r["name"] for r in figures["losses"]] == ["nightly-etl"]
    # Their drivers launch at once under both (8 driver slots): they wait for executors.
    wait = figures["queues"]["root.default"]
    assert wait["b"]["mean_wait"] == wait["a"]["mean_wait"] < 1
    assert figures["summary"]["fairness_jain"]["b"] > figures["summary"]["fairness_jain"]["a"]
