"""``demand`` admission (the default): one named row per behaviour, Kueue style.

Each row sets the scene with a few engine steps and says which apps the *last* step launched
(in order) and, when a head is left waiting, a phrase of the reason its queue gives.
Apps: 1-core drivers and 1-core executors unless the row says otherwise; "in-cluster" drivers
take cluster cores, client-mode ones a driver slot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from engine_builders import Run, app, launched, leaf, one_queue, tree

from sessionsched.engine import DemandChanged, DriverExited
from sessionsched.model import AppState, Resources


def demand_queue(**settings) -> object:
    return one_queue(admission="demand", policy="fifo", **settings)


def running(run: Run, app_id: str, demand: int, held: int) -> None:
    """Let an admitted app report its demand and hold ``held`` executors."""
    run.step(DemandChanged(app_id, demand))
    run.hold(app_id, held)
    assert run.state(app_id) == "RUNNING"


@dataclass(frozen=True)
class Case:
    scene: Callable[[], tuple[Run, list]]  # -> the run and its last step's decisions
    launched: list[str]
    waits: str | None  # a phrase of root.q's (or the named queue's) reason, None: not waiting
    queue: str = "root.q"


def burst_stops_at_the_driver_fraction():
    # 10 cores x 0.4 = 4 cores for in-cluster drivers; room for 5 (driver + first executor)
    run = Run(demand_queue(), cores=10)
    return run, run.submit(*(app(n).in_cluster() for n in "abcdef"))


def burst_stops_where_first_executors_fill_the_room():
    # fraction 1: only the room binds; 6 cores / (1 driver + 1 first executor) = 3 apps
    run = Run(demand_queue(max_driver_fraction=1.0), cores=6)
    return run, run.submit(*(app(n).in_cluster() for n in "abcde"))


def a_queue_without_drivers_may_start_one():
    # 2 cores x 0.4 = 0.8 core: no 1-core driver fits the fraction, but one may always start
    run = Run(demand_queue(), cores=2)
    return run, run.submit(app("a").in_cluster(), app("b").in_cluster())


def one_ahead(run: Run, a: app) -> None:
    """Submit an app that starts ahead of the room its first executors need (one per leaf)."""
    assert launched(run.submit(a)) == [a.id]
    assert run.sched.apps[a.id].ahead


def running_demand_holds_the_head_back():
    run = Run(demand_queue(), cores=8)
    run.submit(app("a"))
    running(run, "a", 8, 8)  # a wants the whole cluster
    one_ahead(run, app("x"))
    return run, run.submit(app("b"))


def one_driver_starts_ahead_of_the_room():
    # a wants the whole cluster, b's first executor has no room: b's driver (a driver slot)
    # starts anyway, one per queue - it may pre-process while a runs
    run = Run(demand_queue(), cores=8)
    run.submit(app("a"))
    running(run, "a", 8, 8)
    return run, run.submit(app("b"), app("c"))


def an_in_cluster_driver_goes_ahead_only_if_its_driver_fits_beside_the_demand():
    run = Run(demand_queue(), cores=8)
    run.submit(app("a"))
    running(run, "a", 8, 8)  # 8 cores wanted: no core for b's in-cluster driver
    return run, run.submit(app("b").in_cluster())


def the_next_goes_ahead_once_the_one_ahead_has_an_executor():
    run = Run(demand_queue(), cores=8)
    run.submit(app("a"))
    running(run, "a", 8, 7)  # a wants all 8 cores
    one_ahead(run, app("x"))
    run.submit(app("b"))
    return run, run.hold("x", 1)


def room_the_running_apps_do_not_want_is_used():
    run = Run(demand_queue(), cores=8)
    run.submit(app("a"))
    running(run, "a", 3, 3)  # 5 cores nobody wants: b's driver slot and first executor fit
    return run, run.submit(app("b"))


def demand_going_down_lets_the_head_in():
    run = Run(demand_queue(), cores=8)
    run.submit(app("a"))
    running(run, "a", 8, 8)
    one_ahead(run, app("x"))
    run.submit(app("b"))
    return run, run.step(DemandChanged("a", 5))  # a's last tasks: 3 executors go idle


def lower_priority_demand_does_not_hold_back_a_higher_head():
    run = Run(one_queue(admission="demand", policy="priority"), cores=8)
    run.submit(app("low").priority(1000))
    running(run, "low", 8, 8)
    return run, run.submit(app("high").priority(9000))  # low gives executors back by reclaim


def equal_priority_demand_holds_back_a_later_head_in_a_fifo_queue():
    run = Run(one_queue(admission="demand", policy="fifo"), cores=8)
    run.submit(app("a").priority(7000))
    running(run, "a", 8, 8)
    one_ahead(run, app("x").priority(7000))
    return run, run.submit(app("b").priority(7000))  # fifo would give b nothing while a wants


def a_fairshare_queue_admits_an_equal_priority_head_to_its_share():
    # a wants all 8 cores, but fairshare would give b half: a's need counts up to its 4
    run = Run(one_queue(admission="demand", policy="fairshare"), cores=8)
    run.submit(app("a").priority(7000))
    running(run, "a", 8, 8)
    return run, run.submit(app("b").priority(7000))


def a_fairshare_head_whose_share_holds_no_executor_waits():
    # b's share beside a (weights 1000:10000) is 8 x 1/11 of a core: not one executor
    run = Run(one_queue(admission="demand", policy="fairshare"), cores=8)
    run.submit(app("a").priority(10000))
    running(run, "a", 8, 8)
    one_ahead(run, app("x").priority(1000))
    return run, run.submit(app("b").priority(1000))


def a_fairshare_head_counts_the_drivers_admitted_with_it():
    # 6 cores, 1-core in-cluster drivers and executors, fraction 1: each newcomer's share
    # beside the others' first executors must still hold one executor: a, b, c (3 drivers,
    # 3 first executors); d would leave 2 cores for 4 apps, but its driver starts ahead
    run = Run(one_queue(admission="demand", policy="fairshare", max_driver_fraction=1.0),
              cores=6)
    return run, run.submit(*(app(n).in_cluster() for n in "abcde"))


def another_queues_demand_does_not_hold_a_head_back():
    run = Run(tree(leaf("x", admission="demand"), leaf("y", admission="demand")), cores=8)
    run.submit(app("a").queue("x"))
    running(run, "a", 8, 8)
    return run, run.submit(app("b").queue("y"))


def client_mode_drivers_do_not_count_toward_the_fraction():
    # 5 driver slots; the cluster's 3 cores hold 3 first executors (d starts ahead)
    run = Run(demand_queue(), cores=3, slots=5)
    return run, run.submit(*(app(n) for n in "abcde"))


def each_leaf_reaches_its_weight_share():
    # 10 cores, two leaves of weight 3 and 2: x reaches 6 cores (0.4 x 6 = 2.4 drivers), y 4
    # (1.6 drivers: one, and a queue may always start one, so y's second waits)
    root = tree(leaf("x", admission="demand", weight=3), leaf("y", admission="demand", weight=2))
    run = Run(root, cores=10)
    return run, run.submit(*(app(n).queue("x").in_cluster() for n in "abc"),
                           *(app(n).queue("y").in_cluster() for n in "de"))


def a_lone_busy_queue_reaches_what_idle_siblings_leave():
    # 10 cores, x (weight 1) beside three idle leaves of weight 3: x would reach 1 core by
    # weight (one driver at a time), but the idle ones share nothing: 0.4 x 10 = 4 drivers
    root = tree(leaf("x", admission="demand", weight=1),
                *(leaf(n, admission="demand", weight=3) for n in ("y", "z", "w")))
    run = Run(root, cores=10)
    return run, run.submit(*(app(n).queue("x").in_cluster() for n in "abcdef"))


def max_cores_cuts_what_a_queue_reaches():
    # 20 cores, but root.q may use 5: 0.4 x 5 = 2 drivers
    run = Run(demand_queue(max_cores=5), cores=20)
    return run, run.submit(*(app(n).in_cluster() for n in "abcd"))


def driver_memory_counts_toward_the_fraction():
    # 16 cores but 10 GiB: 0.4 x 10 GiB = 4 GiB of drivers, 2 GiB each
    run = Run(demand_queue(), cores=16, mem_mib=10 * 1024)
    return run, run.submit(*(app(n).in_cluster(1, 2048) for n in "abcd"))


def a_starting_app_stops_counting_at_its_starting_timeout():
    # 1 core: a's first executor fills it while a is STARTING (a driver that never asks
    # for executors, or pre-processes); at its starting timeout it stops counting
    run = Run(demand_queue(starting_timeout_s=300.0), cores=1, slots=4)
    run.submit(app("a"), app("b"), app("c"), at=0.0)
    assert launched(run.log[-1]) == ["a", "b"]  # b ahead of the room
    return run, run.step(at=300.0)


def tiny_apps_pass_the_fraction_while_they_fit_whole():
    # a driver core per executor core (maxExecutors 1): 3 apps hold all 6 cores at most,
    # 3 drivers > 0.4 x 6; a fourth would not fit whole. All 3 in one cycle: no launch pacing
    run = Run(demand_queue(), cores=6)
    return run, run.submit(*(app(n).in_cluster().max(1) for n in "abcde"))


def heavy(name: str) -> app:
    """A driver-heavy app: a 1-core in-cluster driver and at most one 1-core executor."""
    return app(name).in_cluster().max(1)


def driver_heavy_apps_launch_together_while_there_is_room():
    run = Run(demand_queue(), cores=6)  # room for 3 whole
    return run, run.submit(heavy("a"), heavy("b"), heavy("c"))


def a_driver_heavy_head_does_not_wait_for_launched_drivers_to_come_up():
    # a and b launched, neither driver reported up nor holding an executor: c still starts
    run = Run(demand_queue(), cores=6)
    run.submit(heavy("a"), heavy("b"))
    return run, run.submit(heavy("c"))


def a_heavy_head_does_not_wait_behind_other_launches():
    run = Run(demand_queue(), cores=8)
    run.submit(app("a").in_cluster().max(2))  # not heavy: 2 executor cores per driver core
    return run, run.submit(heavy("b"))


def apps_using_more_than_their_driver_launch_together():
    run = Run(demand_queue(), cores=9)  # 0.4 x 9: 3 drivers; room for their first executors
    return run, run.submit(*(app(n).in_cluster().max(2) for n in "abc"))


def an_uncapped_app_keeps_the_queue_at_the_fraction():
    # a may grow to the whole cluster: the apps never fit whole, 0.4 x 6 = 2 drivers
    run = Run(demand_queue(), cores=6)
    return run, run.submit(app("a").in_cluster(), *(app(n).in_cluster().max(1) for n in "bcd"))


def alone_drivers(run: Run) -> None:
    """a-d: in-cluster drivers STARTING from t=0 that fill 0.4 x 10 cores; e waits behind them."""
    run.submit(*(app(n).in_cluster() for n in "abcd"), at=0.0)
    run.submit(app("e").in_cluster(), at=1.0)
    assert run.sched.waiting["root.q"].text.startswith("the in-cluster drivers")


def drivers_working_alone_stop_counting_toward_the_fraction():
    # at their starting timeout a-d have no executor and ask for none: drivers working alone
    run = Run(demand_queue(starting_timeout_s=300.0), cores=10)
    alone_drivers(run)
    return run, run.step(at=300.0)


def a_driver_asking_after_its_timeout_counts_again():
    run = Run(demand_queue(starting_timeout_s=300.0), cores=10)
    alone_drivers(run)
    return run, run.step(*(DemandChanged(n, 1) for n in "abcd"), at=300.0)


CASES = {
    "burst: in-cluster drivers stop at max_driver_fraction of the cores":
        Case(burst_stops_at_the_driver_fraction, ["a", "b", "c", "d"], "max_driver_fraction"),
    "burst: the starting apps' first executors fill the room":
        Case(burst_stops_where_first_executors_fill_the_room, ["a", "b", "c"],
             "above their floors"),
    "a queue running no in-cluster driver may always start one (YARN's rule)":
        Case(a_queue_without_drivers_may_start_one, ["a"], "max_driver_fraction"),
    "the running apps' demand holds the head back":
        Case(running_demand_holds_the_head_back, [], "above their floors"),
    "one driver starts ahead of the room its first executors need":
        Case(one_driver_starts_ahead_of_the_room, ["b"], "above their floors"),
    "a driver goes ahead only if it fits beside the running apps' demand":
        Case(an_in_cluster_driver_goes_ahead_only_if_its_driver_fits_beside_the_demand, [],
             "above their floors"),
    "the next driver goes ahead once the one ahead has its executor":
        Case(the_next_goes_ahead_once_the_one_ahead_has_an_executor, ["b"], None),
    "room the running apps do not want is used":
        Case(room_the_running_apps_do_not_want_is_used, ["b"], None),
    "demand going down lets the head in":
        Case(demand_going_down_lets_the_head_in, ["b"], None),
    "lower-priority demand does not hold back a higher-priority head":
        Case(lower_priority_demand_does_not_hold_back_a_higher_head, ["high"], None),
    "equal-priority demand holds back a later head in a fifo queue":
        Case(equal_priority_demand_holds_back_a_later_head_in_a_fifo_queue, [],
             "above their floors"),
    "fairshare: running apps' demand counts only up to their share with the head in":
        Case(a_fairshare_queue_admits_an_equal_priority_head_to_its_share, ["b"], None),
    "fairshare: a head whose share would hold no executor waits":
        Case(a_fairshare_head_whose_share_holds_no_executor_waits, [], "above their floors"),
    "fairshare: a burst stops where a newcomer's share holds no first executor":
        Case(a_fairshare_head_counts_the_drivers_admitted_with_it, ["a", "b", "c", "d"],
             "above their floors"),
    "another queue's demand does not hold a head back":
        Case(another_queues_demand_does_not_hold_a_head_back, ["b"], None, "root.y"),
    "client-mode drivers do not count toward the fraction":
        Case(client_mode_drivers_do_not_count_toward_the_fraction, ["a", "b", "c", "d"],
             "above their floors"),
    "each leaf reaches its share of the cluster by weight":
        Case(each_leaf_reaches_its_weight_share, ["a", "d", "b"],
             "hold 2 cores/2048 MiB; with its driver's 1 cores/1024 MiB they would pass"
             " max_driver_fraction 0.4 of the 6 cores",
             "root.x"),
    "a lone busy queue reaches what its idle siblings leave (YARN's elastic queues)":
        Case(a_lone_busy_queue_reaches_what_idle_siblings_leave, ["a", "b", "c", "d"],
             "hold 4 cores/4096 MiB; with its driver's 1 cores/1024 MiB they would pass"
             " max_driver_fraction 0.4 of the 10 cores", "root.x"),
    "max_cores cuts the cores a queue reaches":
        Case(max_cores_cuts_what_a_queue_reaches, ["a", "b"], "of the 5 cores"),
    "driver memory counts toward the fraction":
        Case(driver_memory_counts_toward_the_fraction, ["a", "b"], "max_driver_fraction"),
    "a starting app stops counting at its starting timeout (StateAware fallback)":
        Case(a_starting_app_stops_counting_at_its_starting_timeout, ["c"], None),
    "tiny apps: drivers pass the fraction while the queue's apps fit whole":
        Case(tiny_apps_pass_the_fraction_while_they_fit_whole, ["a", "b", "c"],
             "max_driver_fraction"),
    "an app without an executor cap keeps its queue's drivers at the fraction":
        Case(an_uncapped_app_keeps_the_queue_at_the_fraction, ["a", "b"], "max_driver_fraction"),
    "drivers working alone past their starting timeout stop counting toward the fraction":
        Case(drivers_working_alone_stop_counting_toward_the_fraction, ["e"], None),
    "a driver that asks for executors counts toward the fraction again":
        Case(a_driver_asking_after_its_timeout_counts_again, [], "max_driver_fraction"),
    "driver-heavy apps launch together, in one cycle, while there is room":
        Case(driver_heavy_apps_launch_together_while_there_is_room, ["a", "b", "c"], None),
    "a driver-heavy head does not wait for launched drivers to come up":
        Case(a_driver_heavy_head_does_not_wait_for_launched_drivers_to_come_up, ["c"], None),
    "a driver-heavy head does not wait behind other apps' launches":
        Case(a_heavy_head_does_not_wait_behind_other_launches, ["b"], None),
    "apps that may use more than their driver launch together":
        Case(apps_using_more_than_their_driver_launch_together, ["a", "b", "c"], None),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_demand_admission(case: Case):
    run, out = case.scene()
    assert launched(out) == case.launched
    reason = run.sched.waiting.get(case.queue)
    if case.waits is None:
        assert reason is None
    else:
        assert reason is not None and case.waits in reason.text, reason
    assert run.sched.check() == []


def test_nothing_is_set_aside_for_a_starting_app():
    # a pre-processes (STARTING, no demand) while b grows: b may take every free core,
    # where `reserve` would keep one for a until a's first executor.
    run = Run(demand_queue(), cores=4, slots=4)
    run.submit(app("b"))
    running(run, "b", 2, 2)
    run.submit(app("a"))
    assert run.state("a") == "STARTING"
    run.step(DemandChanged("b", 4))
    assert run.targets() == {"b": (4, 4), "a": (0, 0)}


def test_the_default_admission_is_demand():
    run = Run(one_queue(), cores=10)
    assert run.sched.queue("root.q").admission.value == "demand"
    out = run.submit(*(app(n).in_cluster() for n in "abcdef"))
    assert launched(out) == ["a", "b", "c", "d"]  # 0.4 x 10 cores of drivers


def test_a_failed_driver_frees_its_place_at_once():
    run = Run(demand_queue(), cores=2)  # one in-cluster driver and its first executor
    run.submit(app("a").in_cluster(), app("b").in_cluster())
    assert run.state("b") == AppState.ACCEPTED.value
    out = run.step(DriverExited("a", 1))
    assert launched(out) == ["b"]
    assert run.sched.capacity == Resources(2, 1 << 20)


def test_a_deep_driver_heavy_burst_is_admitted_as_fast_as_the_slice_allows():
    # the driver-heavy burst: 500 apps of a 1-core driver and one 1-core executor on 1,200
    # cores fit whole (1,000 cores): admitted in ceil(500 / 200) = 3 steps (the budget's
    # slice), not one per driver start
    run = Run(demand_queue(), cores=1200)
    per_step = [len(launched(run.submit(*(heavy(f"t{i:03d}") for i in range(500)))))]
    while run.sched.waiting.get("root.q") is not None:
        per_step.append(len(launched(run.step())))
    assert per_step == [200, 200, 100]
    assert run.sched.check() == []


def test_a_deep_burst_that_would_deadlock_stops_at_the_driver_fraction():
    # 600 in-cluster drivers of uncapped apps on 100 cores (stock Spark: every core a driver,
    # deadlock): 0.4 x 100 = 40 drivers, each with room for its first executor beside them
    run = Run(demand_queue(), cores=100)
    out = run.submit(*(app(f"d{i:03d}").in_cluster() for i in range(600)))
    assert len(launched(out)) == 40
    assert launched(run.step()) == []
    assert "max_driver_fraction" in run.sched.waiting["root.q"].text
