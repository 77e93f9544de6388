"""The engine's frozen view (``Scheduler.view()``) and the facts decisions carry: what
everyone outside the engine reads instead of its books."""

from __future__ import annotations

import pytest
from engine_builders import Run, app, one_queue

from sessionsched.engine import (
    DriverExited,
    ExecutorsChanged,
    Forget,
    KillRequested,
    MarkState,
    PriorityChanged,
)
from sessionsched.model import AppState


def test_the_view_shows_each_app_as_the_books_have_it():
    run = Run(one_queue(admission="none", policy="fifo"), cores=4)
    run.submit(app("a"), app("b"), app("c"), at=1.0)
    run.hold("a", 2, at=2.0)
    view = run.sched.view()
    a = view.apps["a"]
    assert (a.state, a.executors, a.launched_at, a.first_executor_at) == (
        AppState.RUNNING, 2, 1.0, 2.0)
    assert (a.target, a.grant) == (run.sched.apps["a"].target, run.sched.apps["a"].grant)
    assert view.capacity.cores == 4


def test_positions_follow_priority_and_a_change_reorders_the_next_view():
    run = Run(one_queue(), cores=0, slots=0)  # no driver slot: everything queues
    run.submit(app("a"), app("b"), app("c"))
    first = run.sched.view()
    assert first.pending["root.q"] == ("a", "b", "c")
    assert [first.position(x) for x in "abc"] == [1, 2, 3]
    run.step(PriorityChanged("c", 9000))
    second = run.sched.view()
    assert second.pending["root.q"] == ("c", "a", "b")
    assert [second.position(x) for x in "abc"] == [2, 3, 1]
    # The first view is frozen: it still says what it said.
    assert first.pending["root.q"] == ("a", "b", "c") and first.position("c") == 3
    with pytest.raises(TypeError):
        first.apps["a"] = first.apps["b"]  # type: ignore[index]


def test_the_same_view_while_nothing_changed_and_a_new_one_when_something_did():
    run = Run(one_queue(), cores=0, slots=0)
    run.submit(app("a"))
    view = run.sched.view()
    run.step(at=5.0)
    assert run.sched.view() is view
    run.step(KillRequested("a"))
    after = run.sched.view()
    assert after is not view
    assert (after.apps["a"].state, after.position("a"), after.pending["root.q"]) == (
        AppState.KILLED, None, ())


def test_a_forgotten_app_leaves_the_view():
    run = Run(one_queue(), cores=0, slots=0)
    run.submit(app("a"), app("b"))
    run.step(KillRequested("a"))
    assert "a" in run.sched.view().apps
    run.step(Forget("a"))
    view = run.sched.view()
    assert "a" not in view.apps and "b" in view.apps


@pytest.mark.parametrize("events, state, exit_code", [
    ([DriverExited("a", 3)], AppState.FAILED, 3),
    ([DriverExited("a", 0)], AppState.FINISHED, 0),
    ([KillRequested("a")], AppState.KILLED, None),
], ids=["exit 3: FAILED with its code", "exit 0: FINISHED", "killed: no code"])
def test_mark_state_carries_the_time_and_exit_code_of_an_end(events, state, exit_code):
    run = Run(one_queue(admission="none"), cores=4)
    out = run.submit(app("a"), at=1.0)
    started = [d for d in out if isinstance(d, MarkState)]
    assert [(d.state, d.at) for d in started] == [(AppState.STARTING, 1.0)]
    out = run.step(ExecutorsChanged("a", ()), *events, at=7.0)
    [end] = [d for d in out if isinstance(d, MarkState)]
    assert (end.state, end.at, end.exit_code) == (state, 7.0, exit_code)


def test_mark_state_running_carries_the_first_executor_time_or_none_after_a_timeout():
    run = Run(one_queue(starting_timeout_s=30), cores=4)
    run.submit(app("a"), app("b"), at=0.0)
    [running] = [d for d in run.hold("a", 1, at=4.0) if isinstance(d, MarkState)
                 and d.state is AppState.RUNNING]
    assert running.first_executor_at == 4.0
    late = [d for d in run.step(at=40.0) if isinstance(d, MarkState) and d.app_id == "b"
            and d.state is AppState.RUNNING]
    assert [(d.first_executor_at, d.at) for d in late] == [(None, 40.0)]


def test_a_driver_exit_that_says_why_ends_the_app_with_that_reason():
    run = Run(one_queue(admission="none"), cores=4)
    run.submit(app("a"), app("b"))
    out = run.step(DriverExited("a", -1, "launch failed: no java"), DriverExited("b", 1))
    assert [(d.app_id, d.reason) for d in out if isinstance(d, MarkState)] == [
        ("a", "launch failed: no java"), ("b", "driver exited with code 1")]
    assert run.sched.view().apps["a"].reason == "launch failed: no java"
