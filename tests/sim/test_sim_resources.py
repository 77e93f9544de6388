"""Custom resources in the simulator: a cluster of ``worker_groups`` (workers not all alike,
some with GPUs), apps asking for GPUs by their Spark properties (``conf``). A GPU executor runs
only on a GPU worker, so a GPU app holds no more executors than there are GPUs, whatever the
cores; an app asking for more GPUs than a worker has refuses the workload."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sim_builders import QUICK_CLUSTER, app, stage

from sessionsched.sim import simulate
from sessionsched.sim.workload import WorkloadConfig, to_workload

# 2 workers of 4 cores with 2 GPUs each, one plain worker of 8 cores: 16 cores, 4 GPUs
GROUPS = [{"count": 2, "cores": 4, "memory": "16g", "resources": {"gpu": 2}},
          {"count": 1, "cores": 8, "memory": "16g"}]
CLUSTER = {k: v for k, v in QUICK_CLUSTER.items() if k not in ("cores", "memory")}
GPU = {"spark.executor.resource.gpu.amount": "1", "spark.task.resource.gpu.amount": "1"}


def gpu_workload(*apps):
    return to_workload(WorkloadConfig.model_validate(
        {"cluster": {**CLUSTER, "worker_groups": GROUPS}, "apps": list(apps)}))


def test_gpu_executors_only_as_many_as_the_gpus():
    # 8 one-core tasks of 10 s: 16 cores would run them in one wave, the 4 GPUs in two
    w = gpu_workload(app("g", executor={"cores": 1, "memory": "1g"}, max_executors=8,
                         stages=[stage(8, 10)], conf=GPU),
                     app("p", executor={"cores": 1, "memory": "1g"}, max_executors=8,
                         stages=[stage(8, 10)]))
    assert w.cluster.capacity.custom == (("gpu", 4),)
    r = simulate(w)
    apps = {a.name: a for a in r.apps}
    assert r.stuck == 0 and {a.state for a in r.apps} == {"FINISHED"}
    g, p = apps["g"], apps["p"]
    assert g.finished - g.first_executor >= 20  # two waves: four GPU executors at a time
    assert p.finished - p.first_executor < 20  # the plain app runs its wave on the cores
    assert r.executor_waits == 0  # nothing granted that no worker could hold


def test_more_gpus_than_a_worker_has_refuses_the_workload():
    with pytest.raises(ValidationError) as e:
        gpu_workload(app("g", conf={"spark.executor.resource.gpu.amount": "3"}))
    assert ("apps[0]: never fits: an executor of 1 cores/1024 MiB/3 gpu fits no worker: at most"
            " 2 gpu on one") in str(e.value)


def test_a_task_amount_without_an_executor_amount_refuses_the_workload():
    with pytest.raises(ValidationError) as e:
        gpu_workload(app("g", conf={"spark.task.resource.gpu.amount": "1"}))
    assert "apps[0].conf: spark.task.resource.gpu.amount=1 needs" in str(e.value)
