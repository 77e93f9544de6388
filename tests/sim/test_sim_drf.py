"""Dominant-resource fair share in the simulator (``engine.arbitration.drf``): apps asking for
GPUs and apps asking only cores in ``fairshare`` queues, with the executors each holds once
the cluster is full, as tables of named cases with their numbers."""

from __future__ import annotations

import pytest
from sim_builders import QUICK_CLUSTER, stage

from sessionsched.engine.events import Reclaim
from sessionsched.sim import simulate
from sessionsched.sim.simulator import Simulator
from sessionsched.sim.workload import WorkloadConfig, to_workload

# 4 workers of 8 cores/32g: two with 2 GPUs each. 32 cores, 128 GiB, 4 GPUs.
GROUPS = [{"count": 2, "cores": 8, "memory": "32g", "resources": {"gpu": 2}},
          {"count": 2, "cores": 8, "memory": "32g"}]
CLUSTER = {**{k: v for k, v in QUICK_CLUSTER.items() if k not in ("cores", "memory")},
           "worker_groups": GROUPS, "driver_slots": 8}
GPU_CONF = {"spark.executor.resource.gpu.amount": "1", "spark.task.resource.gpu.amount": "1"}
EXECUTOR = {"cores": 2, "memory": "4g"}  # 1/16 of the cores, 1/32 of the memory
LONG = [stage(400, 60)]  # far more work than the cluster does in the minute looked at


def _app(name, queue="default", gpu=False, submit=0, **more):
    out = {"name": name, "queue": queue, "submit": submit, "executor": EXECUTOR,
           "stages": LONG, "max_executors": 32, **more}
    if gpu:
        out["conf"] = GPU_CONF
    return out


def _held_at(t, apps, queues):
    w = to_workload(WorkloadConfig.model_validate({
        "cluster": {**CLUSTER, "max_time_s": t + 1}, "apps": apps,
        "queues": [{"name": "root", "queues": queues}]}))
    r = simulate(w)
    return {name: s.at(t) for name, s in r.timeline.executors.items()}


ONE_LEAF = [{"name": "default", "policy": "fairshare"}]
TWO_QUEUES = [{"name": "gpu", "policy": "fairshare"}, {"name": "cpu", "policy": "fairshare"}]

# (name, apps, queues, executors held at 60 s). The dominant share of one GPU executor is
# 1/4 (one of 4 GPUs), of a CPU executor 2/32 = 1/16: levelled at x/4 = y/16 with
# 2x + 2y = 32 cores, x = 3.2 and y = 12.8.
CASES = [
    ("a GPU app and a CPU app in one fairshare leaf reach equal dominant shares",
     [_app("gpu", gpu=True), _app("cpu")], ONE_LEAF,
     {"gpu": 3, "cpu": 13}),  # dominant shares 3/4 and 13/16 (26 of 32 cores)
    ("two GPU apps in a fairshare leaf split the GPUs",
     [_app("gpu1", gpu=True), _app("gpu2", gpu=True), _app("cpu")], ONE_LEAF,
     {"gpu1": 2, "gpu2": 2, "cpu": 12}),
    ("a GPU queue and a CPU queue of equal weight level their dominant shares",
     [_app("gpu", "gpu", gpu=True), _app("cpu", "cpu")], TWO_QUEUES,
     {"gpu": 4, "cpu": 12}),  # 3.2 GPU executors' cores, every GPU: the CPU queue 12.8
]


@pytest.mark.parametrize(("apps", "queues", "held"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_dominant_shares_in_the_simulator(apps, queues, held):
    assert _held_at(60, apps, queues) == held


class _Watched(Simulator):
    """The simulator, noting the worker of every executor the engine orders back."""

    def __init__(self, workload):
        super().__init__(workload)
        self.reclaimed_on: list[str] = []

    def _record(self, decisions):
        for d in decisions:
            if isinstance(d, Reclaim):
                self.reclaimed_on += [self.cluster.pool.worker_of(e) for e in d.executor_ids]
        super()._record(decisions)


# (name, the CPU app's maxExecutors). The CPU app fills the plain workers, then (keep-off
# spent) the GPU workers; a GPU app then arrives in a queue guaranteed 3 GPUs.
RECLAIM = [
    ("the CPU app spills onto the GPU workers", 16),
    ("the CPU app holds every core", 15),
]


@pytest.mark.parametrize("cpu_max", [c[1] for c in RECLAIM], ids=[c[0] for c in RECLAIM])
def test_reclaim_for_a_waiting_gpu_executor_takes_victims_on_gpu_workers(cpu_max):
    apps = [_app("etl", "research", max_executors=cpu_max),
            _app("train", "prod", gpu=True, submit=60, max_executors=3)]
    queues = [{"name": "research", "policy": "fairshare"},
              {"name": "prod", "policy": "fairshare", "min_resources": {"gpu": 3}}]
    sim = _Watched(to_workload(WorkloadConfig.model_validate({
        "cluster": {**CLUSTER, "max_time_s": 120}, "apps": apps,
        "queues": [{"name": "root", "queues": queues}]})))
    r = sim.run()
    gpu_workers = {"worker-1", "worker-2"}  # the first group's (``GROUPS``)
    assert sim.reclaimed_on and set(sim.reclaimed_on) <= gpu_workers
    assert r.timeline.executors["train"].at(75) >= 2  # its GPUs' cores freed where they are
