"""The scheduler's host is one, behind any number of clusters: client-mode drivers (on the
host: spark-submit's, Livy's, Connect's) placed on either cluster share its room
(``Scheduler.host_elsewhere``, set by the federation before each engine steps). Clusters
``a`` and ``b`` of 8 cores each; the host's room for drivers 3,000 MiB; apps with a
client-mode driver of 1 GiB (1,408 MiB with its overhead: two fit, not three) and one 1-core
executor."""

from __future__ import annotations

from sessionsched.engine import CapacityChanged, DriverExited, LaunchDriver
from sessionsched.engine.clusters import ClusterSpec, Federation, OnCluster
from sessionsched.engine.waits import WaitCode
from sessionsched.model import Resources
from tests.engine.clusters.test_federation import check, placed, submit
from tests.engine.engine_builders import app, one_queue

HOST = Resources(4, 3000)


def client_mode(app_id: str):
    return app(app_id).executor(1).min(1).max(1)


def fed() -> Federation:
    f = Federation(one_queue(), [ClusterSpec("a"), ClusterSpec("b")], driver_slots=None,
                   host_room=HOST)
    f.step(0.0, [OnCluster(n, CapacityChanged(Resources(8, 8 * 4096))) for n in "ab"])
    return f


def test_drivers_on_the_host_fit_its_room_over_both_clusters_together():
    f = fed()
    out = f.step(1.0, submit(*(client_mode(f"x{i}") for i in range(4))))
    check(f, out)
    launched = [d.app_id for d in out if isinstance(d, LaunchDriver)]
    assert launched == ["x0", "x1"]  # 2 x 1,408 MiB of 3,000: not a third, on any cluster
    assert placed(out) == {"x0": "a", "x1": "a"}  # a first (spill); b found no room either
    held = ("the host's memory holds 3000 MiB of drivers beside the scheduler, 2816 MiB of it"
            " held by 2 client-mode driver(s) there")
    for engine in f.engines.values():  # each says the host's room as it is, both drivers in
        wait = engine.view().waiting["root.q"]
        assert wait.code is WaitCode.HOST_ROOM and wait.text.endswith(held), wait
    out = f.step(2.0, [DriverExited("x0", 0)])  # its room on the host is free again
    check(f, out)
    assert [d.app_id for d in out if isinstance(d, LaunchDriver)] == ["x2"]
