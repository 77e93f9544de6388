"""Heads kept waiting for a count (``engine.room.limit_waits``): a kept wait holds while its
queue stays full (its numbers follow the counts, this cluster's and the others') and the workers
stand; a new head takes it once the workers are found to hold it."""

from sessionsched.engine import (
    Adopted,
    CapacityChanged,
    DriverExited,
    DriverStarted,
    PriorityChanged,
    Submitted,
)
from sessionsched.engine.clusters import ClusterSpec, Federation, OnCluster, Placed
from sessionsched.model import AppState, Resources
from tests.engine.engine_builders import Run, app, launched, leaf, parent, tree

ROOT = tree(parent("p", leaf("a", admission="none", max_running_apps=1),
                   leaf("b", admission="none"), max_running_apps=2))


def test_the_wait_follows_the_counts_of_the_leaf_and_its_parent():
    run = Run(ROOT, slots=10)
    run.submit(app("a1").queue("p.a"), app("b1").queue("p.b"))
    run.submit(app("a2").queue("p.a"), at=1.0)
    assert run.sched.waiting["root.p.a"].code == "parent_queue_full"  # root first: p is full
    run.step(DriverStarted("a1"), at=2.0)  # nothing of the counts moved: the wait kept
    assert run.sched.waiting["root.p.a"].code == "parent_queue_full"
    run.step(DriverExited("b1", 0), at=3.0)  # p has room again, a has not
    assert run.sched.waiting["root.p.a"].code == "queue_limit"
    assert launched(run.step(DriverExited("a1", 0), at=4.0)) == ["a2"]


def test_a_new_head_is_looked_at_again():
    run = Run(tree(leaf("a", admission="none", max_running_apps=1)), slots=10, cores=4)
    run.submit(app("a1").queue("a"), app("a2").queue("a"))
    run.step(at=0.5)  # a2 the head as the cycle starts: its wait kept
    assert run.sched.waiting["root.a"].code == "queue_limit"
    run.step(Submitted(app("a3").queue("a").priority(9999).in_cluster(8).spec()), at=1.0)
    # a3 is the head now, and larger than the cluster: held aside, a2 waits behind it
    assert run.sched.held["a3"].code == "does_not_fit_now"
    assert run.sched.waiting["root.a"].code == "queue_limit"


def test_an_app_ending_on_another_cluster_lets_the_next_one_in():
    root = tree(leaf("q", admission="none", max_running_apps=1))
    f = Federation(root, [ClusterSpec("x"), ClusterSpec("y")], driver_slots=10)
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(8, 8 * 4096))) for n in "xy"])
    out = f.step(1.0, [Submitted(app(a).queue("q").spec()) for a in ("q1", "q2")])
    where = {d.app_id: d.cluster for d in out if isinstance(d, Placed)}
    assert list(where) == ["q1"]
    for engine in f.engines.values():  # both count q1: q is full on either
        assert engine.waiting["root.q"].code == "queue_limit"
    f.step(2.0, [DriverStarted("q1")])
    out = f.step(3.0, [DriverExited("q1", 0)])
    assert [d.app_id for d in out if isinstance(d, Placed)] == ["q2"]


def test_a_full_queues_head_is_not_looked_at_again_while_nothing_moved():
    run = Run(tree(leaf("a", admission="none", max_running_apps=1)), slots=10)
    run.submit(app("a1").queue("a"), app("a2").queue("a"))
    run.step(at=0.5)  # a2 the head as the cycle starts: its wait kept
    viewed = []
    leaf_view = run.sched._leaf_view
    run.sched._leaf_view = lambda name: viewed.append(name) or leaf_view(name)
    run.step(at=1.0)
    assert viewed == []
    assert run.sched.waiting["root.a"].code == "queue_limit"
    run.step(DriverExited("a1", 0), at=2.0)  # the count moved: a2 looked at, and let in
    assert viewed == ["root.a"]


def _viewed(run: Run) -> list[str]:
    """The leaves whose head the engine builds a view of from now on."""
    viewed: list[str] = []
    leaf_view = run.sched._leaf_view
    run.sched._leaf_view = lambda name: viewed.append(name) or leaf_view(name)
    return viewed


def test_a_count_that_moves_and_still_fills_the_queue_keeps_the_wait_with_its_numbers():
    run = Run(tree(leaf("a", admission="none", max_running_apps=1)), slots=10)
    for a in ("a1", "a2"):  # adopted past the limit: 2 of 1
        spec = app(a).queue("a").spec()
        run.step(Adopted(spec, AppState.RUNNING, spec.priority, launched_at=0.0), at=0.1)
    run.submit(app("a3").queue("a"), at=0.5)
    run.step(at=0.6)
    assert "runs 2 app(s)" in run.sched.waiting["root.a"].text
    viewed = _viewed(run)
    run.step(DriverExited("a1", 0), at=1.0)  # 1 of 1: still full, its head not looked at
    assert viewed == []
    assert run.sched.waiting["root.a"].code == "queue_limit"
    assert "runs 1 app(s)" in run.sched.waiting["root.a"].text
    assert launched(run.step(DriverExited("a2", 0), at=2.0)) == ["a3"]
    assert viewed == ["root.a"]


def test_a_new_head_of_a_full_queue_waits_as_the_last_one_did_once_the_workers_hold_it():
    run = Run(tree(leaf("a", admission="none", max_running_apps=1)), slots=10, cores=4)
    run.submit(app("a1").queue("a"), app("a2").queue("a"))
    run.step(at=0.5)
    viewed = _viewed(run)
    run.step(Submitted(app("a3").queue("a").priority(9999).spec()), at=1.0)
    assert viewed == []  # a3 is the head now, and waits for the count as a2 did
    assert run.sched.waiting["root.a"].code == "queue_limit"
    assert run.sched.pending("root.a")[0] == "a3"
    run.step(PriorityChanged("a2", 10_000), at=2.0)
    assert viewed == []
    assert launched(run.step(DriverExited("a1", 0), at=3.0)) == ["a2"]
