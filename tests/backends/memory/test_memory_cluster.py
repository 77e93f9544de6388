"""The simulated cluster on its own: the event heap, the Spark app's arithmetic, and the
executor mechanics (idle timeout, kill, decommission, release-when-idle) driven by a stand-in
engine that launches everything and follows a script of decisions."""

import pytest

from sessionsched.backends.memory.job import job_from_launch
from sessionsched.backends.memory.pool import Overcommit, Pool, Started
from sessionsched.backends.memory.spark import Phase, SimExecutor, SparkApp
from sessionsched.backends.memory.timers import CLUSTER, CYCLE, WORKLOAD, EventHeap
from sessionsched.engine import LaunchDriver, MarkState, Reclaim, SetTarget, Submitted
from sessionsched.model import AppState, ReclaimMode, Resources
from sessionsched.sim.simulator import Simulator, launch_for
from tests.sim.sim_builders import app, stage, workload


class ScriptedEngine:
    """Launches each app when it is submitted with ``grant`` executors, and at the given
    times issues the scripted decisions (``{time: [decision, ...]}``). No policy at all."""

    def __init__(self, grant: int, script: dict[float, list] | None = None):
        self.grant = grant
        self.script = dict(script or {})

    def step(self, now, events):
        out = []
        for ev in events:
            if isinstance(ev, Submitted):
                app_id = ev.spec.app_id
                out += [
                    LaunchDriver(app_id),
                    MarkState(app_id, AppState.STARTING, "scripted"),
                    SetTarget(app_id, self.grant, self.grant),
                ]
        return out + self.script.pop(now, [])

    def pending(self, queue):
        return []


def run(w, engine):
    return Simulator(w, scheduler=engine).run()


def executors_at(result, name, t):
    return result.timeline.executors[name].at(t)


# --- the heap -------------------------------------------------------------------------------


def test_heap_ties_pop_by_priority_then_insertion_order():
    heap = EventHeap()
    heap.push(5.0, CYCLE, "cycle at 5")
    heap.push(5.0, CLUSTER, "first fact at 5")
    heap.push(1.0, CYCLE, "cycle at 1")
    heap.push(5.0, WORKLOAD, "submission at 5")
    heap.push(5.0, CLUSTER, "second fact at 5")
    popped = [heap.pop()[2] for _ in range(len(heap))]
    assert popped == [
        "cycle at 1",
        "first fact at 5",
        "second fact at 5",
        "submission at 5",
        "cycle at 5",
    ]


# --- the Spark app's arithmetic -------------------------------------------------------------


def spark_app(cores=2, min_executors=0, max_executors=None, **state) -> SparkApp:
    w = workload(
        app(
            "a",
            executor={"cores": cores},
            min_executors=min_executors,
            max_executors=max_executors,
        )
    )
    sa = SparkApp(job_from_launch(launch_for(w.apps[0]), 2.0), phase=Phase.RUNNING, stage=0)
    for key, value in state.items():
        setattr(sa, key, value)
    return sa


DEMAND = {
    # ceil((pending + running) / executor cores), capped by max_executors
    "7 tasks on 2-core executors: 4": (dict(pending=5, running=2), 4),
    "capped by max_executors": (dict(pending=100, max_executors=3), 3),
    "nothing left: 0": (dict(pending=0, running=0), 0),
    "pre-processing asks for nothing": (dict(pending=9, phase=Phase.PREPROCESSING), 0),
}


@pytest.mark.parametrize("state,expected", DEMAND.values(), ids=DEMAND.keys())
def test_demand(state, expected):
    max_executors = state.pop("max_executors", None)
    assert spark_app(max_executors=max_executors, **state).demand() == expected


def up(n: int, leaving: int = 0) -> dict:
    out = {f"e{i}": SimExecutor(f"e{i}", 2, 0.0) for i in range(n)}
    for e in list(out.values())[:leaving]:
        e.leaving = True
    return out


