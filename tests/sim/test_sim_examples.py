"""Each example workload in examples/workloads/ shows what its header says: asserted from the
result JSON that `sessionsched simulate --json` writes."""

import json
import statistics
from collections import Counter
from pathlib import Path

import pytest

from sessionsched.cli import main
from sessionsched.engine import Scheduler
from sessionsched.sim import load_workload, simulate
from sessionsched.sim.simulator import Simulator
from tests.sim.test_sim_clusters import CLUSTER_EXAMPLES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"


@pytest.fixture(scope="module")
def result_json(tmp_path_factory):
    """name -> the JSON of `sessionsched simulate examples/workloads/<name>.yaml --json OUT`."""
    cache: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in cache:
            out = tmp_path_factory.mktemp("sim") / f"{name}.json"
            assert main(["simulate", str(EXAMPLES / f"{name}.yaml"), "--json", str(out)]) == 0
            cache[name] = json.loads(out.read_text())
        return cache[name]

    return get


def by_name(result: dict) -> dict[str, dict]:
    return {a["name"]: a for a in result["apps"]}


def check_burst_none(r):
    # 8 cores, 1-core drivers: 8 drivers take every core, 2 never start, nobody gets an executor.
    assert r["summary"]["stuck"] == 10
    assert r["summary"]["completed"] == 0
    assert sum(a["admitted"] is not None for a in r["apps"]) == 8
    assert all(a["first_executor"] is None for a in r["apps"])
    assert r["summary"]["utilization"] == 0


def check_burst_stateaware(r):
    assert r["summary"]["stuck"] == 0
    assert {a["state"] for a in r["apps"]} == {"FINISHED"}


def check_stateaware_example(r):
    apps = by_name(r)
    app1, app2 = apps["App1"], apps["App2"]
    # Step 2: App1 (oldest) is launched; App2 waits while App1 is STARTING.
    assert app1["admitted"] == 0
    assert app2["admitted"] > app1["admitted"]
    # Steps 3-4: App2's driver only after App1 got its first executor.
    assert app2["admitted"] >= app1["first_executor"]
    # Step 5: App2 gets its executor, both finish.
    assert app2["first_executor"] > app2["admitted"]
    assert [a["state"] for a in r["apps"]] == ["FINISHED", "FINISHED"]


def check_notebooks(r):
    apps = by_name(r)
    assert apps["nb-b"]["priority"] == 10000  # the update at t=60 is in the final priority
    assert apps["nb-b"]["finished"] < apps["nb-a"]["finished"]
    assert r["summary"]["stuck"] == 0


def check_notebooks_demand(r):
    # fairshare: nb-a's demand counts only up to its half, so nb-b is not held back
    apps = by_name(r)
    assert apps["nb-b"]["admitted"] == apps["nb-b"]["submitted"] == 30
    assert apps["nb-b"]["first_executor"] < apps["nb-a"]["finished"]
    assert r["summary"]["stuck"] == 0


def check_preprocessing(r_reserve, r_stateaware):
    assert r_reserve["summary"]["stuck"] == r_stateaware["summary"]["stuck"] == 0
    # reserve: every driver admitted at once; stateaware: one after another.
    assert {a["admitted"] for a in r_reserve["apps"]} == {0}
    ordered = sorted(r_stateaware["apps"], key=lambda a: a["admitted"])
    for before, after in zip(ordered, ordered[1:], strict=False):
        assert after["admitted"] >= before["first_executor"]
    # "far sooner": less than half (measured 228 s vs 818 s).
    assert r_reserve["summary"]["makespan"] < 0.5 * r_stateaware["summary"]["makespan"]


def check_burst_20(r):
    # max_driver_fraction 0.4 of 16 cores: 6 drivers at once, then as demand leaves room
    assert r["summary"]["stuck"] == 0
    assert sum(a["admitted"] == 0 for a in r["apps"]) == 6


