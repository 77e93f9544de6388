"""Several clusters in the simulator (``engine.clusters``, ``sim.clusters_config``): the
examples' outcomes (checked with the others by test_sim_examples), each app on one memory
cluster only, and the workload's mistakes named."""

from __future__ import annotations

import pytest

from sessionsched.config import ConfigError
from sessionsched.sim import simulate
from sessionsched.sim.simulator import Simulator
from sessionsched.sim.workload import WorkloadConfig, parse_model, to_workload


def by_name(result: dict) -> dict[str, dict]:
    return {a["name"]: a for a in result["apps"]}


def check_clusters_spill(r):
    apps = by_name(r)
    assert {a["state"] for a in apps.values()} == {"FINISHED"}
    batch = [apps[f"batch-{i}"] for i in range(1, 9)]
    assert [a["cluster"] for a in batch[:6]] == ["a"] * 4 + ["b"] * 2  # a fills first
    assert all(a["admitted"] == 0 for a in batch[:6])
    assert all(a["admitted"] > 0 for a in batch[6:])  # no room anywhere at first
    assert apps["etl-1"]["cluster"] == "a"
    assert apps["pinned"]["cluster"] == "b"


def check_clusters_outage(r):
    apps = by_name(r)
    assert {a["state"] for a in apps.values()} == {"FINISHED"}
    assert apps["run-b"]["cluster"] == "b" and apps["run-b"]["admitted"] == 0
    assert {apps[f"late-{i}"]["cluster"] for i in (1, 2, 3)} == {"a"}  # b down
    assert apps["pinned"]["cluster"] == "b" and apps["pinned"]["admitted"] == 200


def check_clusters_lost(r):
    apps = by_name(r)
    long_b = apps["long-b"]
    assert (long_b["state"], long_b["cluster"], long_b["admitted"]) == ("FAILED", "b", 0)
    assert long_b["finished"] == 400  # its driver stopped when b answered again
    assert apps["after-1"]["cluster"] == "b" and apps["after-1"]["admitted"] == 400
    assert {apps["late-1"]["cluster"], apps["late-2"]["cluster"]} == {"a"}
    assert r["summary"]["failed"] == 1 and r["summary"]["stuck"] == 0


def check_clusters_capped(r):
    apps = by_name(r)
    assert {a["state"] for a in apps.values()} == {"FINISHED"}
    assert [apps[f"etl-{i}"]["cluster"] for i in (1, 2, 3, 4)] == ["a", "b", "a", "b"]
    assert [apps[f"etl-{i}"]["admitted"] for i in (1, 2, 3)] == [0, 0, 0]
    first_end = min(apps[f"etl-{i}"]["finished"] for i in (1, 2, 3))
    assert apps["etl-4"]["admitted"] == first_end  # b had room: the cap over both held it


def check_clusters_gpu_capped(r):
    apps = by_name(r)
    assert {a["state"] for a in apps.values()} == {"FINISHED"}
    assert [apps[n]["cluster"] for n in ("train-a", "train-b")] == ["a", "b"]
    for a in apps.values():  # 2 executors of 2 cores (2 of the cap's 4 GPUs), not their 4
        assert a["usage"]["held_core_s"] / (a["finished"] - a["first_executor"]) == 4.0


def check_clusters_queue_placement(r):
    apps = by_name(r)
    assert {a["state"] for a in apps.values()} == {"FINISHED"}
    assert {n: a["cluster"] for n, a in apps.items()} == {
        **{f"batch-{i}": "a" for i in (1, 2, 3, 4)}, **{f"spread-{i}": "b" for i in (1, 2, 3, 4)}}
    assert all(a["admitted"] == a["submitted"] for a in apps.values())


CLUSTER_EXAMPLES = {
    "clusters-capped": check_clusters_capped,
    "clusters-gpu-capped": check_clusters_gpu_capped,
    "clusters-spill": check_clusters_spill,
    "clusters-queue-placement": check_clusters_queue_placement,
    "clusters-outage": check_clusters_outage,
    "clusters-lost": check_clusters_lost,
}


def workload(**top):
    app = {"driver": {"cores": 1, "in_cluster": True}, "executor": {"cores": 2},
           "min_executors": 1, "max_executors": 2, "stages": [{"tasks": 8, "task_s": 5}]}
    data = {"clusters": [{"name": "a", "cores": 6, "memory": "24g", "workers": 2},
                         {"name": "b", "cores": 6, "memory": "24g", "workers": 2}],
            "apps": [{**app, "name": f"x{i}", "submit": i % 7} for i in range(24)]}
    data.update(top)
    return to_workload(parse_model(WorkloadConfig, data, "w.yaml"))