STARTING = {
    "demand 4, grant 3, none up: start 3": (dict(pending=8, grant=3), 3),
    "demand 4, grant 10, 1 up: start 3": (dict(pending=8, grant=10, executors=up(1)), 3),
    "min_executors above demand": (dict(pending=1, grant=5, min_executors=3), 3),
    # 2 leaving still count against the grant of 4: only 2 may be up or starting besides them
    "leaving executors count against the grant": (
        dict(pending=20, grant=4, executors=up(2, leaving=2)),
        2,
    ),
    "above the grant: start nothing": (dict(pending=20, grant=1, executors=up(2)), 0),
    "not running yet: nothing": (dict(pending=20, grant=5, phase=Phase.LAUNCHING), 0),
}


@pytest.mark.parametrize("state,expected", STARTING.values(), ids=STARTING.keys())
def test_starting_wanted(state, expected):
    min_executors = state.pop("min_executors", 0)
    assert spark_app(min_executors=min_executors, **state).starting_wanted() == expected


PLACEMENT = {
    # round-robin, one task per executor per round, in the order they came up
    "3 tasks on 2 free executors": (3, up(2), ["e0", "e1", "e0"]),
    "more tasks than cores": (9, up(2), ["e0", "e1", "e0", "e1"]),
    "leaving executors take nothing": (3, up(2, leaving=1), ["e1", "e1"]),
    "no pending tasks": (0, up(2), []),
}


@pytest.mark.parametrize("pending,executors,expected", PLACEMENT.values(), ids=PLACEMENT.keys())
def test_placements(pending, executors, expected):
    assert spark_app(pending=pending, executors=executors).placements() == expected


# --- executor mechanics ---------------------------------------------------------------------

# driver_start_s 2, executor_start_s 1 (sim_builders.QUICK_CLUSTER): an app submitted at 0 is
# launched at 0, its driver is up at 2, it asks for executors at 2, they are up at 3.


@pytest.mark.parametrize(
    "min_executors,left",
    [(0, 1), (3, 3)],
    ids=["idle executors leave after the idle timeout", "but never below min_executors"],
)
def test_idle_timeout(min_executors, left):
    w = workload(
        app(
            "a",
            max_executors=8,
            min_executors=min_executors,
            stages=[stage(8, 5), stage(1, 60)],  # stage 2 from t=8 keeps one executor busy
        ),
        cluster={"executor_idle_timeout_s": 10},
    )
    r = run(w, ScriptedEngine(grant=8))
    assert executors_at(r, "a", 7) == 8
    assert executors_at(r, "a", 17) == 8  # idle since 8, timeout 10
    for t in (18, 19, 30):  # released at 18; kept ones are never released and re-requested
        assert executors_at(r, "a", t) == left
    assert r.apps[0].finished == 68


# 2 one-core executors run 2 tasks of 10 s from t=3. At t=5 the script takes e1 (a-exec-2) away.
def reclaim_at_5(mode: ReclaimMode, deadline=None):
    return {5.0: [SetTarget("a", 1, 1), Reclaim("a", ("a-exec-2",), mode, deadline)]}


MECHANICS = {
    # killed at 5: its task reruns on e1 after e1's own task (13 -> 23)
    "kill: running task goes back to pending": (reclaim_at_5(ReclaimMode.KILL, 5.0), 23.0),
    # decommissioned at 5, deadline 20: its task finishes at 13, no work lost
    "decommission: leaves when its task is done": (
        reclaim_at_5(ReclaimMode.DECOMMISSION, 20.0),
        13.0,
    ),
    # decommissioned at 5, deadline 8: killed at 8, task reruns after e1's (13 -> 23)
    "decommission: killed at the deadline": (reclaim_at_5(ReclaimMode.DECOMMISSION, 8.0), 23.0),
    # an idle-only order for a busy executor is skipped: it finishes its task at 13
    "idle: a busy executor is not released": (reclaim_at_5(ReclaimMode.IDLE), 13.0),
    "no reclaim": ({}, 13.0),
}


@pytest.mark.parametrize("script,finished", MECHANICS.values(), ids=MECHANICS.keys())
def test_reclaim_mechanics(script, finished):
    w = workload(app("a", max_executors=2, stages=[stage(2, 10)]))
    r = run(w, ScriptedEngine(grant=2, script=script))
    assert r.apps[0].finished == finished