def check_burst_tiny(r):
    # a driver core per executor core: 3 apps at once on 6 cores (0.4 x 6 would allow 2),
    # all 3 admitted in the first cycle (no launch pacing)
    first = [a["admitted"] for a in r["apps"][:3]]
    assert first == [0, 0, 0]
    assert r["apps"][3]["admitted"] >= r["apps"][0]["finished"]
    assert r["summary"]["stuck"] == 0


def check_burst_driver_heavy(r):
    # 500 apps of a 1-core driver and one 1-core executor fit whole on 1,200 cores: admitted
    # as fast as the admission slice allows (200 a cycle: t=0, 1, 2), not one per driver start
    admitted = Counter(a["admitted"] for a in r["apps"])
    assert admitted == {0: 200, 1: 200, 2: 100}
    assert r["summary"]["stuck"] == 0 and r["summary"]["completed"] == 500
    assert r["summary"]["makespan"] <= 40


def check_deep_queue(r):
    # 500 in-cluster drivers onto 96 cores (`none`: deadlock): every app ends, admitted in
    # waves as room frees, never more drivers than room for their first executors beside them
    assert r["summary"]["stuck"] == 0 and r["summary"]["completed"] == 500
    first_wave = sum(a["admitted"] == 0 for a in r["apps"])
    assert 0 < first_wave <= 48  # 96 cores / (1 driver + 1 first executor)
    assert max(a["admitted"] for a in r["apps"]) > 0


def check_burst_small(r):
    assert [a["admitted"] for a in r["apps"]] == [0, 0, 0]
    assert r["summary"]["stuck"] == 0


def check_burst_large(r):
    assert r["summary"]["completed"] == 60 and r["summary"]["stuck"] == 0


def check_preprocessing_mixed(r):
    apps = by_name(r)
    long_ = [a for n, a in apps.items() if int(n[-2:]) % 3 == 1]
    short = [a for n, a in apps.items() if int(n[-2:]) % 3 != 1]
    assert r["summary"]["stuck"] == 0
    # every short app is done before any long one has its first executor (t=158)
    assert max(a["finished"] for a in short) < min(a["first_executor"] for a in long_)


def check_mixed_queues(r):
    assert r["summary"]["stuck"] == 0
    for a in r["apps"]:
        if a["queue"] == "root.adhoc":
            assert a["admitted"] == a["submitted"]


def check_driver_fails(r):
    states = {a["name"]: a["state"] for a in r["apps"]}
    assert sorted(n for n, s in states.items() if s == "FAILED") == [
        "app-01", "app-04", "app-07", "app-10"]
    assert r["summary"]["failed"] == 4 and r["summary"]["completed"] == 6
    assert r["summary"]["stuck"] == 0
    assert by_name(r)["app-07"]["admitted"] == 7  # as soon as app-01 and app-04 failed


def check_driver_only(r):
    apps = by_name(r)
    assert r["summary"]["stuck"] == 0
    assert all(apps[f"alone-{i}"]["first_executor"] is None for i in range(1, 5))
    assert max(apps[f"app-{i}"]["finished"] for i in range(1, 9)) < 300  # before the timeouts


def check_fairshare_users(r):
    # Bob's one app holds half the cluster (8 of 16) while Ann's 20 share the other half: 200
    # tasks of 60 s on 8 executors end near t=1,500 s, long before any of Ann's.
    apps = by_name(r)
    assert r["summary"]["stuck"] == 0
    assert apps["bob-1"]["finished"] < 1600
    assert apps["bob-1"]["finished"] < 0.2 * min(
        a["finished"] for n, a in apps.items() if n.startswith("ann"))


def check_gang_fairshare(r):
    # The gang reserves every core that frees; a small app lives ~50 s, so the gang is whole
    # within about one small app's life (gang-fairshare.yaml's header): under 120 s.
    apps = by_name(r)
    gang = apps["gang"]
    assert gang["gang_ready"] is not None
    assert gang["gang_ready"] - gang["submitted"] < 120
    assert gang["state"] == "FINISHED"
    assert r["summary"]["stuck"] == 0 and r["summary"]["failed"] == 0
    assert all(a["state"] == "FINISHED" for n, a in apps.items() if n.startswith("small-"))
    # Apps without a gang have no gang_ready.
    assert all(a["gang_ready"] is None for n, a in apps.items() if n != "gang")


