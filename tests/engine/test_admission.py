"""Admission: queue order, the three admission modes, limits, driver room, cross-queue fairness."""

import pytest
from engine_builders import Run, app, launched, leaf, marks, one_queue, parent, tree

from sessionsched.engine import (
    CapacityChanged,
    DemandChanged,
    DriverExited,
    ExecutorsChanged,
    PriorityChanged,
)
from sessionsched.engine.waits import WaitCode
from sessionsched.model import Resources, Worker


@pytest.mark.parametrize(
    "priorities, order",
    [
        ([5000, 5000, 5000], ["a", "b", "c"]),
        ([5000, 9000, 7000], ["b", "c", "a"]),
        ([1, 10000, 1], ["b", "a", "c"]),
    ],
    ids=["same priority: submission order", "priority first", "ties by submission order"],
)
def test_queue_order_is_priority_then_submission(priorities, order):
    run = Run(one_queue(admission="none"), slots=0)  # no slot: everything stays queued
    run.submit(*(app(n).priority(p) for n, p in zip("abc", priorities, strict=True)))
    assert run.sched.pending("root.q") == order
    assert [run.sched.position(a) for a in order] == [1, 2, 3]
    run.step(CapacityChanged(Resources(8, 1 << 20), driver_slots=1))
    assert run.sched.pending("root.q") == order[1:]


def test_priority_update_jumps_the_queue_at_once():
    """The Conductor demo, case 1: one driver slot, three apps, the third's priority raised."""
    run = Run(one_queue(admission="none"), slots=1)
    assert launched(run.submit(app("a"), app("b"), app("c"))) == ["a"]
    run.step(PriorityChanged("c", 9000))
    assert run.sched.pending("root.q") == ["c", "b"]
    assert run.sched.position("c") == 1
    assert launched(run.step(DriverExited("a", 0))) == ["c"]


def test_priority_update_does_not_stop_a_running_driver():
    run = Run(one_queue(admission="none"), slots=1)
    run.submit(app("low").priority(1))
    assert launched(run.submit(app("high").priority(10000))) == []  # non-preemptive
    assert run.state("low") == "STARTING"


# --- the three modes on the same burst: 6 in-cluster drivers (1 core) on 4 cores ----------


@pytest.mark.parametrize(
    "mode, first, targets",
    [
        # every core goes to a driver: no executor can ever start (the deadlock)
        ("none", ["a", "b", "c", "d"], {"a": 0, "b": 0, "c": 0, "d": 0}),
        # one app starting at a time
        ("stateaware", ["a"], {"a": 3}),
        # driver + 1 reserved executor = 2 cores each
        ("reserve", ["a", "b"], {"a": 1, "b": 1}),
    ],
    ids=["none deadlocks", "stateaware drips", "reserve keeps room for executors"],
)
def test_burst_of_in_cluster_drivers(mode, first, targets):
    run = Run(one_queue(admission=mode, policy="fifo"), cores=4)
    out = run.submit(*(app(n).in_cluster() for n in "abcdef"))
    assert launched(out) == first
    run.step(*(DemandChanged(a, 8) for a in first))
    assert {a: run.sched.apps[a].target for a in first} == targets


# --- stateaware ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limit, first", [(1, ["a"]), (2, ["a", "b"]), (3, ["a", "b", "c"])], ids=["1", "2", "3"]
)
def test_stateaware_starting_limit(limit, first):
    run = Run(one_queue(admission="stateaware", starting_limit=limit), slots=10)
    assert launched(run.submit(*(app(n) for n in "abcd"))) == first
    assert "starting_limit" in run.sched.waiting["root.q"].text


def test_stateaware_next_app_starts_when_the_first_has_an_executor():
    run = Run(one_queue(admission="stateaware"), slots=10)
    run.submit(app("a"), app("b"))
    run.step(DemandChanged("a", 2))
    out = run.hold("a", 1)
    assert marks(out)[:1] == [("a", "RUNNING")]
    assert launched(out) == ["b"]