def test_idle_order_releases_an_idle_executor_and_skips_a_busy_one():
    # 3 tasks of 10 s on 2 executors from t=3: both busy at 5, e1 alone busy from 13 to 23.
    idle_order = Reclaim("a", ("a-exec-2",), ReclaimMode.IDLE)
    script = {5.0: [SetTarget("a", 1, 1), idle_order], 15.0: [idle_order]}
    w = workload(app("a", max_executors=2, stages=[stage(3, 10)]))
    r = run(w, ScriptedEngine(grant=2, script=script))
    assert executors_at(r, "a", 6) == 2  # busy at 5: skipped
    assert executors_at(r, "a", 15) == 1  # idle at 15: released
    assert r.apps[0].finished == 23


def test_an_engine_that_grants_too_much_cannot_overfill_the_cluster():
    # 8-core cluster, 1-core executors: of a grant of 9, the ninth waits for room.
    w = workload(app("a", max_executors=20, stages=[stage(20, 5)]))
    r = run(w, ScriptedEngine(grant=9))
    assert r.timeline.executors["a"].max() == 8
    assert r.executor_waits == 1
    assert r.apps[0].state == "FINISHED"


def test_an_app_with_backlog_timeouts_ramps_its_requests_as_spark_does():
    # 40 one-task-of-20 s tasks on 1-core executors from t=2 (the driver's start), on 8 cores:
    # asked for 1 at 3 (first timeout 1 s), 1 + 2 at 5 (sustained 2 s), 3 + 4 = 7 at 7, and
    # the grant's 8 at 9 (3 + 4 + 8 capped: the next round's add starts again at 1).
    conf = {"spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
            "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout": "2s"}
    w = workload(app("a", max_executors=40, stages=[stage(40, 20)], conf=conf))
    r = run(w, ScriptedEngine(grant=8))
    up_by = [executors_at(r, "a", t) for t in (3.5, 5.5, 7.5, 9.5)]  # each 1 s to start
    assert up_by == [0, 1, 3, 7]
    assert executors_at(r, "a", 10.5) == 8


def test_without_backlog_timeouts_an_app_asks_for_its_whole_demand_at_once():
    w = workload(app("a", max_executors=40, stages=[stage(40, 20)]))
    assert executors_at(run(w, ScriptedEngine(grant=8)), "a", 3.5) == 8


def test_a_lower_grant_cancels_what_waits_for_room_not_what_the_master_launched():
    # 8 cores: of a grant of 9 at t=2, eight executors are launched (up at 3) and the ninth
    # waits. The grant falls to 4 at once: the ninth is cancelled; the eight come up all the
    # same, as a standalone master's lower limit kills nothing, for a reclaim to take back.
    w = workload(app("a", max_executors=20, stages=[stage(20, 5)]))
    r = run(w, ScriptedEngine(grant=9, script={2.0: [SetTarget("a", 4, 4)]}))
    assert r.executor_waits == 1
    assert executors_at(r, "a", 3.5) == 8
    assert r.timeline.executors["a"].max() == 8


def test_room_held_by_executors_launched_before_a_lower_grant_is_no_double_promise():
    # a's 8 executors are launched at 2 (up at 3), as b's driver comes up; then a's grant
    # falls to 4 and b is granted 4: b's executors wait for room a still holds. That is a real
    # master's wait (the engine takes a's surplus back by reclaim), not cores promised twice:
    # counted apart.
    class Engine(ScriptedEngine):
        def step(self, now, events):
            out = [d if not (isinstance(d, SetTarget) and d.app_id == "b") else SetTarget("b", 0, 0)
                   for d in super().step(now, events)]  # b: nothing until 2
            return out + ([SetTarget("a", 4, 4), SetTarget("b", 4, 4)] if now == 2.0 else [])

    w = workload(app("a", max_executors=8, stages=[stage(40, 5)]),
                 app("b", max_executors=4, stages=[stage(8, 5)]))
    sim = Simulator(w, scheduler=Engine(grant=8, script={}))
    r = sim.run()
    (cluster,) = sim.clusters.values()
    assert (r.executor_waits, cluster.pool.surplus_waits) == (0, 4)
    assert executors_at(r, "a", 3.5) == 8 and executors_at(r, "b", 3.5) == 0