@pytest.mark.parametrize("placement", ["spill", "most_free", "weighted"])
def test_every_app_runs_on_one_memory_cluster_only(placement):
    sim = Simulator(workload(placement=placement,
                             cluster_down=[{"cluster": "a", "at": 10, "until": 30}]))
    result = sim.run()
    assert result.summary["completed"] == 24
    on = {name: [c for c, mc in sim.clusters.items() if name in mc.apps]
          for name in sim.apps}
    assert all(len(where) == 1 for where in on.values()), on
    assert {a.name: a.cluster for a in result.apps} == {n: w[0] for n, w in on.items()}
    assert {w[0] for w in on.values()} == {"a", "b"}


def test_one_cluster_as_clusters_decides_as_cluster():
    """A registry of one is today's single cluster: the same result, app for app."""
    one = workload(clusters=[{"name": "only", "cores": 6, "memory": "24g", "workers": 2}])
    plain = workload(clusters=None, cluster={"cores": 6, "memory": "24g", "workers": 2})
    a, b = simulate(one).to_json(), simulate(plain).to_json()
    for app in a["apps"]:
        assert app.pop("cluster") == "only"
    assert a["apps"] == b["apps"]


@pytest.mark.parametrize("top,message", [
    ({"cluster": {"cores": 4}}, "cluster: and clusters: both set"),
    ({"queues": [{"name": "q", "clusters": ["c"]}]},
     "queues: root.q.clusters: unknown cluster 'c' (clusters: a, b)"),
    ({"cluster_down": [{"cluster": "z", "at": 1, "until": 2}]},
     "cluster_down[0].cluster: unknown cluster 'z' (clusters: a, b)"),
    ({"cluster_down": [{"cluster": "a", "at": 5, "until": 2}]}, "until 2 is not after at 5"),
    ({"placement": "nearest"}, "placement"),
    ({"queues": [{"name": "q", "max_cores_per_cluster": {"z": 4}}]},
     "queues: root.q.max_cores_per_cluster: unknown cluster 'z' (clusters: a, b)"),
    # Taken, b came back at the first one's end (100), half-way through the second.
    ({"cluster_down": [{"cluster": "b", "at": 10, "until": 100},
                       {"cluster": "b", "at": 50, "until": 200}]},
     "cluster_down[1]: b is already down from 10 to 100 (cluster_down[0]): give one window "
     "from 10 to 200"),
    # Listed the other way round, the two at 100 came in order: b up from 100 to 200.
    ({"cluster_down": [{"cluster": "b", "at": 100, "until": 200},
                       {"cluster": "b", "at": 10, "until": 100}]},
     "cluster_down[1]: b is already down from 100 to 200 (cluster_down[0]): give one window "
     "from 10 to 200"),
    # Taken, it never happened, without a word (a submission that late is refused).
    ({"cluster_down": [{"cluster": "b", "at": 90000, "until": 90001}]},
     "cluster_down[0].at: 90000 is not before the end of the run (clusters[0].max_time_s "
     "86400)"),
], ids=["cluster-and-clusters", "queue-names-an-unknown-cluster", "outage-of-an-unknown-cluster",
        "outage-ends-before-it-starts", "unknown-placement", "a-cap-on-an-unknown-cluster",
        "outages-that-overlap", "outages-that-touch", "outage-after-the-end"])
def test_a_workloads_cluster_mistakes_are_named(top, message):
    with pytest.raises(ConfigError) as e:
        workload(**top)
    assert message in str(e.value)


def test_an_app_asking_for_an_unknown_cluster_is_named():
    data = {"clusters": [{"name": "a"}], "apps": [{"name": "x", "stages": [], "clusters": ["q"]}]}
    with pytest.raises(ConfigError) as e:
        to_workload(parse_model(WorkloadConfig, data, "w.yaml"))
    assert "apps[0].clusters: unknown cluster 'q' (clusters: a)" in str(e.value)


def test_an_app_too_big_for_every_cluster_it_may_use_never_fits_naming_each():
    data = {"clusters": [{"name": "a", "cores": 4, "workers": 1},
                         {"name": "b", "cores": 16, "workers": 1}],
            "apps": [{"name": "x", "stages": [], "clusters": ["a"],
                      "executor": {"cores": 8}, "min_executors": 1}]}
    with pytest.raises(ConfigError) as e:
        to_workload(parse_model(WorkloadConfig, data, "w.yaml"))
    assert "apps[0]: never fits: a: " in str(e.value)
