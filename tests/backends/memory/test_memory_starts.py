"""Starts that share a host's CPUs (``backends/memory/starts.py``) and an executor's first task
warming up (``Job.warmup_s``), alone and in the memory cluster the simulator runs on."""

from __future__ import annotations

import pytest

from sessionsched.backends.memory.starts import Starts
from sessionsched.engine import Reclaim, SetTarget
from sessionsched.model import ReclaimMode
from sessionsched.sim.simulator import launch_for
from tests.backends.memory.test_memory_cluster import ScriptedEngine, executors_at, run
from tests.sim.sim_builders import app, stage, workload


def ends(cpus, begins, finish_at=()):
    """Each start's end: ``begins`` are (time, name, work s); ``finish_at`` the times the
    starts' timers fire (each the end of the one due first then)."""
    starts, due = Starts(cpus), {}
    events = sorted([(t, 0, name, w) for t, name, w in begins]
                    + [(t, 1, None, None) for t in finish_at], key=lambda e: (e[0], e[1]))
    done = {}
    for t, kind, name, work in events:
        if kind == 0:
            due.update(starts.begin(t, name, work))
            continue
        first = min((at, n) for n, at in due.items() if n not in done)
        assert first[0] == pytest.approx(t), (first, t)
        moved = starts.finish(first[0], first[1])
        assert moved is not None
        done[first[1]] = first[0]
        due.update(moved)
    return {n: round(at, 6) for n, at in {**due, **done}.items()}


CROWDS = {
    # no CPUs given: every start takes its own time, whatever starts beside it
    "each its own time": (None, [(0, "a", 4), (0, "b", 4), (1, "c", 2)], (), {
        "a": 4, "b": 4, "c": 3}),
    "alone on one CPU": (1, [(0, "a", 4)], (), {"a": 4}),
    "as many as the CPUs: no slower": (2, [(0, "a", 4), (0, "b", 4)], (), {"a": 4, "b": 4}),
    # four on 2 CPUs: each at half speed
    "four on two CPUs: twice as long": (2, [(0, n, 4) for n in "abcd"], (), {
        "a": 8, "b": 8, "c": 8, "d": 8}),
    # b joins a at 2 on 1 CPU: a has 2 s left at half speed (4 s); b's 4 s: 2 done by a's end
    # at 6, then alone: 2 s more
    "one joins: both slow, then the last speeds up": (1, [(0, "a", 4), (2, "b", 4)], (6,), {
        "a": 6, "b": 8}),
}


@pytest.mark.parametrize("cpus, begins, finish_at, expected", CROWDS.values(),
                         ids=CROWDS.keys())
def test_starts_share_the_cpus(cpus, begins, finish_at, expected):
    assert ends(cpus, begins, finish_at) == expected


def test_a_timer_of_a_start_whose_end_moved_is_stale():
    starts = Starts(1)
    first = starts.begin(0, "a", 4)  # a alone: due at 4
    starts.begin(1, "b", 4)  # b beside it: a due later
    assert starts.finish(first["a"], "a") is None  # the timer pushed at 0 is stale


def test_no_cpus_is_refused():
    with pytest.raises(ValueError, match="host_cpus must be above 0"):
        Starts(0)


# --- in the cluster ---------------------------------------------------------------------------


def test_four_executors_on_two_cpus_come_up_twice_as_slow():
    # Driver up at 2 (alone on the host), four executors asked for then: 1 s of work each, on
    # 2 CPUs: up at 4, not 3. Their 4 tasks of 5 s end at 9.
    w = workload(app("a", max_executors=4, stages=[stage(4, 5)]), cluster={"host_cpus": 2})
    r = run(w, ScriptedEngine(grant=4))
    assert executors_at(r, "a", 3.5) == 0
    assert executors_at(r, "a", 4.5) == 4
    assert r.apps[0].finished == 9


def test_an_executors_first_task_warms_up_and_a_replacement_warms_up_again():
    # Two 1-core executors up at 3, 4 tasks of 5 s, a warm-up of 2 s: the first task on each
    # ends at 10, the second at 15 (13 without the warm-up). The second executor is killed at
    # 12, 2 s into its second task; its replacement, asked for at once, is up at 13 and warms
    # up again before it runs that task: 13 + 2 + 5 = 20.
    script = {12.0: [Reclaim("a", ("a-exec-2",), ReclaimMode.KILL, 12.0)]}
    w = workload(app("a", max_executors=2, warmup_s=2, stages=[stage(4, 5)]))
    assert launch_for(w.apps[0]).conf["spark.sessionsched.memory.warmup"] == "2.0"
    plain = run(workload(app("a", max_executors=2, stages=[stage(4, 5)])), ScriptedEngine(2))
    assert plain.apps[0].finished == 13
    warm = run(w, ScriptedEngine(2))
    assert warm.apps[0].finished == 15
    killed = run(w, ScriptedEngine(2, script))
    assert killed.apps[0].finished == 20
    assert killed.apps[0].usage["reclaimed_core_s"] == pytest.approx(2.0)  # 12 - 10


def test_a_lower_grant_does_not_stop_a_start_sharing_the_cpus():
    # 8 executors launched at 2 on 2 CPUs (each 1 s of work: up at 6), the grant falls to 2 at
    # 3: launched starts come up all the same, as on a standalone master.
    w = workload(app("a", max_executors=8, stages=[stage(8, 5)]), cluster={"host_cpus": 2})
    r = run(w, ScriptedEngine(8, {3.0: [SetTarget("a", 2, 2)]}))
    assert executors_at(r, "a", 5.9) == 0
    assert executors_at(r, "a", 6.1) == 8
