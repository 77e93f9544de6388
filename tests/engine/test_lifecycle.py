"""App lifecycle: kills, driver exits, YuniKorn's StateAware examples, adoption after restart,
bad events."""

import copy

import pytest
from engine_builders import (
    Run,
    app,
    executors,
    launched,
    leaf,
    marks,
    one_queue,
    stopped,
    tree,
)

from sessionsched.engine import (
    Adopted,
    CapacityChanged,
    DemandChanged,
    DriverExited,
    DriverStarted,
    EventError,
    ExecutorsChanged,
    Forget,
    KillRequested,
    LaunchDriver,
    MarkState,
    PriorityChanged,
    QueuesChanged,
    SetTarget,
    Submitted,
)
from sessionsched.model import AppState, Executor, Resources

# --- kills and exits ----------------------------------------------------------------------


def test_kill_of_a_queued_app_removes_it_from_its_queue():
    run = Run(one_queue(admission="stateaware"), slots=10)
    run.submit(app("a"), app("b"), app("c"))
    out = run.step(KillRequested("c"))
    assert marks(out) == [("c", "KILLED")] and stopped(out) == []
    assert run.sched.pending("root.q") == ["b"] and run.sched.position("c") is None
    run.hold("a", 1)
    assert launched(run.log[-1]) == ["b"]


def test_kill_of_a_running_app_stops_its_driver_once():
    run = Run(one_queue(), slots=10)
    run.submit(app("a"))
    out = run.step(KillRequested("a"))
    assert stopped(out) == ["a"] and marks(out) == [("a", "KILLED")]
    assert run.step(KillRequested("a")) == []


@pytest.mark.parametrize(
    "code, state", [(0, "FINISHED"), (1, "FAILED"), (-9, "FAILED")], ids=["ok", "error", "signal"]
)
def test_driver_exit(code, state):
    run = Run(one_queue(admission="stateaware"), slots=10)
    run.submit(app("a"), app("b"))
    out = run.step(DriverExited("a", code))
    assert marks(out) == [("a", state), ("b", "STARTING")]  # a left STARTING: b may start
    assert run.sched.apps["a"].exit_code == code


def test_driver_exit_gives_executors_to_the_others():
    run = Run(one_queue(admission="none", policy="fifo"), cores=4)
    run.submit(app("a"), app("b"))
    run.step(DemandChanged("a", 4), DemandChanged("b", 4))
    run.hold("a", 4)
    assert run.targets() == {"a": (4, 4), "b": (0, 0)}
    run.step(DriverExited("a", 0))
    assert run.targets() == {"b": (4, 4)}


def test_driver_exit_of_a_never_launched_app_leaves_the_queue():
    run = Run(one_queue(), slots=0)
    run.submit(app("a"))
    run.step(DriverExited("a", 1))
    assert run.state("a") == "FAILED" and run.sched.pending("root.q") == []


# --- YuniKorn's StateAware policy: its documented "Example run" ---------------------------


def test_stateaware_example_run():
    run = Run(one_queue(admission="stateaware"), cores=8)
    e = executors  # E11, E12 for App1; E21 for App2

    # 1-2. Both wait; App1, the oldest, gets its driver D1 and is STARTING; App2 is not looked at.
    out = run.submit(app("App1"), app("App2"))
    assert out == [
        LaunchDriver("App1"),
        MarkState("App1", AppState.STARTING, "driver launched"),
    ]
    assert run.state("App2") == "ACCEPTED"
    # 3. App1 requests E11 and E12; the scheduler assigns them.
    out = run.step(DemandChanged("App1", 2))
    assert out == [SetTarget("App1", 2, 2)]
    assert run.state("App2") == "ACCEPTED"  # still: App1 is starting
    # ... and App1 is RUNNING once it has an executor; 4. then App2 gets its driver D2.
    out = run.step(ExecutorsChanged("App1", e("App1", 2)))
    assert out == [
        MarkState("App1", AppState.RUNNING, "first executor registered"),
        LaunchDriver("App2"),
        MarkState("App2", AppState.STARTING, "driver launched"),
    ]
    # 5. App2 requests E21 and is RUNNING when E21 is allocated.
    assert run.step(DemandChanged("App2", 1)) == [SetTarget("App2", 1, 1)]
    out = run.step(ExecutorsChanged("App2", e("App2", 1)))
    assert out == [MarkState("App2", AppState.RUNNING, "first executor registered")]


