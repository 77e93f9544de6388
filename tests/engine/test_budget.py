"""Bounded steps (``engine.budget``): a burst bigger than one admission slice is admitted over
several steps, in the order one unbounded step would have admitted it, none lost, and the
engine asks to be stepped again while a slice is left."""

import pytest
from engine_builders import Run, app, launched, leaf, tree

from sessionsched.engine import DriverExited, Scheduler
from sessionsched.engine.budget import ADMISSION_SLICE, UNBOUNDED, CycleBudget
from sessionsched.model import Resources


def sliced(run: Run, admit: int) -> Run:
    run.sched = Scheduler(run.root, Resources(run.cores, run.mem_mib), run.slots,
                          CycleBudget(admit=admit))
    return run


def burst(n: int, queues: tuple[str, ...] = ("q",)) -> list[app]:
    # priorities 1..n shuffled by a fixed stride, so rank order is not submission order
    return [app(f"a{i:02d}").queue(queues[i % len(queues)]).priority(1 + (i * 7) % n)
            for i in range(n)]


def admit_all(run: Run, apps: list[app]) -> list[list[str]]:
    """Submit ``apps`` at once, then step without news until a step launches nothing; the
    launches of each step."""
    return [launched(run.submit(*apps)), *steps_until_quiet(run)]


def test_a_burst_bigger_than_one_slice_is_admitted_over_several_steps_in_rank_order():
    apps = burst(10)
    run = sliced(Run(tree(leaf("q", admission="none")), cores=64, slots=64), admit=3)
    first = launched(run.submit(*apps))
    assert first == run_unbounded_order(apps)[:3]
    assert run.sched.waiting["root.q"].text == ADMISSION_SLICE.format(n=3)
    assert run.sched.next_wakeup() == run.now  # "step me again now": the slice continues
    rest = steps_until_quiet(run)
    assert [len(s) for s in [first, *rest]] == [3, 3, 3, 1]  # ceil(10 / 3) steps
    assert [a for s in [first, *rest] for a in s] == run_unbounded_order(apps)  # none lost
    assert run.sched.pending("root.q") == []
    assert run.sched.next_wakeup() > run.now  # only the starting timeouts are left


def steps_until_quiet(run: Run) -> list[list[str]]:
    """Step without news until a step launches nothing; the launches of each step."""
    out = []
    for _ in range(100):  # bounded: a step that never stops launching is a failure below
        run.now += 1.0
        step = launched(run.step())
        if not step:
            return out
        out.append(step)
    raise AssertionError("still launching after 100 steps")


def run_unbounded_order(apps: list[app], root=None, **kw) -> list[str]:
    """The order one unbounded step admits ``apps`` in (the reference)."""
    run = Run(root or tree(leaf("q", admission="none")), cores=64, slots=64, **kw)
    run.sched = Scheduler(run.root, Resources(run.cores, run.mem_mib), run.slots, UNBOUNDED)
    return launched(run.submit(*apps))


@pytest.mark.parametrize("admit", [1, 2, 5], ids=["slice 1", "slice 2", "slice 5"])
def test_slices_across_queues_keep_the_fair_walk_of_one_unbounded_step(admit):
    root = tree(leaf("a", admission="none", weight=2.0), leaf("b", admission="none"),
                leaf("c", admission="none"))
    apps = burst(12, ("a", "b", "c"))
    run = sliced(Run(root, cores=64, slots=64), admit=admit)
    steps = admit_all(run, apps)
    assert all(len(s) <= admit for s in steps)
    assert [a for s in steps for a in s] == run_unbounded_order(apps, root)


def test_limits_still_hold_across_slices_and_nothing_waits_forever():
    """max_running_apps of 4 and a slice of 3: 3, then 1 (the limit), then one per exit."""
    run = sliced(Run(tree(leaf("q", admission="none", max_running_apps=4)), cores=64,
                     slots=64), admit=3)
    apps = burst(6)
    order = run_unbounded_order(apps, tree(leaf("q", admission="none", max_running_apps=6)))
    assert launched(run.submit(*apps)) == order[:3]
    run.now += 1
    assert launched(run.step()) == order[3:4]
    assert "its max_running_apps is 4" in run.sched.waiting["root.q"].text
    run.now += 1
    assert launched(run.step(DriverExited(order[0], 0))) == order[4:5]
    run.now += 1
    assert launched(run.step(DriverExited(order[1], 0))) == order[5:6]


def test_the_same_events_give_the_same_decisions_with_a_slice():
    def history(run: Run) -> list:
        apps = burst(9, ("a", "b"))
        run.submit(*apps)
        for _ in range(4):
            run.now += 1
            run.step()
        return run.log

    root = tree(leaf("a", admission="none"), leaf("b", admission="stateaware",
                                                 starting_limit=2))
    one = history(sliced(Run(root, cores=64, slots=64), admit=2))
    two = history(sliced(Run(root, cores=64, slots=64), admit=2))
    assert one == two
    assert launched(one[0]) and len(launched(one[0])) == 2


@pytest.mark.parametrize("field", ["admit", "events"])
def test_a_slice_must_be_at_least_one(field):
    with pytest.raises(ValueError, match=f"CycleBudget.{field} must be at least 1, not 0"):
        CycleBudget(**{field: 0})


def test_the_default_budget_bounds_both_slices():
    budget = Scheduler(tree(leaf("q"))).budget
    assert budget.admit is not None and budget.events is not None
