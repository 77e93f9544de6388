"""A workload replayed under a server config (``sim/replay.py``) and two runs compared
(``sim/compare.py``): a small app submitted behind a big one waits for all of it under
``fifo`` and runs at once under ``fairshare``, and the figures say so."""

from __future__ import annotations

import pytest
import yaml
from sim_builders import BIG_AND_SMALL, app, one_queue, stage, workload

from sessionsched.config import ConfigError
from sessionsched.sim import simulate
from sessionsched.sim.compare import app_changes, compare
from sessionsched.sim.replay import replay


def files(tmp_path, workload: dict, *configs: dict):
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump(workload))
    paths = []
    for i, c in enumerate(configs):
        paths.append(tmp_path / f"c{i}.yaml")
        paths[-1].write_text(yaml.safe_dump(c))
    return w, paths


@pytest.fixture
def fifo_vs_fairshare(tmp_path):
    w, (fifo, fair) = files(tmp_path, BIG_AND_SMALL, one_queue("fifo"), one_queue("fairshare"))
    a, b = replay(w, fifo), replay(w, fair)
    return a, b, compare(simulate(a.workload), simulate(b.workload))


# (figure path, under fifo, under fairshare): the small app waits 63 s behind the big one
# under fifo (both in root.default: their queue root.etl is not in the configs' trees).
FIGURES = {
    "small app's completion": (("apps", "small"), 84.0, 14.0),
    "big app's completion": (("apps", "big"), 83.0, 95.0),
    "queue wait mean": (("queues", "root.default", "mean_wait"), 31.5, 0.0),
    "queue wait p95": (("queues", "root.default", "p95_wait"), 63.0, 0.0),
    "completion mean": (("queues", "root.default", "mean_completion"), 83.5, 54.5),
    "completion p95": (("queues", "root.default", "p95_completion"), 84.0, 95.0),
    "queued seconds in all": (("usage", "queued_s"), 63.0, 0.0),
    "makespan": (("summary", "makespan"), 94.0, 95.0),
    "completed": (("summary", "completed"), 2, 2),
}


def figure(figures: dict, path: tuple, side: str):
    kind, *rest = path
    if kind == "apps":
        row = next(r for r in figures["gains"] + figures["losses"] if r["name"] == rest[0])
        return row[f"completion_{side}"]
    if kind == "queues":
        return figures["queues"][rest[0]][side][rest[1]]
    if kind == "usage":
        return figures["usage"][side][rest[0]]
    return figures["summary"][rest[0]][side]


@pytest.mark.parametrize("path,fifo,fair", FIGURES.values(), ids=FIGURES.keys())
def test_fairshare_against_fifo(fifo_vs_fairshare, path, fifo, fair):
    *_, figures = fifo_vs_fairshare
    assert figure(figures, path, "a") == pytest.approx(fifo)
    assert figure(figures, path, "b") == pytest.approx(fair)


def test_the_small_app_gains_most_and_the_big_one_loses(fifo_vs_fairshare):
    a, _, figures = fifo_vs_fairshare
    assert a.moved == ("big", "small")
    assert [r["name"] for r in figures["gains"]] == ["small"]
    assert figures["gains"][0]["delta_s"] == -70.0
    assert [r["name"] for r in figures["losses"]] == ["big"]
    fair = figures["summary"]["fairness_jain"]
    assert fair["b"] > 0.99 > 0.7 > fair["a"]
    util = figures["summary"]["utilization"]
    assert 0 < util["a"] < util["b"] <= 1


def test_an_app_finished_in_one_run_only_comes_first():
    fails = workload(app("x", stages=[stage(40, 5)]), app("y", submit=5, exit_code=1))
    finishes = workload(app("x", stages=[stage(40, 5)]), app("y", submit=5))
    gains, losses = app_changes(simulate(fails), simulate(finishes))
    assert [(r["name"], r["delta_s"], r["state_a"]) for r in gains] == [("y", None, "FAILED")]
    gains, losses = app_changes(simulate(finishes), simulate(fails))
    assert [(r["name"], r["completion_b"]) for r in losses] == [("y", None)]