def check_gang_timeouts(hard, soft):
    for r in (hard, soft):
        apps = by_name(r)
        assert apps["gang"]["gang_ready"] is None  # never whole: the hog holds 6 of 8 cores
        assert apps["hog"]["state"] == apps["after"]["state"] == "FINISHED"
        assert r["summary"]["stuck"] == 0
    h, s = by_name(hard), by_name(soft)
    # hard: FAILED at its timeout (60 s from its first reserved core, at t=10), queued; the
    # app behind it starts on the released room within a cycle or two.
    assert h["gang"]["state"] == "FAILED"
    assert h["gang"]["admitted"] is None
    assert 70 <= h["gang"]["finished"] <= 72
    assert h["gang"]["finished"] <= h["after"]["admitted"] <= h["gang"]["finished"] + 2
    # soft: goes on as a normal app at its timeout, and finishes.
    assert s["gang"]["state"] == "FINISHED"
    assert 70 <= s["gang"]["admitted"] <= 72


def check_gang_two_queues(r):
    apps = by_name(r)
    assert r["summary"]["stuck"] == 0 and r["summary"]["failed"] == 0
    for name in ("gang-a", "gang-b"):
        assert apps[name]["gang_ready"] is not None
        assert apps[name]["state"] == "FINISHED"
    # One at a time: the second is whole only once the first has launched.
    first, second = sorted((apps["gang-a"], apps["gang-b"]), key=lambda a: a["gang_ready"])
    assert second["gang_ready"] > first["admitted"]


BURST_AT = 518400.0  # day 6: both teams submit the same burst


def check_decay_teams(on, off):
    def finished(r, team):
        return sorted(a["finished"] for a in r["apps"] if a["name"].startswith(f"{team}-burst"))

    for r in (on, off):
        assert r["summary"]["stuck"] == 0
    # Off: the two bursts split the cluster evenly and end together.
    assert finished(off, "a") == finished(off, "b")
    # On: team A, idle for six days, gets more: its burst ends hours before B's.
    assert max(finished(on, "a")) + 4 * 3600 < min(finished(on, "b"))
    b_first = min(a["first_executor"] for a in on["apps"] if a["name"].startswith("b-burst"))
    assert b_first > BURST_AT + 600  # B's burst waits while the gap is over the cluster


def check_placement(fair, packed):
    # The same apps; bin-packing leaves measurably more workers whole (nothing on them) than
    # fair, which spreads every small driver and executor over all 8 workers.
    for r in (fair, packed):
        assert r["summary"]["stuck"] == 0 and r["summary"]["failed"] == 0
    wf, wp = fair["summary"]["whole_workers"], packed["summary"]["whole_workers"]
    print(f"whole workers: fair {wf}, binpacking {wp} (time-weighted mean of 8);"
          f" at fewest {fair['summary']['whole_workers_min']} vs"
          f" {packed['summary']['whole_workers_min']}")
    assert wp >= wf + 2
    assert packed["summary"]["whole_workers_min"] > fair["summary"]["whole_workers_min"]
    # and a whole worker is what an 8-core executor needs: the big apps get theirs sooner
    for big in ("big-1", "big-2"):
        f, p = by_name(fair)[big], by_name(packed)[big]
        assert p["first_executor"] - p["admitted"] < 30 < f["first_executor"] - f["admitted"]


IDLE_S, DRIVER_START_S = 600, 5  # the idle notebooks' startup_s and driver_start_s


