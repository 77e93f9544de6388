"""``demand`` admission's ``running_demand`` with custom resources: what the running apps still
want counts their GPUs too, one named row per behaviour.

The cluster: a CPU worker of 8 cores and a GPU worker of 8 cores with 4 GPUs. Apps have
1-core drivers (client mode: a driver slot) and 1-core executors; a GPU app's executors take
one GPU each. Each row says which apps the last step launched and, for a head left waiting,
a phrase of its queue's reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from engine_builders import Run, app, launched, one_queue

from sessionsched.engine import CapacityChanged, DemandChanged
from sessionsched.model import Resources, Worker
from sessionsched.model.profiles import Profile

GPU = (("gpu", 1),)


def cluster(policy: str = "fifo") -> Run:
    run = Run(one_queue(admission="demand", policy=policy), cores=16, slots=8)
    gpus = Resources(8, 1 << 16, (("gpu", 4),))
    run.step(CapacityChanged.of_workers(
        (Worker("cpu", Resources(8, 1 << 16), Resources(8, 1 << 16)), Worker("gpu", gpus, gpus)),
        8))
    return run


def gpu_app(name: str) -> app:
    return app(name).executor(1, 1024, GPU)


def wants_every_gpu(run: Run, name: str = "a") -> None:
    """A GPU app runs on all 4 GPUs and wants them all: 4 cores of 16 wanted."""
    assert launched(run.submit(gpu_app(name).priority(5000))) == [name]
    run.step(DemandChanged(name, 4))
    run.hold(name, 4)


def with_one_ahead(run: Run) -> None:
    """A GPU app's driver starts ahead of its first executor's GPU (one per leaf)."""
    assert launched(run.submit(gpu_app("x").priority(5000))) == ["x"]
    assert run.sched.apps["x"].ahead


@dataclass(frozen=True)
class Case:
    scene: Callable[[], tuple[Run, list]]
    launched: list[str]
    waits: str | None


def the_running_apps_gpu_demand_holds_a_gpu_head_back():
    # 12 cores nobody wants, but no GPU: b's first executor would wait for one
    run = cluster()
    wants_every_gpu(run)
    with_one_ahead(run)
    return run, run.submit(gpu_app("b"))


def a_running_apps_gpu_stage_holds_a_gpu_head_back():
    # a's own executors ask for no GPU: it holds one and wants it; a stage of a GPU profile
    # (rdd.withResources) wants 4 executors more, all 4 GPUs
    run = cluster()
    assert launched(run.submit(app("a").priority(5000))) == ["a"]
    run.step(DemandChanged("a", 5, (Profile(0, Resources(1, 1024), 1),
                                    Profile(1, Resources(1, 1024, GPU), 4))))
    run.hold("a", 1)
    with_one_ahead(run)
    return run, run.submit(gpu_app("b"))


def the_running_apps_gpu_demand_does_not_hold_a_cpu_head_back():
    run = cluster()
    wants_every_gpu(run)
    with_one_ahead(run)
    return run, run.submit(app("b"))


def a_cpu_app_behind_a_head_waiting_for_gpus_is_looked_at_past_it():
    # c asks for no GPU: the room b waits for is not one it needs (head-of-line holds only
    # the apps that need the room the head waits for); d asks for one and stays behind b
    run = cluster()
    wants_every_gpu(run)
    with_one_ahead(run)
    return run, run.submit(gpu_app("b"), app("c"), gpu_app("d"))


def gpus_nobody_wants_let_a_gpu_head_in():
    run = cluster()
    assert launched(run.submit(gpu_app("a"))) == ["a"]
    run.step(DemandChanged("a", 2))
    run.hold("a", 2)  # 2 of the 4 GPUs wanted
    return run, run.submit(gpu_app("b"))


def gpu_demand_going_down_lets_the_head_in():
    run = cluster()
    wants_every_gpu(run)
    with_one_ahead(run)
    run.submit(gpu_app("b"))
    return run, run.step(DemandChanged("a", 2))


def the_gpus_of_apps_admitted_this_cycle_count():
    # each admitted app wants its first GPU executor: a-d take the 4 GPUs, e's driver goes
    # ahead, f waits
    run = cluster()
    return run, run.submit(*(gpu_app(n) for n in "abcdef"))


def fairshare_counts_the_running_apps_gpus_up_to_their_share():
    # a wants all 4 GPUs, but fairshare would give b its part: a's need counts up to 2
    run = cluster("fairshare")
    wants_every_gpu(run)
    return run, run.submit(gpu_app("b").priority(5000))


def a_fairshare_head_whose_gpu_share_holds_no_executor_waits():
    # b's part beside a (weights 500:10000) is 4 x 500/10500 of a GPU: rounded up, 1; a keeps 4
    run = cluster("fairshare")
    assert launched(run.submit(gpu_app("a").priority(10000))) == ["a"]
    run.step(DemandChanged("a", 4))
    run.hold("a", 4)
    assert launched(run.submit(gpu_app("x").priority(500))) == ["x"]  # ahead
    return run, run.submit(gpu_app("b").priority(500))


CASES = {
    "the running apps' GPU demand holds a GPU head back":
        Case(the_running_apps_gpu_demand_holds_a_gpu_head_back, [],
             # a's 4 and x's first executor (started ahead, still without one)
             "waiting for gpu: the running apps of root.q want 5 gpu above their floors and"
             " its first 1 executor(s) need 1 gpu: more than the 4 gpu left beside the"
             " admitted apps' drivers and floors"),
    "a running app's stage of a GPU profile holds a GPU head back":
        Case(a_running_apps_gpu_stage_holds_a_gpu_head_back, [],
             "waiting for gpu: the running apps of root.q want 5 gpu above their floors"),
    "the running apps' GPU demand does not hold a CPU head back":
        Case(the_running_apps_gpu_demand_does_not_hold_a_cpu_head_back, ["b"], None),
    "a CPU app behind a head waiting for GPUs is looked at past it, a GPU app is not":
        Case(a_cpu_app_behind_a_head_waiting_for_gpus_is_looked_at_past_it, ["c"],
             "waiting for gpu"),
    "GPUs the running apps do not want let a GPU head in":
        Case(gpus_nobody_wants_let_a_gpu_head_in, ["b"], None),
    "GPU demand going down lets the head in":
        Case(gpu_demand_going_down_lets_the_head_in, ["b"], None),
    "the first GPU executors of apps admitted in the same cycle count":
        Case(the_gpus_of_apps_admitted_this_cycle_count, ["a", "b", "c", "d", "e"],
             "waiting for gpu"),
    "fairshare: the running apps' GPUs count only up to their share with the head in":
        Case(fairshare_counts_the_running_apps_gpus_up_to_their_share, ["b"], None),
    "fairshare: a head whose GPU share holds no executor waits":
        Case(a_fairshare_head_whose_gpu_share_holds_no_executor_waits, [], "waiting for gpu"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_demand_admission_with_gpus(case: Case):
    run, out = case.scene()
    assert launched(out) == case.launched
    wait = run.sched.waiting.get("root.q")
    if case.waits is None:
        assert wait is None or "gpu" not in wait.text
    else:
        assert wait is not None and wait.code == "running_demand", wait
        assert case.waits in wait.text, wait.text
