"""Gangs in the engine (``engine.gang``, docs/design/gangs.md): a gang at its queue's head reserves
room as it frees, nobody else is given it, it launches when its driver and N executors are
covered (target N at once, N its floor), its timeout ends it (``hard``) or gives its room up
(``soft``), and two gangs never deadlock each holding part of what they need.

Each case: the queues, the cluster's cores (memory is plenty unless said), the apps running
before (id, queue, executors held, demand), then steps ``(at, events, expect)`` where
``expect`` names what must hold after the step:
  ``held``      app -> cores its reservation holds (None: it has none);
  ``launched``  the apps launched in the step, in order;
  ``marked``    the (app, state) marks of the step;
  ``targets``   app -> (target, grant) of admitted apps;
  ``wait``      app -> its wait code (None: not waiting);
  ``gang_n``    app -> the ``gang_executors`` of its launch terms;
  ``reason``    app -> a fragment of its wait's or its state's reason;
  ``wakeup``    ``next_wakeup()`` after the step.
Apps are submitted with ``Submitted`` through the ``submit`` pseudo-event: ("submit", builder).
Each step's events are followed by a quiet step at the same time (the room an app releases is
free from the cycle after its demand drops), and ``expect`` is checked on both together.
"""

from __future__ import annotations

import pytest

from sessionsched.engine import (
    DemandChanged,
    DriverExited,
    ExecutorsChanged,
    KillRequested,
    LaunchDriver,
    Submitted,
)
from sessionsched.model import AppState
from tests.engine.engine_builders import Run, app, leaf, marks, set_targets, tree
from tests.engine.engine_builders import executors as _ex


def running(app_id: str, queue: str, held: int, demand: int | None = None,
            floor: int = 0) -> tuple:
    return (app_id, queue, held, held if demand is None else demand, floor)


def release(app_id: str, n: int) -> tuple:
    """The app now wants and holds ``n`` executors (it released the others)."""
    return (DemandChanged(app_id, n), ExecutorsChanged(app_id, _ex(app_id, n)))


def ended(app_id: str) -> DriverExited:
    return DriverExited(app_id, 0)


TWO = (leaf("q"), leaf("o"))