# --- YuniKorn's StateAware policy: its state rules -------------------------------------------


def in_state(run: Run, name: str, state: str, queue: str = "q") -> None:
    spec = app(name).queue(queue).spec()
    if state == "ACCEPTED":
        run.step(Submitted(spec))
    else:
        run.step(Adopted(spec, AppState(state), spec.priority, launched_at=0.0))


@pytest.mark.parametrize(
    "apps, admitted",
    [
        ([("r1", "RUNNING"), ("r2", "RUNNING"), ("a1", "ACCEPTED"), ("a2", "ACCEPTED")], ["a1"]),
        ([("s1", "STARTING"), ("a1", "ACCEPTED")], []),
        ([("a1", "ACCEPTED"), ("a2", "ACCEPTED")], ["a1"]),
    ],
    ids=[
        "all running apps pass; one accepted app is added when none is starting",
        "a starting app (even with no pending request) keeps accepted apps out",
        "the oldest accepted app first",
    ],
)
def test_stateaware_filter(apps, admitted):
    run = Run(one_queue(admission="stateaware"), slots=0)  # nobody admitted while setting up
    for name, state in apps:
        in_state(run, name, state)
    out = run.step(CapacityChanged(Resources(8, 1 << 20), driver_slots=10))
    assert launched(out) == admitted


def test_stateaware_rule_is_per_queue():
    run = Run(tree(leaf("x", admission="stateaware"), leaf("y", admission="stateaware")), slots=0)
    in_state(run, "s1", "STARTING", "x")
    in_state(run, "x1", "ACCEPTED", "x")
    in_state(run, "y1", "ACCEPTED", "y")
    out = run.step(CapacityChanged(Resources(8, 1 << 20), driver_slots=10))
    assert launched(out) == ["y1"]


def test_stateaware_running_apps_get_resources_before_the_starting_one():
    run = Run(one_queue(admission="stateaware", policy="fifo"), cores=8)
    run.submit(app("r1"))
    run.hold("r1", 1)
    run.submit(app("s1"))
    run.step(DemandChanged("r1", 8), DemandChanged("s1", 2))
    assert run.targets() == {"r1": (8, 8), "s1": (0, 0)}
    assert run.state("s1") == "STARTING"


# --- after a restart ----------------------------------------------------------------------


def test_adopted_apps_are_not_launched_again_and_count_for_limits():
    run = Run(one_queue(admission="none", max_running_apps=1), slots=10)
    spec = app("old").spec()
    out = run.step(Adopted(spec, AppState.RUNNING, 7000, launched_at=-50.0, first_executor_at=-40))
    assert launched(out) == [] and run.state("old") == "RUNNING"
    assert run.sched.apps["old"].priority == 7000
    assert launched(run.submit(app("new"))) == []
    assert "max_running_apps" in run.sched.waiting["root.q"].text


def test_adopted_reserve_app_without_executor_gets_its_reservation_back():
    run = Run(one_queue(admission="reserve"), cores=2)
    spec = app("old").spec()
    run.step(Adopted(spec, AppState.STARTING, spec.priority, launched_at=0.0))
    assert run.sched.apps["old"].reserved == 1
    out = run.submit(app("a").executor(2))
    assert launched(out) == []  # 1 core reserved for old: a's 2-core reservation does not fit


def test_driver_started_records_the_spark_app_id():
    run = Run(one_queue(), slots=10)
    run.submit(app("a"))
    assert run.step(DriverStarted("a", "app-2026-0001")) == []
    assert run.sched.apps["a"].spark_app_id == "app-2026-0001"


