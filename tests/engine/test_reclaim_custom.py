"""Reclaim where the waiting executor needs it: an app short of a GPU gets GPU executors
taken back for it - executors that run where the GPUs are - never idle CPU executors
elsewhere, which would free nothing it can use."""

import pytest
from engine_builders import Run, app, one_queue, reclaims

from sessionsched.engine import CapacityChanged, DemandChanged
from sessionsched.model import Resources, Worker

GPU = (("gpu", 1),)
GPU_WORKER = Resources(4, 16384, (("gpu", 2),))
CPU_WORKER = Resources(4, 16384)


def _run(policy: str, cpu_workers: int) -> Run:
    """Two GPU workers (4 cores, 2 GPUs each) and ``cpu_workers`` CPU ones. ``gpu_low`` holds
    every GPU, ``cpu`` holds 8 one-core executors (4 idle: its demand dipped to 4), both at
    priority 1; then ``gpu_high`` (priority 9000) asks for 2 GPU executors."""
    workers = tuple(Worker(f"g{i}", GPU_WORKER, GPU_WORKER) for i in range(2)) + tuple(
        Worker(f"c{i}", CPU_WORKER, CPU_WORKER) for i in range(cpu_workers))
    run = Run(one_queue(admission="none", policy=policy), cores=8 + 4 * cpu_workers)
    run.step(CapacityChanged.of_workers(workers, 8))
    run.submit(app("gpu_low").priority(1).executor(1, 1024, GPU), at=0.0)
    run.step(DemandChanged("gpu_low", 4))
    run.hold("gpu_low", 4)
    run.submit(app("cpu").priority(1).executor(1, 1024), at=1.0)
    run.step(DemandChanged("cpu", 8))
    run.hold("cpu", 8)
    run.step(DemandChanged("cpu", 4))
    run.hold("cpu", 8, idle=4)
    run.submit(app("gpu_high").priority(9000).executor(1, 1024, GPU), at=10.0)
    run.step(DemandChanged("gpu_high", 2))
    return run


# (name, leaf policy, CPU workers). One CPU worker: 12 cores all held, so the cores are short
# too; three: cores are free elsewhere, only the GPUs are short.
CASES = [
    ("priority leaf, every core held", "priority", 1),
    ("priority leaf, cores free on the CPU workers", "priority", 3),
    ("fairshare leaf, every core held", "fairshare", 1),
    ("fairshare leaf, cores free on the CPU workers", "fairshare", 3),
]


@pytest.mark.parametrize(("policy", "cpu_workers"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_reclaim_for_a_waiting_gpu_executor_takes_gpu_executors(policy, cpu_workers):
    run = _run(policy, cpu_workers)
    orders = [r for out in run.log for r in reclaims(out)]
    assert {r.app_id for r in orders} == {"gpu_low"}  # never the idle CPU executors
    taken = sum(len(r.executor_ids) for r in orders)
    assert taken == 2  # the two GPUs gpu_high waits for, no more
    assert run.targets()["gpu_high"][0] == 2