CASES = {
    "accumulates as room frees, launches whole with target N at once": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4)],
        [(1, [("submit", app("g").queue("q").gang(4))],
          {"held": {"g": 0}, "wait": {"g": "gang_reserving"}, "launched": [],
           "reason": {"g": "holds 0 cores/0 MiB of the 4 cores/4096 MiB"}}),
         (2, [release("b", 2)], {"held": {"g": 2}, "launched": [],
                                 "reason": {"g": "holds 2 cores/2048 MiB"}}),
         (3, [release("a", 3)], {"held": {"g": 3}, "launched": []}),
         (4, [release("a", 2)], {"held": {"g": None}, "launched": ["g"], "gang_n": {"g": 4},
                                 "targets": {"g": (4, 4)}})]),
    "freed room is given to nobody else while the gang reserves (a new app shares the rest)": (
        TWO, 8, [running("a", "q", 4, demand=8), running("b", "o", 4, demand=8)],
        [(1, [("submit", app("g").queue("q").gang(4))], {"held": {"g": 0}}),
         (2, [release("b", 1)], {"held": {"g": 3}, "targets": {"a": (4, 4), "b": (1, 1)}}),
         (3, [("submit", app("c").queue("o"))],
          {"launched": ["c"], "held": {"g": 3}, "targets": {"a": (4, 4), "b": (1, 1)}})]),
    "a finished app's room goes to the gang": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4)],
        [(1, [("submit", app("g").queue("q").gang(4))], {"held": {"g": 0}}),
         (2, [ended("b")], {"launched": ["g"], "targets": {"g": (4, 4)}})]),
    "N is the floor while it runs: not reclaimed below N": (
        (leaf("q", policy="fairshare"),), 8, [running("a", "q", 4, demand=8)],
        [(1, [("submit", app("g").queue("q").gang(4))], {"launched": ["g"]}),
         (2, [release("g", 4), DemandChanged("g", 0)], {"targets": {"g": (4, 4)}}),
         (3, [("submit", app("c").queue("q")), DemandChanged("a", 8)],
          {"targets": {"g": (4, 4)}})]),
    "hard: FAILED at its timeout with what it held, room back to others at once": (
        TWO, 8, [running("a", "q", 4, demand=8), running("b", "o", 4, demand=8)],
        [(1, [("submit", app("g").queue("q").gang(6, timeout_s=60, style="hard"))],
          {"held": {"g": 0}, "wakeup": None}),
         (10, [release("b", 1)], {"held": {"g": 3}, "wakeup": 70.0,
                                  "reason": {"g": "60s timeout (hard) runs since the first"}}),
         (69.9, [], {"held": {"g": 3}, "marked": []}),
         (70, [], {"marked": [("g", "FAILED")], "held": {"g": None},
                   "reason": {"g": "gang of 6 executor(s) not whole after its 60s timeout "
                                   "(hard): it held 3 cores/3072 MiB of the 6 cores/6144 MiB"},
                   "targets": {"a": (7, 7)}})]),
    "soft: the reservation is given up and the app goes on as an ordinary app": (
        TWO, 8, [running("a", "q", 4, demand=4), running("b", "o", 4, demand=8)],
        [(1, [("submit", app("g").queue("q").gang(6, timeout_s=60))], {"held": {"g": 0}}),
         (10, [release("b", 1)], {"held": {"g": 3}}),
         (70, [], {"marked": [], "held": {"g": None}, "launched": ["g"], "gang_n": {"g": None},
                   "reason": {"g": "driver launched"}})]),
    "its clock starts at the first reserved core": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4)],
        [(1, [("submit", app("g").queue("q").gang(4, timeout_s=10, style="hard"))],
          {"held": {"g": 0}, "wakeup": None,
           "reason": {"g": "starts at the first reserved core"}}),
         (100, [], {"marked": [], "held": {"g": 0}}),
         (200, [release("b", 3)], {"held": {"g": 1}, "wakeup": 210.0}),
         (210, [], {"marked": [("g", "FAILED")]})]),
    "two gangs in two queues: the first reserves whole, then the second; no deadlock": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4)],
        [(1, [("submit", app("g1").queue("q").gang(5)), ("submit", app("g2").queue("o").gang(5))],
          {"held": {"g1": 0, "g2": 0}}),
         (2, [release("b", 1)], {"held": {"g1": 3, "g2": 0}}),
         (3, [release("a", 1)], {"held": {"g2": 1}, "launched": ["g1"]}),
         (4, [ended("a")], {"held": {"g2": 2}}),
         (5, [ended("b")], {"held": {"g2": 3}}),
         (6, [ended("g1")], {"held": {"g2": None}, "launched": ["g2"]})]),
    "room the first reservation cannot use yet is not given to the one after it": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4)],
        [(1, [("submit", app("g1").queue("q").in_cluster(1).executor(2).gang(2)),
              ("submit", app("g2").queue("o").gang(2))], {"held": {"g1": 0, "g2": 0}}),
         (2, [release("b", 2)], {"held": {"g1": 1, "g2": 0}}),  # its driver; 1 core left over
         (3, [release("b", 0)], {"held": {"g1": 3, "g2": 0}}),
         (4, [release("a", 2)], {"launched": ["g1"], "held": {"g1": None, "g2": 1}})]),
    "a gang behind another app of its queue does not reserve": (
        (leaf("q", admission="stateaware"),), 8, [running("a", "q", 8)],
        [(1, [("submit", app("x").queue("q").in_cluster(2)),
              ("submit", app("g").queue("q").gang(2))],
          {"held": {"g": None}, "wait": {"x": "driver_room", "g": "behind_app"}})]),
    "a gang that stops being its queue's head gives its room back": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4, demand=8)],
        [(1, [("submit", app("g").queue("q").gang(6))], {"held": {"g": 0}}),
         (2, [release("a", 2)], {"held": {"g": 2}}),
         (3, [("submit", app("h").queue("q").priority(9000).in_cluster(6))],
          {"launched": ["h"], "held": {"g": 0}})]),
    "a killed gang's room is back at once": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4, demand=8)],
        [(1, [("submit", app("g").queue("q").gang(6))], {"held": {"g": 0}}),
         (2, [release("a", 2)], {"held": {"g": 2}, "targets": {"a": (2, 2), "b": (4, 4)}}),
         (3, [KillRequested("g")], {"held": {"g": None}, "marked": [("g", "KILLED")],
                                    "targets": {"a": (2, 2), "b": (6, 6)}})]),
    "an in-cluster driver in another queue may not start in reserved room": (
        (leaf("q"), leaf("o", admission="stateaware")), 8, [running("a", "q", 8)],
        [(1, [("submit", app("g").queue("q").gang(4))], {"held": {"g": 0}}),
         (2, [release("a", 5)], {"held": {"g": 3}}),
         (3, [("submit", app("c").queue("o").in_cluster(2))],
          {"wait": {"c": "driver_room"}, "launched": []})]),
    "an in-cluster gang driver is held first, then executors": (
        TWO, 8, [running("a", "q", 4), running("b", "o", 4)],
        [(1, [("submit", app("g").queue("q").in_cluster(2).gang(3))], {"held": {"g": 0}}),
         (2, [release("b", 1)], {"held": {"g": 3},
                                 "reason": {"g": "(1 of 3 executor(s), its driver)"}}),
         (3, [release("b", 0)], {"held": {"g": 4}, "launched": []}),
         (4, [release("a", 3)], {"launched": ["g"]})]),
    "whole, it still waits for max_cores on its path beside the floors there": (
        (leaf("q", max_cores=6), leaf("o")), 12, [running("a", "q", 4, floor=4)],
        [(1, [("submit", app("g").queue("q").gang(3))],
          {"held": {"g": 3}, "wait": {"g": "queue_max_cores"}, "launched": []}),
         (2, [ended("a")], {"launched": ["g"], "held": {"g": None}})]),
    "whole, it still waits for its stateaware queue's starting_limit": (
        (leaf("q", admission="stateaware"),), 8, [],
        [(1, [("submit", app("x").queue("q")), ("submit", app("g").queue("q").gang(2))],
          {"launched": ["x"], "held": {"g": 2}, "wait": {"g": "starting_limit"}}),
         (2, [ExecutorsChanged("x", _ex("x", 1))], {"launched": ["g"]})]),
}