# --- queue changes ------------------------------------------------------------------------


def test_new_queue_tree_applies_at_once():
    run = Run(one_queue(admission="none", max_running_apps=1), slots=10)
    run.submit(app("a"), app("b"))
    out = run.step(QueuesChanged(tree(leaf("q", admission="none"), leaf("new"))))
    assert launched(out) == ["b"]
    assert set(run.sched.usage()) == {"root", "root.q", "root.new"}


def test_an_empty_queue_may_be_removed():
    run = Run(tree(leaf("q"), leaf("gone")), slots=10)
    run.submit(app("a"))
    run.step(QueuesChanged(one_queue()))
    assert set(run.sched.usage()) == {"root", "root.q"}
    assert run.sched.usage()["root"].starting == 1


# --- forgetting ended apps ----------------------------------------------------------------

# How an app ended before it is forgotten: the events, in one batch or one per step. In every
# case "a" held 2 executors, "b" is queued behind it and "c" running beside it.
FORGET_CASES = {
    "killed while queued": ([KillRequested("b")], "b"),
    "driver exited, executors die with it": ([DriverExited("a", 0)], "a"),
    "failed driver": ([DriverExited("a", 3)], "a"),
    "killed while running, executors gone later": (
        [KillRequested("a"), ExecutorsChanged("a", ())], "a"),
}


def forget_setup() -> Run:
    run = Run(one_queue(admission="none", policy="fairshare"), cores=4, slots=2)
    run.submit(app("a"), app("c"), app("b"))  # two driver slots: b waits
    run.step(DemandChanged("a", 4), DemandChanged("c", 4))
    run.hold("a", 2)
    run.hold("c", 2)
    return run


@pytest.mark.parametrize("batched", [False, True], ids=["steps", "same batch"])
@pytest.mark.parametrize("name", list(FORGET_CASES))
def test_forget_an_ended_app(name, batched):
    events, gone = FORGET_CASES[name]
    run = forget_setup()
    if batched:
        run.step(*events, Forget(gone))
    else:
        for ev in events:
            run.step(ev)
        assert run.step(Forget(gone)) == []  # forgetting decides nothing by itself
    assert gone not in run.sched.apps and run.sched.check() == []
    assert set(run.sched.apps) == {"a", "b", "c"} - {gone}
    with pytest.raises(EventError, match="unknown app"):
        run.step(DemandChanged(gone, 1))  # late facts about it are about an unknown app


def test_forgetting_leaves_the_others_as_they_were_and_frees_nothing_twice():
    run = forget_setup()
    run.step(DriverExited("a", 0))  # b starts in a's driver slot; c may take a's cores
    before = {i: (r.state, r.target, r.grant) for i, r in run.sched.apps.items() if i != "a"}
    usage = run.sched.usage()
    run.step(Forget("a"))
    assert {i: (r.state, r.target, r.grant) for i, r in run.sched.apps.items()} == before
    assert run.sched.usage() == usage and run.sched.check() == []


def test_forgotten_app_with_a_decommission_deadline_pending():
    run = Run(one_queue(admission="none", policy="priority", reclaim_timeout_s=30.0), cores=4)
    run.submit(app("low").priority(1))
    run.step(DemandChanged("low", 4))
    run.hold("low", 4)
    run.submit(app("high").priority(9000), at=10.0)
    run.step(DemandChanged("high", 4), at=20.0)  # low ordered to decommission by 50.0
    assert run.sched.next_wakeup() == 50.0
    run.step(DriverExited("low", 0), Forget("low"), at=30.0)
    run.step(at=50.0)  # its deadline passes: nothing to kill, nothing breaks
    assert "low" not in run.sched.apps and run.sched.check() == []


def test_a_forgotten_id_may_be_submitted_again_as_a_new_app():
    run = Run(one_queue(), slots=10)
    run.submit(app("a"))
    run.step(KillRequested("a"), Forget("a"), Submitted(app("a").spec()))
    assert run.state("a") == "STARTING" and run.sched.check() == []


