"""A queue's ``max_wait``: a queued app that waited that long since its submission ends FAILED
with a reason saying so, at its deadline and not before; ``next_wakeup`` names the deadline.

Every case: one ``stateaware`` leaf ``root.q`` (starting_limit 1, so ``a``, submitted first,
is STARTING and the others wait), the queue's settings, the submissions (id, time, priority),
then steps: (time, events) -> the apps marked at that step and ``next_wakeup()`` after it.
"""

from __future__ import annotations

import pytest
from engine_builders import Run, app, marks, one_queue

from sessionsched.engine import KillRequested, PriorityChanged, QueuesChanged

LIMIT = {"max_wait_s": 60.0}
STARTING_TIMEOUT = 1000.0  # far beyond every deadline here: only max_wait decides


def _queues(**settings):
    return QueuesChanged(one_queue(admission="stateaware",
                                   starting_timeout_s=STARTING_TIMEOUT, **settings))


# name: (settings, [(app, submitted, priority)], [(at, events, marked, next_wakeup)])
CASES = {
    "at the deadline, not before": (
        LIMIT, [("a", 0, 5000), ("b", 10, 5000)],
        [(69.9, [], [], 70.0),  # b: 10 + 60
         (70.0, [], [("b", "FAILED")], STARTING_TIMEOUT)]),
    "off by default": (
        {}, [("a", 0, 5000), ("b", 10, 5000)],
        [(999.0, [], [], STARTING_TIMEOUT)]),
    "the earliest deadline first, then the next": (
        LIMIT, [("a", 0, 5000), ("b", 10, 5000), ("c", 5, 5000)],
        [(0.0, [], [], 65.0),  # c: 5 + 60
         (65.0, [], [("c", "FAILED")], 70.0),
         (70.0, [], [("b", "FAILED")], STARTING_TIMEOUT)]),
    "expired together: in rank order (priority first)": (
        LIMIT, [("a", 0, 5000), ("b", 1, 5000), ("c", 2, 9000)],
        [(100.0, [], [("c", "FAILED"), ("b", "FAILED")], STARTING_TIMEOUT)]),
    "a launched app has stopped waiting": (
        LIMIT, [("a", 0, 5000)],
        [(60.0, [], [], STARTING_TIMEOUT)]),
    "a killed app's deadline is dropped": (
        LIMIT, [("a", 0, 5000), ("b", 10, 5000)],
        [(20.0, [KillRequested("b")], [("b", "KILLED")], STARTING_TIMEOUT),
         (70.0, [], [], STARTING_TIMEOUT)]),
    "a new priority keeps the deadline": (
        LIMIT, [("a", 0, 5000), ("b", 10, 5000)],
        [(20.0, [PriorityChanged("b", 9000)], [], 70.0),
         (70.0, [], [("b", "FAILED")], STARTING_TIMEOUT)]),
    "a limit set later (a plan) holds for the apps already queued": (
        {}, [("a", 0, 5000), ("b", 10, 5000)],
        [(20.0, [_queues(max_wait_s=30.0)], [], 40.0),
         (40.0, [], [("b", "FAILED")], STARTING_TIMEOUT)]),
    "a longer limit set later postpones the deadline": (
        LIMIT, [("a", 0, 5000), ("b", 10, 5000)],
        [(20.0, [_queues(max_wait_s=120.0)], [], 130.0),
         (70.0, [], [], 130.0),
         (130.0, [], [("b", "FAILED")], STARTING_TIMEOUT)]),
    "a limit taken off: no deadline": (
        LIMIT, [("a", 0, 5000), ("b", 10, 5000)],
        [(20.0, [_queues()], [], STARTING_TIMEOUT),
         (500.0, [], [], STARTING_TIMEOUT)]),
}


@pytest.mark.parametrize("settings, submissions, steps", CASES.values(), ids=CASES.keys())
def test_max_wait(settings, submissions, steps):
    run = Run(one_queue(admission="stateaware", starting_timeout_s=STARTING_TIMEOUT,
                        **settings), slots=10)
    for app_id, at, priority in submissions:
        run.submit(app(app_id).submitted(at).priority(priority), at=0.0)
    assert run.state("a") == "STARTING"
    for at, events, marked, wakeup in steps:
        out = run.step(*events, at=at)
        assert marks(out) == marked, at
        assert run.sched.next_wakeup() == wakeup, at
        assert run.sched.check() == []


def test_the_reason_says_it_waited_too_long_and_how_long():
    run = Run(one_queue(admission="stateaware", **LIMIT), slots=10)
    run.submit(app("a"), app("b").submitted(10.0))
    run.step(at=75.0)  # 65 s since b's submission: one step late, as a slow cycle would be
    b = run.sched.apps["b"]
    assert b.state.value == "FAILED" and b.finished_at == 75.0
    assert b.reason == "waited too long: 65s queued in root.q, beyond its max_wait of 60s"
    assert run.sched.pending("root.q") == [] and run.sched.position("b") is None
    view = run.sched.view()
    assert view.apps["b"].reason == b.reason and view.pending["root.q"] == ()


def test_an_app_submitted_long_ago_expires_at_its_first_step():
    """A restart: the store's submit time is durable, so an app that passed its deadline
    while no scheduler ran ends at the first step, with how long it really waited."""
    run = Run(one_queue(**LIMIT), cores=0, slots=0)
    out = run.submit(app("old").submitted(0.0), at=7200.0)
    assert marks(out) == [("old", "FAILED")]
    assert run.sched.apps["old"].reason.startswith("waited too long: 7200s queued")


def test_among_ten_thousand_queued_only_the_one_due_expires():
    """The deadlines are a heap (its cost: ``benchmarks/engine_cycle.py``): a step takes
    the apps due, and the next deadline is the next app's."""
    run = Run(one_queue(admission="stateaware", **LIMIT), slots=10)
    run.submit(*(app(f"x{i}").submitted(float(i)) for i in range(10_000)), at=0.0)
    out = run.step(at=61.0)  # x0 is STARTING; x1 (61) is due
    assert marks(out) == [("x1", "FAILED")]
    assert run.sched.next_wakeup() == 62.0
    assert len(run.sched.pending("root.q")) == 9_998
