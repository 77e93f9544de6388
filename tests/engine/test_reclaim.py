"""Reclaim in each mode, victim order, and grants that never overcommit while reclaims run."""

import pytest
from engine_builders import Run, app, executors, launched, one_queue, reclaims, set_targets

from sessionsched.engine import (
    CapacityChanged,
    DemandChanged,
    DriverExited,
    ExecutorsChanged,
    KillRequested,
    QueuesChanged,
)
from sessionsched.engine.reclaim import choose_victims
from sessionsched.model import Executor, ReclaimMode, Resources

# e1..e4 started at 1..4; e1 and e2 idle
POOL = (
    Executor("e1", started_at=1, idle=True),
    Executor("e2", started_at=2, idle=True),
    Executor("e3", started_at=3, idle=False),
    Executor("e4", started_at=4, idle=False),
)


@pytest.mark.parametrize(
    "surplus, mode, reclaiming, victims",
    [
        (1, ReclaimMode.KILL, {}, ["e2"]),
        (3, ReclaimMode.KILL, {}, ["e2", "e1", "e4"]),
        (4, ReclaimMode.DECOMMISSION, {}, ["e2", "e1", "e4", "e3"]),
        (4, ReclaimMode.IDLE, {}, ["e2", "e1"]),
        (2, ReclaimMode.KILL, {"e2": None}, ["e1", "e4"]),
        (0, ReclaimMode.KILL, {}, []),
    ],
    ids=[
        "idle first, youngest idle first",
        "then the youngest busy",
        "decommission: same order",
        "idle mode: only idle ones",
        "not ordered twice",
        "no surplus, no victim",
    ],
)
def test_victim_order(surplus, mode, reclaiming, victims):
    before = dict(reclaiming)
    chosen = choose_victims(POOL, reclaiming, surplus, mode)
    assert [e.executor_id for e in chosen] == victims
    assert reclaiming == before


def preempted(timeout: float) -> Run:
    """``low`` holds 4 executors (2 idle) on 4 cores; ``high`` arrives wanting all 4."""
    run = Run(one_queue(admission="none", policy="priority", reclaim_timeout_s=timeout), cores=4)
    run.submit(app("low").priority(1), at=0.0)
    run.step(DemandChanged("low", 4))
    run.hold("low", 4, idle=2)
    run.submit(app("high").priority(9000), at=10.0)
    return run


@pytest.mark.parametrize(
    "timeout, victims, mode, deadline",
    [
        (0.0, ("low-2", "low-1", "low-4", "low-3"), ReclaimMode.KILL, 20.0),
        (30.0, ("low-2", "low-1", "low-4", "low-3"), ReclaimMode.DECOMMISSION, 50.0),
        (-1.0, ("low-2", "low-1"), ReclaimMode.IDLE, None),
    ],
    ids=["reclaim_timeout 0: kill now", "> 0: decommission, kill at deadline",
         "-1: idle executors only"],
)
def test_reclaim_modes(timeout, victims, mode, deadline):
    run = preempted(timeout)
    out = run.step(DemandChanged("high", 4), at=20.0)
    assert set_targets(out) == {"low": (0, 0), "high": (4, 0)}  # nothing free until low lets go
    [order] = reclaims(out)
    assert (order.app_id, order.executor_ids, order.mode, order.deadline) == (
        "low", victims, mode, deadline
    )
    assert run.step(at=21.0) == []  # ordered once


def test_decommissioned_executors_still_alive_at_the_deadline_are_killed():
    run = preempted(30.0)
    run.step(DemandChanged("high", 4), at=20.0)
    assert run.sched.next_wakeup() == 50.0
    still = tuple(e for e in executors("low", 4, idle=2) if e.executor_id in ("low-3", "low-4"))
    run.step(ExecutorsChanged("low", still), at=30.0)  # the idle two are gone
    assert reclaims(run.step(at=49.0)) == []
    [kill] = reclaims(run.step(at=50.0))
    assert (kill.executor_ids, kill.mode) == (("low-3", "low-4"), ReclaimMode.KILL)
    assert reclaims(run.step(at=51.0)) == []


def test_idle_mode_takes_busy_executors_when_they_go_idle():
    run = preempted(-1.0)
    run.step(DemandChanged("high", 4), at=20.0)
    busy_now_idle = tuple(
        Executor(e.executor_id, e.started_at, idle=e.executor_id == "low-3")
        for e in executors("low", 4, idle=2)
        if e.executor_id in ("low-3", "low-4")
    )
    [order] = reclaims(run.step(ExecutorsChanged("low", busy_now_idle), at=30.0))
    assert (order.executor_ids, order.mode) == (("low-3",), ReclaimMode.IDLE)


