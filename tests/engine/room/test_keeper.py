"""Admission's room, its per-queue figures kept between cycles (``engine.room``): each cycle's
room is the one built from scratch, and a leaf whose apps change moves the next decision."""

from sessionsched.engine import DriverExited, DriverStarted, PriorityChanged
from sessionsched.engine.room.keeper import RoomKeeper
from tests.engine.engine_builders import Run, app, launched, leaf, parent, tree

ROOT = tree(parent("p", leaf("a", admission="none", max_running_apps=1),
                   leaf("b", admission="none"), max_running_apps=3))


PER_QUEUE = ("admitted_in", "usage_cores", "floor_cores_in", "drivers_in", "whole_in",
             "unbounded_in", "ahead_in", "weight_share")


def _figures(room) -> dict:
    """The room's per-queue figures, in the order they were built."""
    return {f: list(getattr(room, f).items()) for f in PER_QUEUE}


def _from_scratch(run: Run) -> dict:
    s = run.sched
    return _figures(RoomKeeper().room(s.books, s.capacity, s.driver_slots, s.host_room,
                                      s.reports, s.elsewhere, s.offered_later, s._weight_shares,
                                      s.max_cores_left))


def _kept(run: Run) -> dict:
    return _figures(run.sched._room())


def test_an_app_ending_in_one_leaf_lets_the_next_one_in():
    run = Run(ROOT, slots=10)
    first = run.submit(app("a1").queue("p.a"), app("a2").queue("p.a"), app("b1").queue("p.b"))
    assert launched(first) == ["a1", "b1"]
    assert run.sched.waiting["root.p.a"].code == "queue_limit"
    assert _kept(run) == _from_scratch(run)
    run.step(DriverStarted("a1"), DriverStarted("b1"), at=1.0)
    assert _kept(run) == _from_scratch(run)
    assert launched(run.step(DriverExited("a1", 0), at=2.0)) == ["a2"]  # a's one place, free
    assert _kept(run) == _from_scratch(run)


def test_a_leaf_gaining_its_first_app_shares_the_weight_again():
    run = Run(ROOT, slots=10)
    run.submit(app("b1").queue("p.b"), app("b2").queue("p.b"))
    shares = run.sched._room().weight_share
    run.submit(app("a1").queue("p.a"), at=1.0)
    assert run.sched._room().weight_share != shares  # a is busy now: b shares with it
    assert _kept(run) == _from_scratch(run)


def test_a_priority_change_in_a_full_parent_picks_the_other_leafs_head():
    run = Run(ROOT, slots=10)
    run.submit(app("a1").queue("p.a"), app("b1").queue("p.b"), app("b2").queue("p.b"))
    run.submit(app("a2").queue("p.a").priority(1), app("b3").queue("p.b").priority(1), at=1.0)
    assert run.sched.waiting["root.p.b"].code == "parent_queue_full"
    assert launched(run.step(DriverExited("a1", 0), at=2.0)) == ["a2"]  # a: the least used
    run.step(PriorityChanged("b3", 9), at=3.0)
    assert _kept(run) == _from_scratch(run)
