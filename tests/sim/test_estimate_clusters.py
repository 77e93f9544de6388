"""``sim.estimate`` behind several clusters (``Live.clusters``): the forward run is the
federation's, each launched app on its own cluster, so an app that may use only a busy cluster
is estimated to wait for it even while another cluster has room. Clusters ``a`` and ``b`` of 4
cores each; ``a0`` runs on a with all 4 as its floor (minExecutors 4 of 1 core) for 100 s
more."""

from __future__ import annotations

from dataclasses import replace

from sessionsched.model import AppState, Resources
from sessionsched.sim.estimate import Live, LiveCluster, Queued, Running, dry_run, estimate
from tests.sim.test_estimate import FAST, spec, tree

FOUR = Resources(4, 8192)


def live(queued, on_a_only=(), placement="spill", clustered=True) -> Live:
    run = Running(spec(0, min_executors=4, max_executors=4), AppState.RUNNING, 5000, 4, 100.0,
                  30.0, 29.0, demand=4, cluster="a")
    queued = [Queued(replace(q.spec, clusters=("a",)), q.priority, q.run_s)
              if q.spec.app_id in on_a_only else q for q in queued]
    clusters = (LiveCluster("a", FOUR, 4), LiveCluster("b", FOUR, 4)) if clustered else ()
    return Live(tree(), FOUR + FOUR, 8, (run,), tuple(queued), FAST, clusters, placement)


def test_an_app_that_may_use_only_the_busy_cluster_waits_for_it():
    got = estimate(live([Queued(spec(1), 5000, 50.0), Queued(spec(2), 5000, 50.0)],
                        on_a_only={"a1"}))
    assert 100 <= got["a1"].start_in_s <= 110  # when a0 ends on a
    assert got["a2"].start_in_s <= 5  # b has room now


def test_taken_as_one_cluster_the_same_state_would_start_it_at_once():
    """What the estimate was before it knew the clusters apart: 4 of 8 cores free."""
    got = estimate(live([Queued(spec(1), 5000, 50.0)], on_a_only={"a1"}, clustered=False))
    assert got["a1"].start_in_s <= 5


def test_a_dry_run_behind_several_clusters_says_where_it_would_wait():
    state = live([Queued(spec(1), 5000, 50.0)], on_a_only={"a1"})
    pinned = Queued(replace(spec(3), clusters=("a",)), 5000, 50.0)
    answer = dry_run(state, pinned)
    assert answer.estimate.start_in_s is not None and answer.estimate.start_in_s >= 100
    assert answer.position == 2  # behind a1, in the one queue over both clusters
    assert answer.cluster == "a"  # the only one it may use


def test_an_app_that_may_use_only_a_cluster_out_of_reach_gets_no_estimate():
    """b is out of reach: an app that may use only b gets none (b offers no room while it is
    lost); one that may use a or b waits for a, not for b's idle cores."""
    state = live([Queued(replace(spec(1), clusters=("b",)), 5000, 50.0),
                  Queued(spec(2), 5000, 50.0)])
    state = replace(state, clusters=(state.clusters[0], replace(state.clusters[1],
                                                                reachable=False)))
    got = estimate(state)
    assert got["a1"].start_in_s is None
    assert 100 <= got["a2"].start_in_s <= 110


def test_a_dry_run_names_the_cluster_it_would_start_on_the_apps_queued_ahead_counted():
    """b has its cores free now, but a1, queued ahead and allowed only b, takes them for 500 s;
    a frees at 100 s (a0 ends): the new app would start on a, not on b, where the cores are
    free now."""
    ahead = Queued(replace(spec(1, min_executors=3, max_executors=3), clusters=("b",)), 5000,
                   500.0)
    answer = dry_run(live([ahead]), Queued(spec(2, min_executors=3, max_executors=3), 5000,
                                           50.0))
    assert answer.position is not None  # it waits (a1 starts on b first)
    assert answer.cluster == "a"
    assert 100 <= answer.estimate.start_in_s <= 110
    alone = dry_run(live([]), Queued(spec(2, min_executors=3, max_executors=3), 5000, 50.0))
    assert (alone.position, alone.cluster) == (None, "b")  # nothing ahead: b's free cores