# name: (server config, what the replayed workload has)
REPLAYS = {
    "defaults give a priority to an app that set none": (
        {"defaults": {"priority": 7000}},
        lambda w: [a.spec.priority for a in w.apps] == [5000, 7000]),
    "an app keeps a queue the tree has": (
        {"queues": [{"name": "root", "queues": [{"name": "etl", "admission": "reserve"}]}],
         "defaults": {"queue": "root.etl"}},
        lambda w: [a.spec.queue for a in w.apps] == ["root.etl", "root.etl"]
        and w.root.leaves()[0].admission.value == "reserve"),
    "a memory cluster's shape": (
        {"cluster": {"backend": "memory", "workers": 2, "cores": 8, "memory": "8g"}},
        lambda w: (w.cluster.workers, w.cluster.capacity.cores, w.cluster.capacity.mem_mib)
        == (2, 16, 16384)),
    "a memory cluster's start times, the rest kept": (
        {"cluster": {"backend": "memory", "executor_start_s": 7}},
        lambda w: (w.cluster.executor_start_s, w.cluster.driver_start_s,
                   w.cluster.capacity.cores) == (7, 2, 8)),
    "a standalone config: driver slots only": (
        {"cluster": {"driver_slots": 1}},
        lambda w: (w.cluster.driver_slots, w.cluster.capacity.cores) == (1, 8)),
}


@pytest.mark.parametrize("config,holds", REPLAYS.values(), ids=REPLAYS.keys())
def test_what_a_config_replaces(tmp_path, config, holds):
    w, (c,) = files(tmp_path, BIG_AND_SMALL, config)
    assert holds(replay(w, c).workload)


# BIG_AND_SMALL on two clusters, b down for a while.
TWO_CLUSTERS = {**{k: v for k, v in BIG_AND_SMALL.items() if k != "cluster"},
                "clusters": [{"name": "a", "cores": 8, "memory": "32g"},
                             {"name": "b", "cores": 4, "memory": "16g"}],
                "placement": "most_free", "cluster_down": [{"cluster": "b", "at": 5, "until": 50}]}


def test_a_workloads_clusters_outages_and_placement_stay_under_a_config(tmp_path):
    """Found: dropped, the run went on one default cluster of 64 cores, the outage unrun (an
    app that named a cluster was refused: 'unknown cluster ... none named: use clusters:')."""
    w, (c,) = files(tmp_path, TWO_CLUSTERS, one_queue("fifo"))
    replayed = replay(w, c).workload
    assert [(n.name, n.cluster.capacity.cores) for n in replayed.clusters] == [("a", 8), ("b", 4)]
    assert [(o.cluster, o.at_s, o.until_s) for o in replayed.outages] == [("b", 5, 50)]
    assert replayed.placement.value == "most_free"
    assert replayed.root.leaves()[0].policy.value == "fifo"


def test_a_config_that_sets_one_cluster_is_refused_for_several(tmp_path):
    config = {"cluster": {"backend": "memory", "workers": 2, "cores": 4}}
    w, (c,) = files(tmp_path, TWO_CLUSTERS, config)
    with pytest.raises(ConfigError) as e:
        replay(w, c)
    assert str(e.value) == (f"{c}: cluster.workers: sets one cluster, and the workload has "
                            "several (clusters: a, b): set it on the workload's clusters "
                            "instead")


# name: (server config, the one line's end)
BAD = {
    "an executor larger than the config's workers": (
        {"cluster": {"backend": "memory", "workers": 4, "cores": 1}},
        "apps[0]: never fits"),
    "a config key the server does not know": ({"queus": []}, "queus: unknown setting"),
    "a memory-only key on standalone": (
        {"cluster": {"workers": 2}}, "workers is a setting of the memory backend only"),
}


@pytest.mark.parametrize("config,message", BAD.values(), ids=BAD.keys())
def test_a_replay_that_cannot_run_is_one_line(tmp_path, config, message):
    w, (c,) = files(tmp_path, BIG_AND_SMALL, config)
    with pytest.raises(ConfigError) as e:
        replay(w, c)
    assert message in str(e.value) and "\n" not in str(e.value)