def test_stateaware_starting_timeout_falls_back():
    run = Run(one_queue(admission="stateaware", starting_timeout_s=300.0), slots=10)
    run.submit(app("a"), app("b"), at=0.0)
    assert launched(run.step(at=299.0)) == []
    assert run.sched.next_wakeup() == 300.0
    out = run.step(at=300.0)
    assert marks(out)[0] == ("a", "RUNNING")
    assert "starting timeout" in run.sched.apps["a"].reason
    assert launched(out) == ["b"]


# --- reserve ------------------------------------------------------------------------------


def test_reserve_holds_each_reservation_until_met():
    # 4 cores, 2-core executors, client-mode drivers: room for two reservations of 1 executor
    run = Run(one_queue(admission="reserve", policy="fifo"), cores=4)
    out = run.submit(*(app(n).executor(2) for n in "abc"))
    assert launched(out) == ["a", "b"]
    assert run.sched.waiting["root.q"].code is WaitCode.EXECUTOR_ROOM
    assert run.sched.waiting["root.q"].text == (
        "no room for its first 1 executor(s), 2 cores/1024 MiB in all: 0 cores/1046528 MiB is"
        " left beside the drivers and executor floors of 2 admitted app(s)")
    # a's driver pre-processes for a long time: its reservation stays, c keeps waiting
    assert launched(run.step(at=1000.0)) == []
    assert run.targets() == {"a": (1, 1), "b": (1, 1)}
    # a gets its executor: its reservation is met and released, c is admitted
    out = run.hold("a", 1)
    assert run.sched.apps["a"].reserved == 0
    assert launched(out) == ["c"]


def test_reserve_reservation_is_min_executors_when_larger():
    run = Run(one_queue(admission="reserve"), cores=8)
    out = run.submit(app("a").min(3).executor(2), app("b").min(3).executor(2))
    assert launched(out) == ["a"]  # 3 x 2 = 6 cores reserved; b's 6 more do not fit in 8
    assert run.targets() == {"a": (3, 3)}


def test_reserve_takes_elastic_executors_back_for_a_newcomers_reservation():
    run = Run(one_queue(admission="reserve", policy="fifo"), cores=4)
    run.submit(app("a"))
    run.step(DemandChanged("a", 10))
    run.hold("a", 4)
    assert run.targets() == {"a": (4, 4)}
    out = run.submit(app("b"))
    assert launched(out) == ["b"]  # a's floor is 0 once met: b's reservation fits
    assert run.targets() == {"a": (3, 3), "b": (1, 0)}  # b waits for a's executor to go


def test_reserve_does_not_let_another_queue_eat_a_reservation():
    root = tree(leaf("r", admission="reserve"), leaf("n", admission="none"))
    run = Run(root, cores=2)
    run.submit(app("r1").queue("r").in_cluster())  # driver 1 + reserved executor 1 = 2 cores
    assert launched(run.submit(app("n1").queue("n").in_cluster())) == []
    assert "no room for its driver" in run.sched.waiting["root.n"].text


def test_reservation_waiting_for_a_reclaim_is_not_given_to_another_driver():
    root = tree(leaf("r", admission="reserve"), leaf("n", admission="none", policy="fifo"))
    run = Run(root, cores=2)
    run.submit(app("e").queue("n"))
    run.step(DemandChanged("e", 2))
    run.hold("e", 2)
    assert launched(run.submit(app("r1").queue("r"))) == ["r1"]
    assert run.targets() == {"e": (1, 1), "r1": (1, 0)}  # r1's executor is still e's
    assert launched(run.submit(app("n1").queue("n").in_cluster())) == []
    out = run.hold("e", 1)  # e's reclaimed executor is gone: the core is r1's, not n1's
    assert launched(out) == []
    assert run.targets() == {"e": (1, 1), "r1": (1, 1)}


def test_reserve_respects_max_cores_of_the_path():
    root = tree(parent("p", leaf("r", admission="reserve"), max_cores=4))
    run = Run(root, cores=100)
    out = run.submit(*(app(n).queue("p.r").executor(2) for n in "abc"))
    assert launched(out) == ["a", "b"]  # 2 + 2 reserved cores under max_cores 4
    assert "queue root.p, whose max_cores is 4" in run.sched.waiting["root.p.r"].text