def first_executor_waits(r) -> tuple[float, float]:
    """p50 and p95 of each notebook's job's wait for its first executor: from the moment its
    job asks (its driver up and idle for IDLE_S) to its first executor."""
    waits = sorted(a["first_executor"] - (a["admitted"] + DRIVER_START_S + IDLE_S)
                   for a in r["apps"])
    return statistics.median(waits), statistics.quantiles(waits, n=20)[18]


def check_notebooks_idle(r):
    # in-cluster idle drivers pass the fraction while no executor wants the cores: all 20 are
    # admitted within 30 s (with the fraction alone: 9 at once, the rest at 300 s and 600 s)
    assert max(a["admitted"] for a in r["apps"]) <= 30
    assert r["summary"]["stuck"] == 0 and r["summary"]["completed"] == 20
    p50, p95 = first_executor_waits(r)
    print(f"notebooks-idle: each job's wait for its first executor p50 {p50:g} s, p95 {p95:g} s")


def check_notebooks_idle_wake(r):
    # all 20 ask at about the same moment, 20 drivers on 24 cores: every job still finishes
    assert max(a["admitted"] for a in r["apps"]) <= 30
    assert r["summary"]["stuck"] == 0 and r["summary"]["completed"] == 20
    assert {a["state"] for a in r["apps"]} == {"FINISHED"}
    p50, p95 = first_executor_waits(r)
    print(f"notebooks-idle-wake: each job's wait for its first executor p50 {p50:g} s,"
          f" p95 {p95:g} s")


def mean_cores_held(a: dict) -> float:
    """The executor cores an app held on average from its first executor to its end."""
    return a["usage"]["held_core_s"] / (a["finished"] - a["first_executor"])


def check_gpu_fairshare(r):
    # Dominant shares levelled: the GPU apps 2 executors each (2 of 4 GPUs, 4 cores), the CPU
    # app the 24 cores left (12 executors) - all the time, no core granted that idles.
    apps = by_name(r)
    assert {a["state"] for a in r["apps"]} == {"FINISHED"}
    assert mean_cores_held(apps["train-a"]) == mean_cores_held(apps["train-b"]) == 4.0
    assert mean_cores_held(apps["etl"]) == 24.0
    assert apps["train-a"]["usage"] == apps["train-b"]["usage"]


def check_gpu_caps(r):
    apps = by_name(r)
    assert {a["state"] for a in r["apps"]} == {"FINISHED"}
    # max_resources {gpu: 1}: one executor, though it wants four and three GPUs sit free
    assert mean_cores_held(apps["research-train"]) == 2.0
    # min_resources {gpu: 3}: its three at once (driver start, executor start, a cycle)
    prod = apps["prod-train"]
    assert prod["first_executor"] - prod["admitted"] <= 10
    assert 5.5 <= mean_cores_held(prod) <= 6.0


def check_gpu_demand(r):
    apps = by_name(r)
    assert {a["state"] for a in r["apps"]} == {"FINISHED"}
    train = [apps[f"train-{i}"] for i in range(1, 7)]
    # the 4 GPUs hold the first executors of four; a fifth driver starts ahead of its own
    assert [a["admitted"] for a in train[:5]] == [0.0] * 5
    # the sixth waits queued while the GPUs are wanted, not as a driver started to idle
    assert train[5]["admitted"] >= train[0]["finished"]
    # the ETL apps ask for no GPU: admitted when submitted, past train-6 waiting for GPUs
    assert apps["etl-1"]["admitted"] == apps["etl-2"]["admitted"] == 20.0


