"""Executors are granted only where one worker has room for them (engine/grants ``place``):
the cluster's sum is checked first, then each growth is placed on the room free on each worker
(the backend's last report, less the in-cluster drivers launched since, the executors granted
and not yet held, and what reserving gangs hold), one executor at a time where its queue's
``node_sort`` puts it. Room split across workers is not granted: the app's target stays, its
grant waits for a worker to have the room."""

from __future__ import annotations

import pytest

from sessionsched.engine import CapacityChanged, DemandChanged, ExecutorsChanged
from sessionsched.model import Resources, Worker
from tests.engine.engine_builders import (
    WORKER,
    Run,
    app,
    executors,
    one_queue,
    set_targets,
    worker_report,
)

GB = 1024


# (free cores per worker, the app's executor cores, its demand, its (target, grant))
CASES = {
    "split 1+1 holds no 2-core executor": ((1, 1), 2, 1, (1, 0)),
    "2+0 holds one": ((2, 0), 2, 1, (1, 1)),
    "3+3 holds two 2-core executors, not three": ((3, 3), 2, 3, (3, 2)),
    "1-core executors take every split core": ((1, 1), 1, 2, (2, 2)),
    "one worker: the sum says it": ((2,), 2, 1, (1, 1)),
}


@pytest.mark.parametrize("free, cores, demand, expected", CASES.values(), ids=CASES.keys())
def test_an_executor_is_granted_only_where_one_worker_has_room(free, cores, demand, expected):
    run = Run(one_queue(admission="none", policy="fifo"), cores=4 * len(free))
    run.step(worker_report(*free))
    run.submit(app("a").executor(cores))
    out = run.step(DemandChanged("a", demand))
    assert set_targets(out)["a"] == expected
    assert run.sched.check() == []


def test_executors_granted_and_not_yet_held_are_placed_first():
    # 3 + 3 free: a's two 2-core executors, granted and not started yet, go one a worker
    # (1 + 1 left), so b's executor is not granted into the 2 cores the sum still shows
    run = Run(one_queue(admission="none", policy="fifo"), cores=8)
    run.step(worker_report(3, 3))
    run.submit(app("a").executor(2))
    assert set_targets(run.step(DemandChanged("a", 2)))["a"] == (2, 2)
    run.submit(app("b").executor(2))
    assert set_targets(run.step(DemandChanged("b", 1))).get("b", (0, 0)) == (1, 0)
    # a's executors are up, one a worker, and the backend's report shows them with a third
    # worker that has room: b's grant follows
    ws = (Worker("w0", WORKER, Resources(1, 6 * GB)), Worker("w1", WORKER, Resources(1, 6 * GB)),
          Worker("w2", WORKER, Resources(2, 8 * GB)))
    out = run.step(ExecutorsChanged("a", executors("a", 2)),
                   CapacityChanged.of_workers(ws, 4, Resources(4, 0)))
    assert set_targets(out)["b"] == (1, 1)
    assert run.sched.check() == []
