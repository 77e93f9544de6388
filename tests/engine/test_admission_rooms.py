"""A driver counts where it runs (engine/host_room.py): a notebook's driver takes no room of the
scheduler's host, a driver on the host takes its memory with Spark's overhead, and a head waiting
for one room holds back only the apps behind it that need that room too."""

from __future__ import annotations

import pytest
from engine_builders import Run, app, launched, one_queue

from sessionsched.engine import CapacityChanged, DemandChanged
from sessionsched.model import Resources

ON_HOST = 1024 + 384  # spark.driver.memory 1g and Spark's 384 MiB floor of overhead


def _run(slots: int | None, host_mib: int | None, cores: int = 16, **queue) -> Run:
    run = Run(one_queue(**queue), cores=cores, slots=4)
    host = None if host_mib is None else Resources(2, host_mib)
    run.sched.driver_slots = slots
    run.step(CapacityChanged(Resources(cores, 1 << 20), host_room=host))
    return run


CASES = {
    # name: (slots, host MiB, cores, apps, admitted at once, the queue's wait code)
    "notebooks take no driver slot": (
        1, None, 16, [app("n1").notebook(), app("n2").notebook(), app("n3").notebook(),
                      app("batch")], ["n1", "n2", "n3", "batch"], None),
    "eight notebooks and a batch app on the measured host": (
        None, 8 * ON_HOST, 16, [*(app(f"n{i}").notebook() for i in range(8)), app("batch")],
        [*(f"n{i}" for i in range(8)), "batch"], None),
    "the host's memory bounds its drivers, overhead included": (
        None, 3 * ON_HOST + 100, 16, [app(f"c{i}") for i in range(4)],
        ["c0", "c1", "c2"], "host_room"),
    "spark.driver.memoryOverhead set: that overhead": (
        None, 2 * 1124, 16, [app(f"c{i}").driver_mem(1024, 100) for i in range(3)],
        ["c0", "c1"], "host_room"),
    "a 10 % overhead above 3840 MiB of driver memory": (
        None, 2 * (8192 + 819), 16, [app(f"c{i}").driver_mem(8192) for i in range(3)],
        ["c0", "c1"], "host_room"),
    "driver_slots stays a cap beside the host's memory": (
        2, 100 * ON_HOST, 16, [app(f"c{i}") for i in range(3)], ["c0", "c1"], "driver_slot"),
    "unmeasured host and no cap: no bound on the host": (
        None, None, 16, [app(f"c{i}") for i in range(6)], [f"c{i}" for i in range(6)], None),
    # head-of-line across rooms
    "a notebook goes past a head that waits for the host": (
        None, ON_HOST, 16, [app("c0"), app("c1"), app("nb").notebook(), app("c2")],
        ["c0", "nb"], "host_room"),
    "an in-cluster driver goes past a head that waits for the host": (
        1, None, 16, [app("c0"), app("c1"), app("k").in_cluster(), app("c2")],
        ["c0", "k"], "driver_slot"),
    "apps that need the room the head waits for keep their order": (
        None, ON_HOST, 16, [app("c0"), app("c1"), app("nb").notebook(), app("c2"),
                            app("nb2").notebook()],
        ["c0", "nb", "nb2"], "host_room"),
}


@pytest.mark.parametrize("slots, host_mib, cores, apps, first, code", CASES.values(),
                         ids=CASES.keys())
def test_rooms(slots, host_mib, cores, apps, first, code):
    run = _run(slots, host_mib, cores, admission="none")
    assert launched(run.submit(*apps)) == first
    wait = run.sched.waiting.get("root.q")
    assert (wait.code if wait else None) == code


@pytest.mark.parametrize("mode", ["none", "demand"])
def test_only_apps_needing_no_cluster_room_pass_a_head_waiting_for_it(mode):
    run = _run(None, None, 4, admission=mode, policy="fifo")
    run.submit(app("busy"))
    run.step(DemandChanged("busy", 4))
    run.hold("busy", 4)
    out = run.submit(app("k").in_cluster(), app("nb").notebook(), app("solo").max(0),
                     app("c"))
    assert launched(out) == ["solo"]
    assert run.sched.pending("root.q") == ["k", "nb", "c"]
    assert run.sched.waiting["root.q"].code in {"driver_room", "executor_room", "running_demand"}


def test_host_room_reason_names_the_hosts_memory():
    run = _run(None, 2 * ON_HOST, admission="demand")
    run.submit(app("c0"), app("c1"), app("c2"))
    wait = run.sched.waiting["root.q"]
    assert wait.text == (
        "no room on the scheduler's host for its client-mode driver: it needs 1408 MiB"
        " (spark.driver.memory 1024 MiB and its overhead); the host's memory holds 2816 MiB of"
        " drivers beside the scheduler, 2816 MiB of it held by 2 client-mode driver(s) there")
    assert run.sched.view().host_room == Resources(2, 2 * ON_HOST)


def test_a_driver_ended_on_the_host_gives_its_room_back():
    from sessionsched.engine import DriverExited

    run = _run(None, ON_HOST, admission="none")
    assert launched(run.submit(app("c0"), app("c1"))) == ["c0"]
    assert launched(run.step(DriverExited("c0", 0))) == ["c1"]