SINGLE = {
    "notebooks-idle": check_notebooks_idle,
    "notebooks-idle-wake": check_notebooks_idle_wake,
    "burst-20": check_burst_20,
    "burst-small": check_burst_small,
    "burst-tiny": check_burst_tiny,
    "burst-driver-heavy": check_burst_driver_heavy,
    "deep-queue": check_deep_queue,
    "burst-large": check_burst_large,
    "preprocessing-mixed": check_preprocessing_mixed,
    "mixed-queues": check_mixed_queues,
    "driver-fails": check_driver_fails,
    "driver-only": check_driver_only,
    "burst-none": check_burst_none,
    "burst-stateaware": check_burst_stateaware,
    "stateaware-example": check_stateaware_example,
    "notebooks-fairshare": check_notebooks,
    "notebooks-demand": check_notebooks_demand,
    "fairshare-users": check_fairshare_users,
    "gang-fairshare": check_gang_fairshare,
    "gang-two-queues": check_gang_two_queues,
    "gpu-fairshare": check_gpu_fairshare,
    "gpu-caps": check_gpu_caps,
    "gpu-demand": check_gpu_demand,
}
SINGLE.update(CLUSTER_EXAMPLES)  # several clusters: tests/sim/test_sim_clusters.py

PAIRS = {
    "preprocessing": (("preprocessing-reserve", "preprocessing-stateaware"), check_preprocessing),
    "decay-teams": (("decay-teams-on", "decay-teams-off"), check_decay_teams),
    "placement": (("placement-fair", "placement-binpacking"), check_placement),
    "gang-timeouts": (("gang-timeout-hard", "gang-timeout-soft"), check_gang_timeouts),
}


def test_every_example_has_an_expected_outcome():
    paired = {name for names, _ in PAIRS.values() for name in names}
    assert {p.stem for p in EXAMPLES.glob("*.yaml")} == set(SINGLE) | paired


@pytest.mark.parametrize("name", SINGLE, ids=SINGLE.keys())
def test_example_outcome(name, result_json):
    SINGLE[name](result_json(name))


@pytest.mark.parametrize("key", PAIRS, ids=PAIRS.keys())
def test_example_pair_outcome(key, result_json):
    names, check = PAIRS[key]
    check(*(result_json(n) for n in names))


def without_timings(result: dict) -> dict:
    """The result but the engine's cycle timings (the only figures a second run may change)."""
    timings = ("cycle_ms_p50", "cycle_ms_max")
    engine = {k: v for k, v in result["engine"].items() if k not in timings}
    return {**result, "engine": engine}


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_a_second_run_gives_the_same_json_apart_from_engine_timings(name, result_json,
                                                                     tmp_path):
    out = tmp_path / "again.json"
    assert main(["simulate", str(EXAMPLES / f"{name}.yaml"), "--json", str(out)]) == 0
    assert without_timings(json.loads(out.read_text())) == without_timings(result_json(name))


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_example_header_says_how_to_run_it(name):
    head = (EXAMPLES / f"{name}.yaml").read_text().split("\ncluster:")[0]
    assert f"sessionsched simulate examples/workloads/{name}.yaml" in head


# Notebooks: the executor split follows the priorities before and after the update at t=60.
# 48 cores / 2-core executors = 24 executors; both notebooks want more than their share.
SPLIT = {
    "before the update: 5000:5000 -> 12:12": (50.0, {"nb-a": 12, "nb-b": 12}),
    "after the update: 5000:10000 -> 8:16": (100.0, {"nb-a": 8, "nb-b": 16}),
}


@pytest.mark.parametrize("at,expected", SPLIT.values(), ids=SPLIT.keys())
def test_notebooks_split_follows_priorities(at, expected):
    result = simulate(load_workload(EXAMPLES / "notebooks-fairshare.yaml"))
    executors = result.timeline.executors
    assert {n: executors[n].at(at) for n in expected} == expected


def test_notebooks_under_demand_split_half_and_half_once_both_ask():
    # nb-b asks at t=37 (admitted 30, driver start 5, startup 2); 24 executors in all
    executors = simulate(load_workload(EXAMPLES / "notebooks-demand.yaml")).timeline.executors
    assert {n: executors[n].at(50.0) for n in ("nb-a", "nb-b")} == {"nb-a": 12, "nb-b": 12}


