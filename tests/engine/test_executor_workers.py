"""Where an app's executors run, as the engine keeps it (``Executor.worker``: what reclaim for
an executor short of a GPU reads, engine/reclaim.py). The cluster's lists name each executor's
worker (a standalone worker's id, a Kubernetes node); the agent's reports, richer in all else
(idle, profile), do not. An executor never moves, so a report that does not know the worker
keeps what another said of the same executor."""

from __future__ import annotations

import pytest

from sessionsched.engine import ExecutorsChanged, Witness
from sessionsched.model import Executor
from tests.engine.engine_builders import Run, app, one_queue


def on(*pairs: tuple[str, str], idle: bool = False) -> tuple[Executor, ...]:
    return tuple(Executor(eid, started_at=1.0, idle=idle, worker=w) for eid, w in pairs)


# name: (the reports in turn (witness, (executor id, worker) ...), each executor's worker after)
CASES = {
    "the cluster's list names them": (
        [(Witness.CLUSTER, (("1", "w-gpu"), ("2", "w-cpu")))], {"1": "w-gpu", "2": "w-cpu"}),
    "the agent's report keeps them": (
        [(Witness.CLUSTER, (("1", "w-gpu"), ("2", "w-cpu"))),
         (Witness.AGENT, (("1", ""), ("2", "")))], {"1": "w-gpu", "2": "w-cpu"}),
    "a new executor the agent saw first: not known yet": (
        [(Witness.CLUSTER, (("1", "w-gpu"),)), (Witness.AGENT, (("1", ""), ("3", "")))],
        {"1": "w-gpu", "3": ""}),
    "then the cluster's list names it": (
        [(Witness.CLUSTER, (("1", "w-gpu"),)), (Witness.AGENT, (("1", ""), ("3", ""))),
         (Witness.CLUSTER, (("1", "w-gpu"), ("3", "w-cpu")))], {"1": "w-gpu", "3": "w-cpu"}),
    "an executor gone and its id back: what the report says": (
        [(Witness.CLUSTER, (("1", "w-gpu"),)), (Witness.AGENT, ()),
         (Witness.AGENT, (("1", ""),))], {"1": ""}),
    "no backend names any (the agent alone)": (
        [(Witness.AGENT, (("1", ""), ("2", "")))], {"1": "", "2": ""}),
}


@pytest.mark.parametrize("reports, workers", CASES.values(), ids=CASES.keys())
def test_an_executors_worker_is_kept_from_the_witness_that_knows_it(reports, workers):
    run = Run(one_queue(admission="none", policy="fifo"), cores=8)
    run.submit(app("a").executor(1, 1024))
    for witness, pairs in reports:
        run.step(ExecutorsChanged("a", on(*pairs, idle=witness is Witness.AGENT),
                                  seen_by=witness))
    held = run.sched.apps["a"].executors
    assert {e: x.worker for e, x in held.items()} == workers
    # What else the last report said stands (the agent's: idle).
    assert all(x.idle is (reports[-1][0] is Witness.AGENT) for x in held.values())