def test_idle_mode_orders_again_an_executor_that_got_busy_before_it_was_released():
    run = preempted(-1.0)
    run.step(DemandChanged("high", 4), at=20.0)  # low-1, low-2 ordered while idle
    busy_again = tuple(Executor(e.executor_id, e.started_at, idle=False)
                       for e in executors("low", 4))
    assert reclaims(run.step(ExecutorsChanged("low", busy_again), at=21.0)) == []
    [order] = reclaims(run.hold("low", 4, idle=1, at=30.0))  # low-1 idle once more
    assert (order.executor_ids, order.mode) == (("low-1",), ReclaimMode.IDLE)


def committed(run: Run) -> int:
    """Executors held or granted, summed: what the cluster is promised."""
    return sum(max(r.held, r.grant) for r in run.sched.apps.values() if r.on_books)


def test_freed_executors_go_by_rank_and_never_twice():
    run = Run(one_queue(admission="none", policy="priority"), cores=4)
    run.submit(app("low").priority(1))
    run.step(DemandChanged("low", 4))
    run.hold("low", 4)
    run.submit(app("mid").priority(5000), app("top").priority(9000))
    out = run.step(DemandChanged("mid", 2), DemandChanged("top", 2))
    assert set_targets(out) == {"top": (2, 0), "mid": (2, 0), "low": (0, 0)}
    assert committed(run) == 4
    out = run.hold("low", 2)  # two of the four killed executors are gone
    assert set_targets(out) == {"top": (2, 2)}  # the higher rank first
    assert committed(run) == 4
    out = run.hold("low", 0)
    assert set_targets(out) == {"mid": (2, 2)}
    assert committed(run) == 4


def test_killed_app_keeps_its_executors_on_the_books_until_they_are_gone():
    run = Run(one_queue(admission="none", policy="fifo"), cores=4)
    run.submit(app("a"))
    run.step(DemandChanged("a", 4))
    run.hold("a", 4)
    run.submit(app("b"))
    run.step(DemandChanged("b", 4), KillRequested("a"))
    assert run.targets() == {"b": (4, 0)}
    run.step(DriverExited("a", 143))
    assert run.targets() == {"b": (4, 4)}


def test_unfilled_grants_are_cut_when_the_cluster_shrinks():
    run = Run(one_queue(admission="none", policy="fifo"), cores=1)
    run.submit(app("a"), app("b"))
    run.step(DemandChanged("a", 1), DemandChanged("b", 1))
    run.hold("a", 1)
    run.step(DemandChanged("a", 0))  # a's executor is being killed; b is owed it
    assert run.targets() == {"a": (0, 0), "b": (1, 0)}
    run.step(CapacityChanged(Resources(2, 1 << 20)))
    assert run.targets() == {"a": (0, 0), "b": (1, 1)}  # a worker joined: b starts there
    run.step(CapacityChanged(Resources(1, 1 << 20)))  # ... and left before b's executor started
    assert run.targets() == {"a": (0, 0), "b": (1, 0)}  # a still holds the only core
    assert committed(run) == 1


# --- reclaim follows the others' unmet need ------------------------------------------------


def dipped(timeout: float = 0.0, cores: int = 8) -> Run:
    """``mid`` (priority 5000) and ``low`` (1) hold 4 executors each (``*-1`` idle, the rest
    busy); then their demand dips to 1: targets 1, each holds 3 above it, nobody else waits."""
    q = one_queue(admission="none", policy="priority", reclaim_timeout_s=timeout)
    run = Run(q, cores=cores)
    run.submit(app("mid").priority(5000), app("low").priority(1), at=0.0)
    run.step(DemandChanged("mid", 4), DemandChanged("low", 4))
    run.hold("mid", 4, idle=1)
    run.hold("low", 4, idle=1)
    run.step(DemandChanged("mid", 1), DemandChanged("low", 1), at=5.0)
    return run


def ordered(decisions: list) -> dict[str, tuple[str, ...]]:
    return {d.app_id: d.executor_ids for d in reclaims(decisions)}


