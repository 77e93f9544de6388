"""Task amounts in the simulator (backends/memory/job.py, busy.py): an executor runs as many
tasks at once as Spark's rule gives (its cores over ``spark.task.cpus``, each resource over
the task's amount: 0.5 GPU a task runs two tasks on each GPU), and the summary's
``utilization_by_resource`` is exact: a resource's busy-seconds are tasks x task seconds x
task amount, over (the cluster's amount x makespan)."""

from __future__ import annotations

import pytest
from sim_builders import QUICK_CLUSTER, app, stage

from sessionsched.sim import simulate
from sessionsched.sim.workload import WorkloadConfig, to_workload

# one worker of 8 cores, 32g and 2 GPUs
GROUPS = [{"count": 1, "cores": 8, "memory": "32g", "resources": {"gpu": 2}}]
CLUSTER = {**{k: v for k, v in QUICK_CLUSTER.items() if k not in ("cores", "memory")},
           "worker_groups": GROUPS}


def gpu_app(task_gpu: str, task_cpus: str = "1", cores: int = 2):
    conf = {"spark.executor.resource.gpu.amount": "1",
            "spark.task.resource.gpu.amount": task_gpu, "spark.task.cpus": task_cpus}
    return app("g", executor={"cores": cores, "memory": "4g"}, max_executors=2,
               stages=[stage(8, 10)], conf=conf)


# (task gpu amount, task cpus, executor cores) -> (tasks per executor, the stage's waves,
# busy-seconds: cores, MiB, gpu)
CASES = {
    "one GPU a task: one task an executor": ("1", "1", 2, 1, 4, (80, 8 * 10 * 4096, 80)),
    "half a GPU a task: two tasks on each GPU": ("0.5", "1", 2, 2, 2, (80, 8 * 10 * 2048, 40)),
    "a quarter, cores allow two": ("0.25", "1", 2, 2, 2, (80, 8 * 10 * 2048, 20)),
    "a quarter, two cpus a task on 4 cores": ("0.25", "2", 4, 2, 2, (160, 8 * 10 * 2048, 20)),
}


@pytest.mark.parametrize("task_gpu, cpus, cores, per_executor, waves, busy", CASES.values(),
                         ids=CASES.keys())
def test_tasks_per_executor_and_utilization_by_resource(task_gpu, cpus, cores, per_executor,
                                                         waves, busy):
    w = to_workload(WorkloadConfig.model_validate(
        {"cluster": CLUSTER, "apps": [gpu_app(task_gpu, cpus, cores)]}))
    r = simulate(w)
    (g,) = r.apps
    assert g.state == "FINISHED"
    # Two executors (the two GPUs), ``per_executor`` tasks each: 8 tasks in ``waves`` waves.
    assert g.finished - g.first_executor == pytest.approx(waves * 10, abs=1.5)
    span = r.summary["makespan"]
    by = r.summary["utilization_by_resource"]
    assert set(by) == {"cores", "memory", "gpu"}
    for name, amount, busy_s in zip(("cores", "memory", "gpu"), (8, 32 * 1024, 2), busy,
                                    strict=True):
        assert by[name] == pytest.approx(busy_s / (amount * span), abs=5e-5), name
    assert by["cores"] == pytest.approx(r.summary["utilization"] * int(cpus), abs=1e-4)


def test_a_cluster_without_custom_resources_has_cores_and_memory():
    w = to_workload(WorkloadConfig.model_validate(
        {"cluster": QUICK_CLUSTER, "apps": [app("a", executor={"cores": 2, "memory": "2g"},
                                                stages=[stage(4, 5)])]}))
    r = simulate(w)
    by = r.summary["utilization_by_resource"]
    assert set(by) == {"cores", "memory"}
    span = r.summary["makespan"]
    assert by["cores"] == pytest.approx(4 * 5 / (8 * span), abs=5e-5)
    assert by["memory"] == pytest.approx(4 * 5 * 1024 / (32 * 1024 * span), abs=5e-5)