@pytest.mark.parametrize("queues, cores, before, steps", CASES.values(), ids=CASES.keys())
def test_gang(queues, cores, before, steps):
    run = Run(tree(*queues), cores=cores)
    for app_id, queue, _held, _demand, floor in before:
        run.submit(app(app_id).queue(queue).min(floor))
    run.step(*(DemandChanged(a, d) for a, _q, _h, d, _f in before))
    run.step(*(ExecutorsChanged(a, _ex(a, h)) for a, _q, h, _d, _f in before))
    for a, *_ in before:
        assert run.state(a) == "RUNNING"
    for at, events, expect in steps:
        real = []
        for e in events:
            if isinstance(e, tuple) and e[0] == "submit":
                real.append(Submitted(e[1].spec()))
            else:
                real.extend(e if isinstance(e, tuple) else (e,))
        # and a quiet step: an app's grant drops in the step its demand does, the room it
        # released is free from the next (``gang.book``)
        out = run.step(*real, at=at)
        out += run.step()
        view = run.sched.view()
        for app_id, cores in expect.get("held", {}).items():
            res = view.reservation(app_id)
            assert (None if res is None else res.held.cores) == cores, (at, app_id)
        if "launched" in expect:
            assert [d.app_id for d in out if isinstance(d, LaunchDriver)] == expect["launched"]
        if "marked" in expect:
            assert [m for m in marks(out) if m[1] != "STARTING"] == expect["marked"], at
        for app_id, want in expect.get("targets", {}).items():
            assert run.targets()[app_id] == want, (at, app_id, set_targets(out))
        for app_id, code in expect.get("wait", {}).items():
            wait = view.wait_of(app_id)
            assert (None if wait is None else wait.code.value) == code, (at, app_id, wait)
        for app_id, n in expect.get("gang_n", {}).items():
            terms = [d.terms for d in out if isinstance(d, LaunchDriver) and d.app_id == app_id]
            assert terms and terms[0].gang_executors == n, (at, app_id)
        for app_id, fragment in expect.get("reason", {}).items():
            rec = run.sched.apps[app_id]
            wait = view.wait_of(app_id)
            text = wait.text if wait is not None and rec.state is AppState.ACCEPTED \
                else rec.reason
            assert fragment in text, (at, app_id, text)
        if "wakeup" in expect:
            assert run.sched.next_wakeup() == expect["wakeup"], at
        assert run.sched.check() == [], at