@pytest.mark.parametrize("timeout", [0.0, 30.0, -1.0], ids=["kill", "decommission", "idle"])
def test_demand_dip_with_nobody_waiting_reclaims_nothing(timeout):
    run = dipped(timeout)
    assert [reclaims(out) for out in run.log[-2:]] == [[], []]
    assert run.targets() == {"mid": (1, 1), "low": (1, 1)}
    assert [r.held for r in run.sched.apps.values()] == [4, 4]  # kept until Spark's idle timeout
    assert reclaims(run.step(at=100.0)) == []  # ... however long it lasts


# top (priority 9000) arrives after the dip wanting ``want`` executors.
# mid and low are above their target of 1 by 3 each; victims inside an app: idle, then youngest.
NEED = {
    "deficit 2, from the lowest-ranked app (low) first": (
        8, 2, {"low": ("low-1", "low-4")}),
    "deficit 5: all of low's surplus (3), then 2 from mid": (
        8, 5, {"mid": ("mid-1", "mid-4"), "low": ("low-1", "low-4", "low-3")}),
    "deficit 7: low's target falls to 0 (all 4 of its), 3 from mid": (
        8, 7, {"mid": ("mid-1", "mid-4", "mid-3"), "low": ("low-1", "low-4", "low-3", "low-2")}),
    "partial: 2 of 5 free (10 cores), only the other 3 are reclaimed": (
        10, 5, {"low": ("low-1", "low-4", "low-3")}),
    "free capacity covers it (12 cores): nothing reclaimed": (
        12, 4, {}),
}


@pytest.mark.parametrize("cores, want, victims", NEED.values(), ids=NEED.keys())
def test_reclaim_takes_exactly_the_deficit_from_the_lowest_ranked_first(cores, want, victims):
    run = dipped(cores=cores)
    run.submit(app("top").priority(9000), at=10.0)
    out = run.step(DemandChanged("top", want), at=11.0)
    assert ordered(out) == victims
    assert [d.mode for d in reclaims(out)] == [ReclaimMode.KILL] * len(victims)
    assert committed(run) <= cores
    assert reclaims(run.step(at=12.0)) == []  # the orders out cover the need: not ordered twice


def test_a_deficit_that_grows_takes_only_the_rest():
    run = dipped()
    run.submit(app("top").priority(9000), at=10.0)
    assert ordered(run.step(DemandChanged("top", 2), at=11.0)) == {"low": ("low-1", "low-4")}
    # top now wants 5: 2 are on their way, 3 more - low's last one above target, then mid
    out = run.step(DemandChanged("top", 5), at=12.0)
    assert ordered(out) == {"mid": ("mid-1", "mid-4"), "low": ("low-3",)}


def test_surplus_is_kept_once_the_need_is_met_otherwise():
    run = dipped()
    run.submit(app("top").priority(9000), at=10.0)
    run.step(DemandChanged("top", 2), at=11.0)  # low-1, low-4 ordered
    run.step(ExecutorsChanged("mid", executors("mid", 2)), at=12.0)  # mid's idle timeout: -2
    assert run.targets()["top"] == (2, 2)  # granted out of the cores mid let go
    low = tuple(e for e in executors("low", 4) if e.executor_id in ("low-2", "low-3"))
    out = run.step(ExecutorsChanged("low", low), at=13.0)  # the ordered two are gone
    assert reclaims(out) == []
    assert run.sched.apps["low"].held == 2  # one above its target of 1, kept: nobody needs it
    assert run.sched.check() == []


def test_idle_only_mode_takes_only_idle_executors_while_the_need_lasts():
    run = dipped(-1.0)
    run.submit(app("top").priority(9000), at=10.0)
    out = run.step(DemandChanged("top", 3), at=11.0)
    assert ordered(out) == {"mid": ("mid-1",), "low": ("low-1",)}  # the only idle ones
    assert [d.mode for d in reclaims(out)] == [ReclaimMode.IDLE] * 2
    # low-3 goes idle while top still lacks one: ordered (low ranks below mid)
    low = tuple(Executor(e.executor_id, e.started_at, idle=e.executor_id in ("low-1", "low-3"))
                for e in executors("low", 4))
    assert ordered(run.step(ExecutorsChanged("low", low), at=12.0)) == {"low": ("low-3",)}
    # top's demand drops to 2: the orders out cover it; mid-4 going idle is kept
    run.step(DemandChanged("top", 2), at=13.0)
    mid = tuple(Executor(e.executor_id, e.started_at, idle=e.executor_id in ("mid-1", "mid-4"))
                for e in executors("mid", 4))
    assert reclaims(run.step(ExecutorsChanged("mid", mid), at=14.0)) == []


