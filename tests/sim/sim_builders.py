"""Small builders for simulator tests: workloads as the plain data a YAML file would hold.

``workload(app("a", stages=[stage(10, 5)]), cluster={"cores": 4})`` -> a validated Workload;
``app(...)``'s keyword arguments are the YAML keys of an app.
"""

from __future__ import annotations

from typing import Any

from sessionsched.sim.workload import Workload, WorkloadConfig, to_workload

QUICK_CLUSTER = {
    "cores": 8,
    "memory": "32g",
    "driver_slots": 4,
    "driver_start_s": 2,
    "executor_start_s": 1,
    "executor_idle_timeout_s": 30,
}


def stage(tasks: int, task_s: float) -> dict[str, Any]:
    return {"tasks": tasks, "task_s": task_s}


def app(name: str, **yaml: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "stages": [stage(4, 5)]}
    out.update(yaml)
    return out


def queue(name: str, **settings: Any) -> dict[str, Any]:
    return {"name": name, **settings}


def data(*apps: dict[str, Any], cluster: dict | None = None, queues: list | None = None) -> dict:
    out: dict[str, Any] = {"cluster": {**QUICK_CLUSTER, **(cluster or {})}, "apps": list(apps)}
    if queues is not None:
        out["queues"] = [{"name": "root", "queues": queues}]
    return out


def workload(
    *apps: dict[str, Any], cluster: dict | None = None, queues: list | None = None
) -> Workload:
    return to_workload(WorkloadConfig.model_validate(data(*apps, cluster=cluster, queues=queues)))


# A small app submitted 10 s behind a big one in one queue, on 8 cores: ``fifo`` makes it wait
# for all of the big one, ``fairshare`` runs it at once (tests/sim/test_sim_compare.py).
BIG_AND_SMALL = {
    "cluster": QUICK_CLUSTER,  # 8 cores
    "queues": [{"name": "root", "queues": [{"name": "default"}, {"name": "etl"}]}],
    "apps": [
        {"name": "big", "submit": 0, "queue": "etl", "priority": 5000,
         "executor": {"cores": 2, "memory": "2g"}, "stages": [{"tasks": 64, "task_s": 10}]},
        {"name": "small", "submit": 10, "queue": "etl",
         "executor": {"cores": 2, "memory": "2g"}, "stages": [{"tasks": 4, "task_s": 10}]},
    ],
}


def one_queue(policy: str, **more: Any) -> dict:
    return {"queues": [{"name": "root", "queues": [{"name": "default", "policy": policy}]}],
            **more}
