"""An app whose launch started nothing where it was placed (``LaunchUnavailable``: its
cluster's backend could not be reached) moves: taken off that cluster (``Unplaced``, said
before any new placement) and queued again in the others it may use and has not left, then
placed anew with its next attempt. With nowhere else to go it stays (``may_move``: the caller
tries the launch again there).

Every case: clusters ``a`` and ``b`` of 4 cores each, one leaf ``root.q``, apps of a whole
cluster each (``test_federation``'s helpers).
"""

from __future__ import annotations

import pytest

from sessionsched.engine import (
    DriverExited,
    DriverStarted,
    Forget,
    KillRequested,
    LaunchDriver,
    MarkState,
    PriorityChanged,
    StopDriver,
)
from sessionsched.engine.clusters import (
    ClusterReachable,
    LaunchUnavailable,
    Placed,
    Unplaced,
)
from tests.engine.clusters.test_federation import check, fed, placed, submit, whole
from tests.engine.engine_builders import leaf, tree

DOWN = "the memory cluster's master cannot be reached"


def about(decisions, app_id: str) -> list:
    return [d for d in decisions if d.app_id == app_id]


def test_moved_to_the_other_cluster_and_placed_there_in_one_step_the_move_first():
    f = fed()
    out = f.step(1.0, submit(whole("x")))
    assert placed(out) == {"x": "a"} and f.may_move("x")
    out = f.step(2.0, [LaunchUnavailable("x", DOWN)])
    check(f, out)
    said = about(out, "x")
    assert said[:3] == [Unplaced("x", "a", ("b",), DOWN), Placed("x", "b", 2),
                        LaunchDriver("x", said[2].terms)]
    # a says nothing of its leaving: no KILLED, no stop (nothing was started there).
    assert not [d for d in said if isinstance(d, StopDriver) or isinstance(d, MarkState)
                and d.state.terminal]
    assert f.cluster_of("x") == "b" and "x" not in f.engines["a"].apps
    assert not f.may_move("x")  # a was left already: b's own launch is tried again there


@pytest.mark.parametrize("case,before,copies,placed_on", [
    ("b-full", [submit(whole("y"), whole("z"))], ("b",), None),
    ("b-unreachable", [[ClusterReachable("b", False)]], ("b",), None),
    ("a-only-queue", [], ("a",), "a"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_where_it_goes(case, before, copies, placed_on):
    """b full: it waits in b's queue until b has room. b unreachable: it waits for b
    (may_move said no; a caller that sends it anyway is heard). A queue that may use a only:
    nowhere else, so queued again where it was."""
    root = tree(leaf("q", clusters=("a",))) if case == "a-only-queue" else None
    f = fed(root=root)
    f.step(1.0, submit(whole("x")))
    for i, events in enumerate(before):
        f.step(1.5 + i * 0.1, events)
    assert f.may_move("x") is (case == "b-full")
    out = f.step(2.0, [LaunchUnavailable("x", DOWN)])
    check(f, out)
    assert [d for d in out if isinstance(d, Unplaced)] == [Unplaced("x", "a", copies, DOWN)]
    assert placed(out).get("x") == placed_on
    if placed_on:
        assert [d for d in out if isinstance(d, Placed)][0].attempt == 2
    else:
        assert f.queued["x"].copies == list(copies) and f.cluster_of("x") is None
    if case == "b-full":  # (z, waiting in both, takes the room x left on a)
        out = f.step(3.0, [DriverExited("y", 0)])
        check(f, out)
        assert placed(out) == {"x": "b"}


@pytest.mark.parametrize("first", [
    [DriverStarted("x", "app-1")],  # its driver is up after all: not moved
    [KillRequested("x")],  # killed in the same batch, before
], ids=["started", "killed-before"])
def test_an_app_that_started_or_ended_stays(first):
    f = fed()
    f.step(1.0, submit(whole("x")))
    out = f.step(2.0, first + [LaunchUnavailable("x", DOWN)])
    check(f, out)
    assert not [d for d in out if isinstance(d, Unplaced | Placed)]
    assert f.cluster_of("x") == "a"


def test_its_priority_moves_with_it_and_a_second_move_goes_back_to_every_cluster():
    f = fed()
    f.step(1.0, submit(whole("x")))
    f.step(1.5, [PriorityChanged("x", 9000)])
    out = f.step(2.0, [LaunchUnavailable("x", DOWN)])
    assert placed(out) == {"x": "b"} and f.engines["b"].apps["x"].priority == 9000
    # b cannot be reached for it either, and it has left a: may_move says stay and try again.
    assert not f.may_move("x")
    out = f.step(3.0, [LaunchUnavailable("x", DOWN)])  # sent anyway: queued in both again
    check(f, out)
    assert [d for d in out if isinstance(d, Unplaced)] == [Unplaced("x", "b", ("a", "b"),
                                                                     DOWN)]
    assert [d.attempt for d in out if isinstance(d, Placed)] == [3]


def test_an_app_placed_nowhere_or_forgotten_is_not_moved_and_its_books_go():
    f = fed()
    out = f.step(1.0, [LaunchUnavailable("nobody", DOWN)])
    assert out == [] and f.check() == []
    f.step(2.0, submit(whole("x")))
    f.step(3.0, [LaunchUnavailable("x", DOWN)])
    assert f.tried == {"x": {"a"}}
    f.step(4.0, [KillRequested("x")])
    f.step(5.0, [Forget("x")])
    assert f.tried == {} and f.attempts == {}


@pytest.mark.parametrize("room_on_a", [False, True], ids=["a-full", "a-has-room"])
def test_moved_into_a_queue_whose_copy_of_it_is_still_being_withdrawn_it_keeps_that_copy(
        room_on_a):
    """x placed on b (a full) at the step before, its copy in a's queue not taken out yet
    (a stepped before b): that copy stays its place in a's queue - killed there, it would end
    the app - with its priority as it stands, and is placed when a has room."""
    f = fed()
    f.step(1.0, submit(whole("y")))  # y on a
    out = f.step(1.5, submit(whole("x")))
    assert placed(out) == {"x": "b"} and f.withdraw["a"] == ["x"]
    events = [PriorityChanged("x", 8000), LaunchUnavailable("x", DOWN)]
    out = f.step(2.0, ([DriverExited("y", 0)] if room_on_a else []) + events)
    check(f, out)
    assert [d for d in out if isinstance(d, Unplaced)] == [Unplaced("x", "b", ("a",), DOWN)]
    assert not [d for d in about(out, "x") if isinstance(d, MarkState) and d.state.terminal]
    assert f.engines["a"].apps["x"].priority == 8000
    if not room_on_a:
        assert f.queued["x"].copies == ["a"] and f.cluster_of("x") is None
        out = f.step(3.0, [DriverExited("y", 0)])
        check(f, out)
    assert [d for d in out if isinstance(d, Placed)] == [Placed("x", "a", 2)]
