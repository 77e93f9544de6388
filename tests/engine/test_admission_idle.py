"""Sessions that idle do not hold others back (docs/design/admission.md, "Sessions that idle"):
a driver up ``IDLE_AFTER_S`` without asking for an executor stops counting as starting and
toward ``max_driver_fraction``, so drivers pass the fraction while no executor wants the cores
it guards - and every admitted app's first executors still fit beside every driver."""

from __future__ import annotations

import pytest
from engine_builders import Run, app, launched, one_queue

from sessionsched.engine import DemandChanged, DriverStarted
from sessionsched.engine.ledger import IDLE_AFTER_S
from sessionsched.engine.waits import WaitCode


def _run(cores: int = 24, admission: str = "demand") -> Run:
    return Run(one_queue(admission=admission, policy="fairshare"), cores=cores)


def _notebooks(n: int) -> list[app]:
    return [app(f"nb{i:02}").in_cluster() for i in range(n)]


def _up(run: Run, ids: list[str], at: float) -> None:
    run.step(*(DriverStarted(a, f"spark-{a}") for a in ids), at=at)


def test_twenty_idle_notebooks_are_all_admitted_within_a_few_idle_periods():
    run = _run()
    first = launched(run.submit(*_notebooks(20), at=0.0))
    assert len(first) == 9  # 0.4 x 24 cores
    admitted = list(first)
    t = 0.0
    while len(admitted) < 20 and t < 60:
        _up(run, admitted, at=t + 5)
        t += 5 + IDLE_AFTER_S
        admitted += launched(run.step(at=t))
    assert len(admitted) == 20 and t <= 30
    assert run.sched.apps["nb00"].reason.startswith("idle: its driver is up")


CASES = {
    # name: (what happens to the first 12 after they are up, admitted after, wait)
    "idle drivers stop counting as starting": (None, 8, WaitCode.RUNNING_DEMAND),
    "a driver that asks for executors keeps counting": ("ask", 0, WaitCode.DRIVER_SHARE),
}


@pytest.mark.parametrize("then, more, code", CASES.values(), ids=CASES.keys())
def test_idle_or_asking(then, more, code):
    run = _run()
    first = launched(run.submit(*_notebooks(20), at=0.0))
    _up(run, first, at=5.0)
    if then == "ask":
        run.step(*(DemandChanged(a, 1) for a in first), at=6.0)
    out = run.step(at=5.0 + IDLE_AFTER_S)
    assert len(launched(out)) == more  # the newcomers' own first executors are presumed wanted
    assert run.sched.waiting["root.q"].code == code
    assert run.sched.check() == []


def test_the_fraction_holds_while_executors_want_the_cores():
    run = _run()
    run.submit(app("big").max(24), at=0.0)
    run.step(DemandChanged("big", 24), at=1.0)
    run.hold("big", 14, at=2.0)
    out = run.submit(*_notebooks(20), at=3.0)
    assert len(launched(out)) == 9  # 0.4 x 24 cores: big wants every core
    assert run.sched.waiting["root.q"].code == WaitCode.DRIVER_SHARE
    assert run.sched.check() == []


def test_a_stateaware_queue_keeps_its_starting_timeout():
    run = Run(one_queue(admission="stateaware"), cores=24)
    assert launched(run.submit(*_notebooks(3), at=0.0)) == ["nb00"]
    _up(run, ["nb00"], at=5.0)
    assert launched(run.step(at=5.0 + IDLE_AFTER_S)) == []
