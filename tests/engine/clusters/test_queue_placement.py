"""A queue's own placement rule (``Queue.placement``, ``engine.clusters.order``): the clusters
step in the tree's order, and a cluster passes over an app of such a queue while a cluster
that comes first by the queue's rule steps after it and has the cores free now for it.

Every case: clusters ``a`` and ``b`` (of 8 cores each unless it says), the tree ``spill``
(the default), leaves ``root.plain`` (the tree's rule) and ``root.own`` (its own rule, the
case's); apps of 4 cores each (an in-cluster driver of 1 core and one executor of 3) unless
big. ``before``: apps placed first, one step each, (app, leaf); then one step submits one more
app; the case checks where it was placed.
"""

from __future__ import annotations

import pytest

from sessionsched.engine.clusters import PlacementRule
from sessionsched.engine.waits import WaitCode
from tests.engine.clusters.test_federation import check, fed, placed, submit, whole
from tests.engine.engine_builders import app, leaf, parent, tree


def _tree(rule: str | None, on_parent: bool = False):
    if on_parent:  # set on a parent: its leaves inherit it
        return tree(leaf("plain"), parent("team", leaf("own"), placement=rule))
    return tree(leaf("plain"), leaf("own", placement=rule))


def big(app_id: str, queue: str):
    """An app of 8 cores: a driver of 1, one executor of 7."""
    return app(app_id).in_cluster(1).executor(7).min(1).max(1).queue(queue)


CASES = [
    # name, the own leaf's rule, sizes, apps placed before (app, leaf), the app submitted
    # then (app, leaf, big), the cluster it is placed on
    ("most-free-goes-to-the-emptier-cluster-while-the-tree-spills", "most_free", (8, 8),
     [("p1", "plain")], ("o1", "own", False), "b"),
    ("the-tree-spills-the-same-app-onto-a", None, (8, 8),
     [("p1", "plain")], ("o1", "own", False), "a"),
    ("the-tree-s-own-apps-still-spill", "most_free", (8, 8),
     [("p1", "plain")], ("p2", "plain", False), "a"),
    ("its-own-rule-the-same-as-the-tree-s-changes-nothing", "spill", (8, 8),
     [("p1", "plain")], ("o1", "own", False), "a"),
    ("the-cluster-it-prefers-has-no-room-for-it-it-goes-where-there-is", "most_free", (16, 4),
     [("p1", "plain")], ("o1", "own", True), "a"),
    ("weighted-by-placements-so-far", "weighted", (8, 8),
     [("p1", "plain")], ("o1", "own", False), "b"),
]


@pytest.mark.parametrize("rule,sizes,before,then,expected",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_queue_places_its_apps_by_its_own_rule(rule, sizes, before, then, expected):
    f = fed(dict(zip("ab", sizes, strict=True)), root=_tree(rule))
    for i, (app_id, queue) in enumerate(before):
        check(f, f.step(1.0 + i, submit(whole(app_id, queue=f"root.{queue}"))))
    assert f.cluster_of("p1") == "a"
    app_id, queue, is_big = then
    made = big(app_id, f"root.{queue}") if is_big else whole(app_id, queue=f"root.{queue}")
    out = f.step(10.0, submit(made))
    check(f, out)
    assert placed(out) == {app_id: expected}


def test_a_rule_set_on_a_parent_holds_for_its_leaves():
    f = fed({"a": 8, "b": 8}, root=_tree("most_free", on_parent=True))
    f.step(1.0, submit(whole("p1", queue="root.plain")))
    out = f.step(2.0, submit(whole("o1", queue="root.team.own")))
    check(f, out)
    assert placed(out) == {"o1": "b"}


def test_an_app_passed_over_waits_with_the_reason_while_the_cluster_it_prefers_refuses_it():
    """b has the cores but its queue copy there cannot start now (one starting app at a time,
    StateAware, and b's first one is still starting): a passes the app over with the reason,
    b holds it back with its own; it starts on b once b's first app has its executor."""
    root = tree(leaf("plain"), leaf("own", placement="most_free", admission="stateaware"))
    f = fed({"a": 8, "b": 16}, root=root)
    check(f, f.step(1.0, submit(whole("p1", queue="root.plain"))))  # on a
    check(f, f.step(2.0, submit(whole("o1", queue="root.own"))))  # most free: b
    assert f.cluster_of("o1") == "b"
    out = f.step(3.0, submit(whole("o2", queue="root.own")))
    check(f, out)
    assert placed(out) == {}  # b still has 12 free of 16, a 4 of 8: b comes first
    waits = f.engines["a"].view().waiting
    assert waits["root.own"].code is WaitCode.EXECUTOR_ROOM
    assert waits["root.own"].text == ("cluster b comes first by its queue's placement "
                                      "most_free and has the cores free now for it to start")
    assert f.engines["b"].view().waiting["root.own"].code is WaitCode.STARTING_LIMIT


def test_the_reasons_rule_names_are_the_configs():
    assert {r.value for r in PlacementRule} == {"spill", "most_free", "weighted"}