@pytest.mark.parametrize("grant,waits", [(5, 0), (6, 1)], ids=["grant fits", "grant too big"])
def test_in_cluster_drivers_count_against_the_cluster(grant, waits):
    # 8 cores: a 3-core in-cluster driver leaves 5 for executors.
    w = workload(
        app("a", driver={"cores": 3, "in_cluster": True}, max_executors=20, stages=[stage(20, 5)])
    )
    r = run(w, ScriptedEngine(grant=grant))
    assert r.timeline.executors["a"].max() == 5
    assert r.executor_waits == waits


# --- the pool: what waits for room, and in which order ---------------------------------------

CORE = Resources(1, 1024)


def full_pool() -> Pool:
    pool = Pool(Resources(2, 8192), driver_slots=1)
    pool.request_executor("x", "x1", CORE)
    pool.request_executor("x", "x2", CORE)
    return pool


def test_pool_starts_what_fits_at_once():
    pool = Pool(Resources(2, 8192), driver_slots=1)
    assert pool.request_driver("d", CORE) == Started(drivers=["d"])
    assert pool.request_executor("a", "a1", CORE) == Started(executors=[("a", "a1")])
    assert pool.used == Resources(2, 2048)
    assert pool.executor_waits == 0


def test_pool_gives_freed_room_to_waiting_drivers_before_executors():
    pool = full_pool()
    assert pool.request_executor("a", "a1", CORE) == Started()
    assert pool.request_driver("d", CORE) == Started()
    assert pool.give("x1") == Started(drivers=["d"])
    assert pool.give("x2") == Started(executors=[("a", "a1")])
    assert pool.executor_waits == 1  # a1 was asked for when nothing was free


def test_pool_forgets_cancelled_requests():
    pool = full_pool()
    pool.request_executor("a", "a1", CORE)
    assert pool.cancel("a1") is True
    assert pool.cancel("x1") is False  # started: its resources come back through give()
    assert pool.give("x1") == Started()
    assert pool.used == CORE


def test_pool_driver_slots():
    pool = Pool(Resources(2, 8192), driver_slots=1)
    pool.take_slot("driver of a")
    with pytest.raises(Overcommit, match="all 1 driver slots are in use"):
        pool.take_slot("driver of b")
    pool.give_slot()
    pool.take_slot("driver of b")


def test_pool_places_on_one_worker():
    """Two workers of 4 cores/8g: room split across workers is not room."""
    pool = Pool(Resources(8, 16384), driver_slots=1, workers=2)
    assert not pool.fits_one(Resources(8, 1024)) and not pool.fits_one(Resources(1, 10240))
    three = Resources(3, 1024)
    assert pool.request_executor("a", "a1", three) == Started(executors=[("a", "a1")])
    assert pool.request_executor("a", "a2", three) == Started(executors=[("a", "a2")])
    # 2 cores free in all (1 on each worker): a 2-core executor waits
    assert pool.request_executor("a", "a3", Resources(2, 1024)) == Started()
    assert [w.free.cores for w in pool.workers()] == [1, 1]
    assert pool.give("a1") == Started(executors=[("a", "a3")])


def test_pool_loses_a_worker():
    pool = Pool(Resources(8, 16384), driver_slots=1, workers=2)
    pool.request_driver("d", CORE)
    pool.request_executor("a", "a1", CORE)  # spread: the other worker
    assert pool.lose("worker-1") == ["d"]
    assert pool.capacity == Resources(4, 8192)
    assert [w.name for w in pool.workers()] == ["worker-2"]
    assert pool.give("d") == Started()  # its room went with the worker
    assert pool.used == CORE


def test_the_driver_works_alone_between_stages_and_after_the_last():
    # Driver up at 2, executors at 3; stage 1 ends at 8; the driver works 15 s alone (its
    # executors idle out at 18, timeout 10) and asks again at 23: up at 24, done at 29; then
    # 4 s of its own work (spark.stop()) before it exits at 33.
    w = workload(app("a", max_executors=4, tail_s=4,
                     stages=[stage(4, 5), {**stage(4, 5), "gap_s": 15}]),
                 cluster={"executor_idle_timeout_s": 10})
    r = run(w, ScriptedEngine(grant=4))
    assert executors_at(r, "a", 17) == 4
    assert executors_at(r, "a", 20) == 0
    assert executors_at(r, "a", 25) == 4
    assert r.apps[0].finished == 33
    assert launch_for(w.apps[0]).conf["spark.sessionsched.memory.work"] == "4x5.0,4x5.0@15.0"
