"""A submission asked of each cluster with its driver where that cluster runs it
(``service.clusters.fits``, ``engine.clusters.routing.run_by``): a client-mode driver is on the
scheduler's host on a standalone cluster (``a``) and a pod on Kubernetes (``b``), asked of b's
nodes and counted in b's room. Each cluster one worker of 4 cores."""

from __future__ import annotations

from dataclasses import replace

from sessionsched.engine import CapacityChanged, Submitted
from sessionsched.engine.clusters import ClusterSpec, Federation, OnCluster
from sessionsched.engine.clusters.view import MergedView
from sessionsched.model import Resources, Worker
from sessionsched.service.clusters.fits import dry_run_place, never_fits_anywhere
from tests.engine.engine_builders import app, one_queue

FOUR = Resources(4, 4 * 4096)


def view():
    f = Federation(one_queue(), [ClusterSpec("a"), ClusterSpec("b", drivers_in_cluster=True)],
                   driver_slots=None)
    f.step(0.0, [OnCluster(n, CapacityChanged(FOUR, None, (Worker(f"{n}1", FOUR, FOUR),)))
                 for n in "ab"])
    return MergedView().take(f)


def test_a_client_mode_driver_larger_than_bs_nodes_never_fits_b():
    big = replace(app("x").executor(1).spec(), driver=Resources(8, 1024))
    assert never_fits_anywhere(view(), big) is None  # on a its driver is on the host
    problem = never_fits_anywhere(view(), replace(big, clusters=("b",)))
    assert problem is not None and problem.startswith("on no cluster it may use: b: ")


def test_a_dry_run_counts_a_client_mode_drivers_pod_in_bs_room():
    """A 1-core driver and a first executor of 4 cores: a has room (the driver on the host),
    b has not (driver pod and executor: 5 cores of 4)."""
    spec = app("x").executor(4).min(1).max(1).spec()
    assert dry_run_place(view(), spec) == ("a", ("a", "b"))
    assert dry_run_place(view(), replace(spec, clusters=("b",))) == (None, ("b",))


def test_a_dry_run_names_the_cluster_its_queues_own_rule_puts_first():
    """a runs a 2-core app, b nothing: the tree (spill) would start the next app on a, which
    has room for it; its queue's ``most_free`` puts b first."""
    def on(root):
        f = Federation(root, [ClusterSpec("a"), ClusterSpec("b")], driver_slots=None)
        f.step(0.0, [OnCluster(n, CapacityChanged(FOUR, None, (Worker(f"{n}1", FOUR, FOUR),)))
                     for n in "ab"])
        f.step(1.0, [Submitted(app("busy").in_cluster(1).executor(1).min(1).max(1).spec())])
        assert f.cluster_of("busy") == "a"
        return MergedView().take(f)

    spec = app("x").executor(1).min(1).max(1).spec()
    assert dry_run_place(on(one_queue()), spec) == ("a", ("a", "b"))
    assert dry_run_place(on(one_queue(placement="most_free")), spec) == ("b", ("a", "b"))
