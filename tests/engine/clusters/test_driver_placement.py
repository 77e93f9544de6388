"""Where an app's driver runs depends on the cluster it runs on (``routing.on_cluster``): a
submission's client-mode driver is a process on the scheduler's host on a standalone cluster
(``a``) and a pod on a cluster that runs every driver itself (``b``, Kubernetes:
``ClusterSpec.drivers_in_cluster``), where it takes the cluster's room. Each engine's copy of
the app says so; a driver with its user (a notebook) or already in the cluster is left as it is.

Clusters ``a`` and ``b`` of 4 cores each, one leaf ``root.q``, no host limit on drivers.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sessionsched.engine import Adopted, CapacityChanged, ExecutorsChanged, Submitted
from sessionsched.engine.clusters import ClusterSpec, Federation, OnCluster, Placed
from sessionsched.engine.clusters.routing import plan_step
from sessionsched.model import AppState, Resources
from tests.engine.engine_builders import app, executors, one_queue


def fed() -> Federation:
    f = Federation(one_queue(), [ClusterSpec("a"), ClusterSpec("b", drivers_in_cluster=True)],
                   driver_slots=None)
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(4, 4 * 4096))) for n in "ab"])
    return f


def on_b(a: app):
    return replace(a.spec(), clusters=("b",))


@pytest.mark.parametrize("made, in_a, in_b", [
    (app("x"), False, True),                         # client mode: on b, a pod
    (app("x").in_cluster(1), True, True),            # cluster mode: in the cluster on both
    (app("x").notebook(), False, False),             # in its notebook's process on both
])
def test_each_clusters_copy_says_where_its_driver_runs(made, in_a, in_b):
    plan = plan_step(fed(), 1.0, [Submitted(made.spec())])
    copies = {n: [ev.spec.driver_in_cluster for ev in batch] for n, batch in plan.batches.items()}
    assert copies == {"a": [in_a], "b": [in_b]}


def test_a_client_mode_driver_on_b_takes_bs_room():
    """Drivers of 1 core, executors of 2: on b each app holds 3 cores (driver pod and
    executor), so the second waits; counted on the host, both would run on b's 4 cores."""
    f = fed()
    out = f.step(1.0, [Submitted(on_b(app(i).executor(2).min(1).max(1))) for i in ("x", "y")])
    assert {d.app_id: d.cluster for d in out if isinstance(d, Placed)} == {"x": "b"}
    f.step(2.0, [ExecutorsChanged("x", executors("x", 1))])
    assert f.engines["b"].apps["y"].state is AppState.ACCEPTED
    assert f.engines["b"].view().usage["root"].driver_cores == 1


def test_an_app_adopted_on_b_has_its_driver_in_the_cluster():
    f = fed()
    spec = app("x").executor(2).min(1).max(1).spec()
    f.step(1.0, [OnCluster("b", Adopted(spec, AppState.RUNNING, 5000, 0.5))])
    assert f.engines["b"].apps["x"].spec.driver_in_cluster
    assert not spec.driver_in_cluster  # the submission as stored: unchanged