# --- limits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "root, apps, first, waits_in",
    [
        (
            one_queue(admission="none", max_running_apps=2),
            [app("a"), app("b"), app("c")],
            ["a", "b"],
            "root.q",
        ),
        (
            tree(
                parent("p", leaf("x", admission="none"), leaf("y", admission="none"),
                       max_running_apps=2)
            ),
            [app("x1").queue("p.x"), app("x2").queue("p.x"), app("y1").queue("p.y")],
            ["x1", "y1"],  # one each: y's usage is lower once x1 runs
            "root.p.x",
        ),
    ],
    ids=["leaf max_running_apps", "parent max_running_apps"],
)
def test_max_running_apps(root, apps, first, waits_in):
    run = Run(root, slots=10)
    assert launched(run.submit(*apps)) == first
    assert "its max_running_apps is 2" in run.sched.waiting[waits_in].text


@pytest.mark.parametrize(
    "apps, slots, cores, first",
    [
        ([app("a"), app("b"), app("c")], 2, 100, ["a", "b"]),
        ([app(n).in_cluster(2) for n in "abc"], 0, 5, ["a", "b"]),
        ([app("a").in_cluster(4), app("b"), app("c")], 1, 4, ["a", "b"]),
    ],
    ids=[
        "client-mode drivers need driver slots, not cluster cores",
        "in-cluster drivers need cluster cores, not driver slots",
        "each kind against its own room",
    ],
)
def test_driver_room(apps, slots, cores, first):
    run = Run(one_queue(admission="none"), cores=cores, slots=slots)
    assert launched(run.submit(*apps)) == first


def test_in_cluster_driver_waits_for_cores_held_by_executors():
    run = Run(one_queue(admission="none", policy="fifo"), cores=4)
    run.submit(app("a"))
    run.step(DemandChanged("a", 4))
    run.hold("a", 4)
    assert launched(run.submit(app("b").in_cluster())) == []
    assert "no room for its driver" in run.sched.waiting["root.q"].text
    run.step(DemandChanged("a", 3))
    out = run.hold("a", 3)  # one executor released
    assert launched(out) == ["b"]


def test_memory_counts_for_in_cluster_drivers():
    run = Run(one_queue(admission="none"), cores=100, mem_mib=4096)
    out = run.submit(app("a").in_cluster(1, 3072), app("b").in_cluster(1, 3072))
    assert launched(out) == ["a"]


# --- across queues ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "weights, first",
    [
        ((1.0, 1.0), ["a1", "b1", "a2", "b2"]),
        # A 0/3 = B 0/1: by age a1; A 1/3 > B 0: b1; A 1/3 < B 1: a2, a3; A 3/3 = B 1: by age a4
        ((3.0, 1.0), ["a1", "b1", "a2", "a3"]),
    ],
    ids=["equal weights alternate", "weights 3:1"],
)
def test_cross_queue_admission_is_fair_by_usage_over_weight(weights, first):
    root = tree(
        leaf("A", admission="none", weight=weights[0]),
        leaf("B", admission="none", weight=weights[1]),
    )
    run = Run(root, slots=4)
    apps = [app(f"a{i}").queue("A") for i in range(1, 5)] + [
        app(f"b{i}").queue("B") for i in range(1, 5)
    ]
    assert launched(run.submit(*apps)) == first


def test_queue_using_less_goes_first_whatever_the_heads_priority():
    root = tree(leaf("A", admission="none", policy="fifo"), leaf("B", admission="none"))
    run = Run(root, cores=8, slots=2)
    run.submit(app("busy").queue("A"))
    run.step(DemandChanged("busy", 4))
    run.hold("busy", 4)
    out = run.submit(app("a-high").queue("A").priority(10000), app("b-low").queue("B").priority(1))
    assert launched(out) == ["b-low"]


def test_blocked_queue_holds_back_only_itself_and_strictly():
    # (Before workers were real this used a driver larger than the cluster; such an app is now
    # held aside with does_not_fit_now: see the next test.)
    root = tree(leaf("A", admission="none"), leaf("B", admission="none"))
    run = Run(root, cores=3, slots=4)
    run.submit(app("busy").queue("B"))
    run.step(DemandChanged("busy", 1))
    run.hold("busy", 1)
    out = run.submit(
        app("big").queue("A").in_cluster(3),  # fits the cluster, not the 2 cores free now
        app("small").queue("A"),  # would fit, but big is its queue's head
        app("other").queue("B"),
    )
    assert launched(out) == ["other"]
    assert run.sched.pending("root.A") == ["big", "small"]


