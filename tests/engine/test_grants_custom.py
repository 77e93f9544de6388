"""Grants counted in custom resources (GPUs) too: an app's target above what it holds is granted
only the executors whose GPUs are free now, as its cores and memory are. With workers named,
``place`` finds them on one worker; with one worker or none named the cluster's sum is the
only count, and a GPU held by an app being reclaimed must not be granted to another meanwhile
(the grant is what the agent lets Spark ask for: promised twice, the executor waits)."""

import pytest
from engine_builders import Run, app, one_queue

from sessionsched.engine import CapacityChanged, DemandChanged
from sessionsched.model import Resources, Worker

GPU = (("gpu", 1),)
CLUSTER = Resources(8, 32768, (("gpu", 2),))


def _workers(n: int, first_holds: int) -> tuple[Worker, ...]:
    """``n`` workers sharing the cluster; the first app's GPU executors on the first ones."""
    size = Resources(8 // n, 32768 // n, (("gpu", 2 // n),))
    out = []
    for i in range(n):
        on = min(max(first_holds - i * (2 // n), 0), 2 // n)
        out.append(Worker(f"w{i}", size, size - Resources(on, on * 1024, (("gpu", on),))))
    return tuple(out)


def _report(workers: int, first_holds: int) -> CapacityChanged:
    if workers:
        return CapacityChanged.of_workers(_workers(workers, first_holds), 4)
    return CapacityChanged(CLUSTER, 4)


def _run(workers: int, second_gpu: bool) -> Run:
    """``first`` holds both GPUs; ``second`` (a GPU app, or a CPU one) asks for 2 executors in
    the same fairshare leaf, whose reclaim decommissions gracefully (the executors ordered
    back stay held until they are gone)."""
    run = Run(one_queue(admission="none", policy="fairshare", reclaim_timeout_s=600.0), cores=8)
    run.step(_report(workers, 0))
    run.submit(app("first").executor(1, 1024, GPU), at=0.0)
    run.step(DemandChanged("first", 2))
    run.hold("first", 2)
    run.step(_report(workers, 2))
    second = app("second").executor(1, 1024, GPU if second_gpu else ())
    run.submit(second, at=1.0)
    run.step(DemandChanged("second", 2))
    return run


# name: (workers named, second asks a GPU, first's target, second's (target, grant) while
# first's executor ordered back is still held, and once it is gone)
CASES = {
    "none named: the GPU being given back is not granted yet": (0, True, 1, (1, 0), (1, 1)),
    "one named: the GPU being given back is not granted yet": (1, True, 1, (1, 0), (1, 1)),
    "two named: placed per worker, the same": (2, True, 1, (1, 0), (1, 1)),
    "a CPU app shares no GPU: granted its demand at once": (0, False, 2, (2, 2), (2, 2)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_gpu_held_by_an_app_being_reclaimed_is_granted_once_it_is_given_back(case):
    workers, second_gpu, first_target, meanwhile, after = CASES[case]
    run = _run(workers, second_gpu)
    assert run.targets()["first"][0] == first_target  # dominant shares levelled
    assert run.targets()["second"] == meanwhile
    if first_target == 1:
        run.hold("first", 1, at=5.0)  # its executor ordered back is gone
        run.step(_report(workers, 1))
    assert run.targets()["second"] == after