def test_decommission_deadlines_unchanged():
    run = dipped(30.0)
    run.submit(app("top").priority(9000), at=10.0)
    [order] = reclaims(run.step(DemandChanged("top", 2), at=11.0))
    assert (order.app_id, order.executor_ids, order.mode, order.deadline) == (
        "low", ("low-1", "low-4"), ReclaimMode.DECOMMISSION, 41.0)
    assert run.sched.next_wakeup() == 41.0
    run.step(DemandChanged("top", 0), at=20.0)  # the need is gone; the two are leaving anyway
    assert reclaims(run.step(at=40.0)) == []
    [kill] = reclaims(run.step(at=41.0))
    assert (kill.app_id, kill.executor_ids, kill.mode, kill.deadline) == (
        "low", ("low-1", "low-4"), ReclaimMode.KILL, 41.0)


def capped(max_cores: int | None, timeout: float = 0.0, admission: str = "none"):
    return one_queue(admission=admission, policy="fifo", reclaim_timeout_s=timeout,
                     max_cores=max_cores)


def holding_eight(timeout: float) -> Run:
    """``a`` holds 8 busy executors of 1 core in a queue capped at 8 cores, wanting 8."""
    run = Run(capped(8, timeout), cores=16)
    run.submit(app("a"), at=0.0)
    run.step(DemandChanged("a", 8))
    run.hold("a", 8)
    assert run.targets() == {"a": (8, 8)}
    return run


@pytest.mark.parametrize(
    "timeout, mode, victims, deadline",
    [
        (0.0, ReclaimMode.KILL, ("a-8", "a-7", "a-6", "a-5", "a-4", "a-3"), 10.0),
        (30.0, ReclaimMode.DECOMMISSION, ("a-8", "a-7", "a-6", "a-5", "a-4", "a-3"), 40.0),
        (-1.0, None, (), None),
    ],
    ids=["kill: the surplus at once", "decommission: the surplus, gone by the deadline",
         "idle mode: busy executors are left until idle"],
)
def test_a_lowered_max_cores_is_enforced_with_nobody_waiting(timeout, mode, victims, deadline):
    run = holding_eight(timeout)
    out = run.step(QueuesChanged(capped(2, timeout)), at=10.0)
    assert set_targets(out) == {"a": (2, 2)}
    orders = reclaims(out)
    if mode is None:
        assert orders == []
        return
    [order] = orders
    assert (order.app_id, order.executor_ids, order.mode, order.deadline) == (
        "a", victims, mode, deadline)
    assert reclaims(run.step(at=11.0)) == []  # ordered once
    assert run.sched.check() == []


def test_idle_mode_takes_a_capped_apps_executors_as_they_go_idle():
    run = holding_eight(-1.0)
    run.step(QueuesChanged(capped(2, -1.0)), at=10.0)
    [order] = reclaims(run.hold("a", 8, idle=3, at=20.0))
    assert (order.executor_ids, order.mode) == (("a-3", "a-2", "a-1"), ReclaimMode.IDLE)


def test_a_dip_in_the_apps_own_demand_is_left_to_the_idle_timeout():
    run = holding_eight(0.0)
    out = run.step(DemandChanged("a", 2), at=10.0)
    assert set_targets(out) == {"a": (2, 2)}
    assert reclaims(out) == []  # nobody needs them: Spark's idle timeout releases them
    assert run.sched.check() == []


def test_a_raised_max_cores_starts_the_queues_waiting_apps():
    run = Run(capped(2, admission="demand"), cores=16)
    run.submit(app("a").min(2), app("b").min(2), at=0.0)
    assert (run.state("a"), run.state("b")) == ("STARTING", "ACCEPTED")
    out = run.step(QueuesChanged(capped(8, admission="demand")), at=10.0)
    assert launched(out) == ["b"]


def test_a_target_raised_again_while_its_executors_leave_is_granted_only_out_of_free_room():
    """low's 4 executors are being decommissioned for high; high then wants none and low's
    target is back at 4. Spark cannot call a decommission back: they leave all the same, so
    low may not be granted them again as if it kept them (its new executors would find their
    cores gone to whatever was promised them meanwhile); it is granted 4 once they are gone."""
    run = preempted(30.0)
    run.step(DemandChanged("high", 4), at=20.0)
    out = run.step(DemandChanged("high", 0), at=25.0)
    assert set_targets(out) == {"low": (4, 0), "high": (0, 0)}
    assert run.sched.check() == []
    out = run.hold("low", 0, at=30.0)
    assert set_targets(out) == {"low": (4, 4)}