# Forget refused: the setup, the events, the message.
FORGET_REFUSED = {
    "queued": ([], "b", "app is ACCEPTED, not ended"),
    "running": ([], "c", "app is RUNNING, not ended"),
    "killed, executors still on the books": (
        [KillRequested("a")], "a", "still holds executors"),
    "executors came back in the batch": (
        [DriverExited("a", 0), ExecutorsChanged("a", executors("a", 1))], "a",
        "still holds executors"),
    "forgotten twice": ([KillRequested("b"), Forget("b")], "b", "unknown app"),
    "unknown id": ([], "nobody", "unknown app"),
}


@pytest.mark.parametrize("name", list(FORGET_REFUSED))
def test_forget_refused(name):
    events, target, message = FORGET_REFUSED[name]
    run = forget_setup()
    books = copy.deepcopy(run.sched.apps)
    with pytest.raises(EventError) as err:
        run.sched.step(5.0, [*events, Forget(target)])
    assert message in str(err.value) and f"(Forget {target})" in str(err.value)
    assert run.sched.apps == books and run.sched.check() == []


# --- bad events: one line, and nothing changes --------------------------------------------


def bad_specs():
    return {
        "unknown queue": (Submitted(app("x").queue("nope").spec()), "'root.nope' is not a leaf"),
        "duplicate id": (Submitted(app("a").spec()), "already submitted"),
        "priority 0": (Submitted(app("x").priority(0).spec()), "priority 0 is not"),
        "executor without cores": (Submitted(app("x").executor(0).spec()), "executor 0 cores"),
        "max below min": (Submitted(app("x").min(3).max(2).spec()), "below minExecutors 3"),
        "adopted as queued": (
            Adopted(app("x").spec(), AppState.ACCEPTED, 5000, 0.0),
            "must be STARTING or RUNNING",
        ),
        "unknown app": (PriorityChanged("nobody", 10), "unknown app"),
        "priority too high": (PriorityChanged("a", 10001), "priority 10001 is not"),
        "negative demand": (DemandChanged("a", -1), "demand -1"),
        "executors of a queued app": (
            ExecutorsChanged("b", executors("b", 1)),
            "never launched",
        ),
        "the same executor twice": (
            ExecutorsChanged("a", (Executor("1"), Executor("1"))),
            "listed twice",
        ),
        "negative capacity": (CapacityChanged(Resources(-1, 0)), "capacity -1 cores"),
        # Taken, it failed every commit after it (the store's INTEGER column): the scheduler
        # put each cycle back and stepped it again, for ever.
        "exit code past 32 bits": (
            DriverExited("a", 10**23),
            "exit code 100000000000000000000000 is not a whole number from -2147483648 to "
            "2147483647",
        ),
        "queue with apps removed": (
            QueuesChanged(tree(leaf("other"))),
            "cannot be removed: root.q",
        ),
        "not an event": ("submit a", "not an event"),
    }


@pytest.mark.parametrize("name", list(bad_specs()))
def test_bad_event_is_refused_with_one_line_and_changes_nothing(name):
    event, message = bad_specs()[name]
    run = Run(one_queue(admission="stateaware"), slots=10)
    run.submit(app("a"), app("b"))  # a STARTING, b queued
    books = copy.deepcopy(run.sched.apps)
    newcomer = app("newcomer").spec()
    with pytest.raises(EventError) as err:
        run.sched.step(5.0, [Submitted(newcomer), event])
    text = str(err.value)
    assert message in text and "\n" not in text and text.startswith("event 1 (")
    assert (err.value.index, err.value.event) == (1, event)
    assert run.sched.apps == books  # the good event before it was not applied either
    assert run.sched.pending("root.q") == ["b"]
    run.hold("a", 1)  # and the scheduler goes on as before
    assert run.state("b") == "STARTING"