def test_an_app_the_cluster_cannot_hold_now_does_not_block_its_queue():
    root = tree(leaf("A", admission="none"), leaf("B", admission="none"))
    run = Run(root, cores=3, slots=4)
    out = run.submit(
        app("big").queue("A").in_cluster(4),  # 4 cores: no worker of this cluster holds it
        app("small").queue("A"),  # goes ahead
        app("other").queue("B"),
    )
    assert launched(out) == ["small", "other"]
    assert run.sched.pending("root.A") == ["big"]
    wait = run.sched.held["big"]
    assert wait.code == "does_not_fit_now"
    assert wait.text == ("does not fit the cluster as it is now: the driver of 4 cores/1024 MiB"
                         " fits no worker (1 worker of 3 cores/1048576 MiB)")
    assert run.sched.view().held["big"] == wait


def test_tree_walk_picks_the_lighter_parent_first():
    # p1 already uses 2 cores through x; p2 uses none: p2's head goes first, then p1's.
    root = tree(
        parent("p1", leaf("x", admission="none", policy="fifo"), leaf("y", admission="none")),
        parent("p2", leaf("z", admission="none")),
    )
    run = Run(root, cores=8, slots=2)
    run.submit(app("x0").queue("p1.x"))
    run.step(DemandChanged("x0", 2))
    run.hold("x0", 2)
    out = run.submit(app("y1").queue("p1.y").priority(10000), app("z1").queue("p2.z"))
    assert launched(out) == ["z1"]  # one slot left after x0's driver


def test_executors_reported_by_cluster_move_starting_to_running():
    run = Run(one_queue(), slots=2)
    run.submit(app("a"))
    out = run.step(ExecutorsChanged("a", ()))
    assert run.state("a") == "STARTING" and marks(out) == []


def test_a_gpu_app_is_held_aside_while_its_gpu_worker_is_lost_and_starts_when_it_is_back():
    gpu_worker = Worker("g", Resources(4, 8192, (("gpu", 2),)), Resources(4, 8192, (("gpu", 2),)))
    cpu_worker = Worker("c", Resources(4, 8192), Resources(4, 8192))
    run = Run(tree(leaf("A", admission="demand")), cores=8, slots=4)
    run.step(CapacityChanged.of_workers((gpu_worker, cpu_worker), 4))
    run.step(CapacityChanged.of_workers((cpu_worker,), 4))  # the GPU worker is lost
    out = run.submit(app("gpu").queue("A").executor(1, 1024, (("gpu", 1),)),
                     app("plain").queue("A"))  # goes ahead
    assert launched(out) == ["plain"]
    wait = run.sched.held["gpu"]
    assert wait.code == "does_not_fit_now"
    assert wait.text == ("does not fit the cluster as it is now: an executor of 1 cores/1024"
                         " MiB/1 gpu fits no worker: no worker has gpu (1 worker of 4 cores/8192"
                         " MiB)")
    out = run.step(CapacityChanged.of_workers((gpu_worker, cpu_worker), 4))
    assert launched(out) == ["gpu"]


def test_an_app_whose_first_executors_pass_max_resources_is_held_aside():
    gpu_worker = Worker("g", Resources(4, 8192, (("gpu", 4),)), Resources(4, 8192, (("gpu", 4),)))
    run = Run(tree(leaf("A", admission="demand", max_resources=(("gpu", 1),))), cores=4)
    run.step(CapacityChanged.of_workers((gpu_worker,), 4))
    out = run.submit(app("gpu").queue("A").executor(1, 1024, (("gpu", 2),)),
                     app("plain").queue("A"))
    assert launched(out) == ["plain"]
    assert run.sched.held["gpu"].text == (
        "does not fit the cluster as it is now: 1 executor(s) of 2 gpu (at least 1) need 2 gpu,"
        " above max_resources gpu 1 of queue root.A")