class ShortApps:
    """The real engine, noting after each step which apps are short (target above grant)."""

    def __init__(self, sched: Scheduler):
        self.sched = sched
        self.short_at: dict[float, set[str]] = {}

    def step(self, now, events):
        out = self.sched.step(now, events)
        apps = self.sched.apps.values()
        self.short_at[now] = {r.app_id for r in apps if r.state.admitted and r.target > r.grant}
        return out

    def next_wakeup(self):
        return self.sched.next_wakeup()


def test_notebooks_kill_only_executors_the_other_notebook_needs():
    # reclaim_timeout 0: every reclaim is a kill at the cycle that ordered it. A notebook whose
    # demand dips (a stage's tail, the end of its job) keeps its executors unless the other is
    # short; before the fix nb-a's last 16 executors were killed at t=221 with nobody waiting.
    w = load_workload(EXAMPLES / "notebooks-fairshare.yaml")
    spy = ShortApps(Scheduler(w.root, w.cluster.capacity, w.cluster.driver_slots))
    sim = Simulator(w, spy)
    result = sim.run()
    kills = sim.rec.reclaim_kills
    assert [k for k in kills if not spy.short_at[k[0]] - {k[1]}] == []
    # The priority raise at t=60 still takes 4 executors from nb-a for nb-b (12:12 -> 8:16).
    assert sum(1 for t, a, _, _ in kills if (t, a) == (60.0, "nb-a")) == 4
    assert result.summary["stuck"] == 0


# Decayed fair share: executors of each team's burst over the hours after day 6. Half-life
# 6 h: the gap between the teams' decayed usage halves every 3 h (``arbitration.decay``).
def team_executors(result, team: str, at: float) -> int:
    ex = result.timeline.executors
    return sum(ex[n].at(at) for n in ex if n.startswith(f"{team}-burst"))


@pytest.fixture(scope="module")
def decay_runs():
    return {name: simulate(load_workload(EXAMPLES / f"decay-teams-{name}.yaml"))
            for name in ("on", "off")}


DECAY_SPLIT = {
    "on, 30 min in: A (idle all week) takes the whole cluster": ("on", 0.5, (16, 0)),
    "on, 4 h in: the gap has shrunk by more than half": ("on", 4.0, (12, 4)),
    "on, 16 h in: even": ("on", 16.0, (8, 8)),
    "off, 30 min in: even at once": ("off", 0.5, (8, 8)),
    "off, 4 h in: even": ("off", 4.0, (8, 8)),
}


@pytest.mark.parametrize("run,hours,expected", DECAY_SPLIT.values(), ids=DECAY_SPLIT.keys())
def test_decayed_fair_share_split_over_time(decay_runs, run, hours, expected):
    at = BURST_AT + hours * 3600
    r = decay_runs[run]
    assert (team_executors(r, "a", at), team_executors(r, "b", at)) == expected


def test_decayed_usage_meets_within_the_half_life_arithmetic(decay_runs):
    """A's part within one executor of even (9 + 7) and then even (8 + 8): the formula puts
    the gap under one core after (6 h / 2) x log2(17 cores) ~ 12 h; measured on this
    workload 8.5 h and 14.5 h (whole executors: the odd core goes by rank, A's apps first)."""
    r = decay_runs["on"]
    hours = [h / 4 for h in range(1, 24 * 4)]  # from 15 min in: the burst has started
    within_one = next(h for h in hours
                      if team_executors(r, "a", BURST_AT + h * 3600) - 8 <= 1)
    even = next(h for h in hours if team_executors(r, "a", BURST_AT + h * 3600) == 8)
    print(f"A within one executor of even after {within_one} h, even after {even} h")
    assert 8 <= within_one <= 13
    assert within_one <= even <= 18


def test_one_user_with_20_apps_and_one_with_1_get_half_each():
    result = simulate(load_workload(EXAMPLES / "fairshare-users.yaml"))
    ex = result.timeline.executors
    for at in (60.0, 600.0, 1200.0):
        ann = sum(ex[n].at(at) for n in ex if n.startswith("ann"))
        assert (ann, ex["bob-1"].at(at)) == (8, 8), at
