"""Random small workloads through the real engine (hypothesis): the run always ends, every app
ends FINISHED, FAILED or counted as stuck, the engine never grants an executor the cluster has no
room for (``executor_waits``; the pool itself raises Overcommit if it were ever overfilled), and
under `reserve` and `demand` admission no app is ever stuck. Apps include drivers that never
ask for executors (``stages: []``) and drivers that fail."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sim_builders import app, queue, stage, workload

from sessionsched.sim import simulate

apps = st.lists(
    st.fixed_dictionaries(
        {
            "submit": st.integers(0, 30),
            "priority": st.integers(1, 10000),
            "driver": st.fixed_dictionaries(
                {"cores": st.integers(1, 2), "in_cluster": st.booleans()}
            ),
            "executor": st.fixed_dictionaries({"cores": st.integers(1, 3)}),
            "max_executors": st.integers(1, 6),
            "startup_s": st.integers(0, 20),
            "stages": st.lists(
                st.builds(stage, st.integers(1, 12), st.integers(1, 15)), min_size=0, max_size=3
            ),
            "exit_code": st.sampled_from([0, 0, 0, 1]),
        }
    ),
    min_size=1,
    max_size=6,
)
queues = st.fixed_dictionaries(
    {
        "admission": st.sampled_from(["demand", "stateaware", "reserve", "none"]),
        "policy": st.sampled_from(["fifo", "priority", "fairshare"]),
        "reclaim_timeout": st.sampled_from([0, 5, -1]),
    }
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(specs, q):
    named = [app(f"app{i}", **s) for i, s in enumerate(specs)]
    return workload(*named, queues=[queue("q", starting_timeout=60, **q)])


@SETTINGS
@given(specs=apps, q=queues)
def test_every_run_ends_and_accounts_for_every_app(specs, q):
    r = simulate(build(specs, q))
    s = r.summary
    assert s["completed"] + s["failed"] + s["stuck"] == len(specs)
    assert {a.state for a in r.apps} <= {"FINISHED", "FAILED", "ACCEPTED", "STARTING", "RUNNING"}
    assert sum(a.state == "FINISHED" for a in r.apps) == s["completed"]
    assert sum(a.state == "FAILED" for a in r.apps) == s["failed"]
    assert 0 <= s["utilization"] <= 1
    assert r.executor_waits == 0
    for a, spec in zip(r.apps, specs, strict=True):
        if a.finished is not None:
            assert a.submitted <= a.admitted <= a.finished
            assert (a.state == "FAILED") == (spec["exit_code"] != 0)
        if a.first_executor is not None:
            assert a.admitted <= a.first_executor <= a.finished
        if not spec["stages"]:
            assert a.first_executor is None  # a driver-only app never asks for one


@SETTINGS
@given(specs=apps, policy=st.sampled_from(["fifo", "priority", "fairshare"]),
       admission=st.sampled_from(["reserve", "demand"]))
def test_reserve_and_demand_admission_never_leave_an_app_stuck(specs, policy, admission):
    r = simulate(build(specs, {"admission": admission, "policy": policy}))
    assert r.summary["stuck"] == 0, [(a.name, a.state) for a in r.apps]


@SETTINGS
@given(specs=apps, in_a=st.lists(st.booleans(), min_size=6, max_size=6),
       policy=st.sampled_from(["fifo", "priority", "fairshare"]), weight=st.integers(1, 4),
       fraction=st.sampled_from([0.1, 0.4, 1.0]), max_cores=st.sampled_from([None, 3, 6]))
def test_demand_never_leaves_an_app_stuck_across_two_queues(specs, in_a, policy, weight,
                                                           fraction, max_cores):
    named = [app(f"app{i}", queue="a" if in_a[i] else "b", **s) for i, s in enumerate(specs)]
    common = {"admission": "demand", "policy": policy, "starting_timeout": 60,
              "max_driver_fraction": fraction}
    b_cap = {} if max_cores is None else {"max_cores": max_cores}
    r = simulate(workload(*named, queues=[queue("a", weight=weight, **common),
                                          queue("b", **common, **b_cap)]))
    assert r.summary["stuck"] == 0, [(a.name, a.queue, a.state) for a in r.apps]
    assert r.executor_waits == 0
