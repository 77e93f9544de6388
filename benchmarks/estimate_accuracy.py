"""How good are the estimated starts? Recurring workloads replayed through the simulator, each
app's estimate made when it is submitted compared with when it actually started (target:
p50 of |estimate - actual| <= 20 % of the wait on recurring workloads).

Not a test: it prints tables. Usage::

    .venv/bin/python benchmarks/estimate_accuracy.py                 # 6 days, seed 1
    .venv/bin/python benchmarks/estimate_accuracy.py --days 3 --seed 7
    .venv/bin/python benchmarks/estimate_accuracy.py --scale       # one run's cost, 5,000 apps

The workload, the same every day but for noise: ``NAMES`` recurring apps (each with its own
size, stages and base length) submitted at their usual time of the day, give or take a few
minutes, each stage's task length drawn around its base (log-normal, sigma ``--noise``); a
burst of ``BURST`` ad-hoc apps of one name at mid-day; a few names at priority 8000 (they
overtake the queue when they arrive). Two leaf queues, ``etl`` (fifo) and ``adhoc``
(fairshare), on a 24-core cluster, the default (``demand``) admission, ``max_running_apps``
so that apps wait. A day is ``DAY_S`` of simulated time.

The estimate is the server's: at the first cycle that has the app queued, the engine's view
of that cycle is turned into the estimator's input as ``service/estimating/live.py`` does
(launched apps with their remaining work from their progress by stage and their name's earlier
runs by stage - ``service/estimating/stages.py``, their stages read from the simulated cluster
as their agents report them - else from the median of their name's earlier FINISHED runs,
first executor to end, or ``--default-run-s``, less the time since their first executor; the
queued apps with their name's median run - the replay's own history), and
``sim.estimate.estimate`` runs the engine forward on it. The actual start is the replay's
launch of the app. Apps launched at the cycle that took them never waited and are not
counted in the error over the wait (their count is given). The recurring names are split by
whether an app of their queue submitted after the estimate was launched before them (what the
estimate cannot know). ``--oracle`` estimates with every app's actual run instead of its
history: what error is left is the forward run's model of the cluster; ``--oracle-running``
with the launched apps' only (the queued ones' from history): what knowing the apps ahead's
progress exactly could remove at most. ``--run-length-only``: the launched apps' work left
from their names' run lengths alone, as the server had it before its agents reported stages.
``--skew S``: a stage's tasks spread evenly from (1 - S) to (1 + S) times its task length (by
default a stage's tasks are of one length, the rule's own assumption).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessionsched.backends.memory.job import Stage  # noqa: E402
from sessionsched.config import build_queue_tree  # noqa: E402
from sessionsched.model import AppSpec, AppState, Resources  # noqa: E402
from sessionsched.model.stages import Run  # noqa: E402
from sessionsched.service.estimating.live import left_s, run_length  # noqa: E402
from sessionsched.service.estimating.stages import left_by_stage  # noqa: E402
from sessionsched.sim.estimate import (  # noqa: E402
    Live,
    Queued,
    Running,
    Timings,
    estimate,
    width,
)
from sessionsched.sim.simulator import Simulator  # noqa: E402
from sessionsched.sim.workload import Cluster, SimApp, Workload  # noqa: E402

DAY_S = 4 * 3600.0
NAMES = 24
BURST = 8
CYCLE_S = 2.0
QUEUES = [{"name": "root", "queues": [
    {"name": "etl", "policy": "fifo", "weight": 2, "max_running_apps": 4},
    {"name": "adhoc", "policy": "fairshare", "weight": 1, "max_running_apps": 3},
]}]


def recurring(days: int, noise: float, seed: int, skew: float = 0.0
              ) -> tuple[Workload, dict[str, str]]:
    """The workload, and each app id's recurring name. ``skew``: a stage's tasks spread evenly
    from (1 - skew) to (1 + skew) times its task length (0: all alike)."""
    rnd = random.Random(seed)
    templates = []
    for i in range(NAMES):
        queue = "root.etl" if i % 3 else "root.adhoc"
        width = rnd.choice([2, 4, 8])
        stages = [(width * 2 * rnd.choice([1, 2]), rnd.uniform(20, 120))
                  for _ in range(rnd.randint(1, 3))]
        templates.append({
            "name": f"job-{i:02d}", "queue": queue, "at": rnd.uniform(0, DAY_S / 4),
            "priority": 8000 if i % 5 == 4 else 5000, "width": width, "stages": stages,
            "min": rnd.choice([0, 0, 1, 2]), "startup": rnd.uniform(2, 20),
        })
    burst = {"name": "adhoc-burst", "queue": "root.adhoc", "at": DAY_S / 4, "priority": 5000,
             "width": 2, "stages": [(4, 90.0)], "min": 0, "startup": 5.0}
    apps: list[SimApp] = []
    names: dict[str, str] = {}
    for day in range(days):
        base = day * DAY_S
        todays = [(t, t["at"] + rnd.uniform(-300, 300), f"{t['name']}@d{day}")
                  for t in templates]
        todays += [(burst, burst["at"] + k, f"adhoc-burst-{k}@d{day}") for k in range(BURST)]
        for t, at, app_id in todays:
            names[app_id] = t["name"]
            at = base + max(0.0, at)
            spec = AppSpec(app_id=app_id, queue=t["queue"], seq=0, submitted_at=at,
                           priority=t["priority"], name=t["name"],
                           executor=Resources(2, 4096), min_executors=t["min"],
                           max_executors=t["width"], driver=Resources(1, 1024))
            stages = tuple(_stage(n, s * rnd.lognormvariate(0, noise), skew)
                           for n, s in t["stages"])
            apps.append(SimApp(spec=spec, startup_s=t["startup"], stages=stages, updates=()))
    apps.sort(key=lambda a: a.spec.submitted_at)
    apps = [SimApp(spec=_with_seq(a.spec, i), startup_s=a.startup_s, stages=a.stages,
                   updates=()) for i, a in enumerate(apps)]
    cluster = Cluster(Resources(24, 96 * 1024), 16, 5.0, 3.0, 60.0, CYCLE_S,
                      days * DAY_S + DAY_S)
    return Workload(cluster, build_queue_tree(_queue_configs()), tuple(apps)), names


def _stage(tasks: int, task_s: float, skew: float) -> Stage:
    if not skew:
        return Stage(tasks, task_s)
    return Stage(tasks, task_s, (task_s * (1 - skew), task_s, task_s * (1 + skew)))


def _with_seq(spec: AppSpec, seq: int) -> AppSpec:
    from dataclasses import replace
    return replace(spec, seq=seq)


def _queue_configs():
    from sessionsched.config import QueueConfig
    return [QueueConfig.model_validate(q) for q in QUEUES]


class Replay(Simulator):
    """The simulator, estimating every app the first time a cycle has it queued."""

    def __init__(self, workload: Workload, names: dict[str, str], default_run_s: float,
                 truth: dict | None = None, queued_truth: bool = True,
                 stage_progress: bool = True):
        super().__init__(workload)
        self.names = names
        self.default_run_s = default_run_s
        self.truth = truth  # ``--oracle``: a first replay's milestones of every app
        self.queued_truth = queued_truth  # False: ``--oracle-running`` (the queued: history)
        self.stage_progress = stage_progress  # off: ``--run-length-only``
        c = workload.cluster
        self.timings = Timings(c.driver_start_s, c.executor_start_s, c.executor_idle_timeout_s,
                               CYCLE_S, 12 * 3600.0, 60.0)
        self.estimates: dict[str, float | None] = {}  # app -> estimated start (sim time)
        self.had_history: dict[str, bool] = {}
        self.made: dict[str, float] = {}  # app -> when its estimate was made
        self.runs_s: list[float] = []  # wall time of each forward run

    def _cycle(self, now: float, n: int) -> bool:
        over = super()._cycle(now, n)
        view = self.sched.view()
        fresh = [f.app_id for f in view.apps.values()
                 if f.state is AppState.ACCEPTED and f.app_id not in self.estimates]
        if fresh:
            t0 = time.perf_counter()
            history = self._history(now)
            live = self._live(view, now, history)
            answers = estimate(live, offers_max=0)
            self.runs_s.append(time.perf_counter() - t0)
            for app_id in fresh:
                e = answers.get(app_id)
                self.estimates[app_id] = (None if e is None or e.start_in_s is None
                                          else now + e.start_in_s)
                self.had_history[app_id] = self.names[app_id] in history
                self.made[app_id] = now
        return over

    def _history(self, now: float) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for app_id, t in self.rec.apps.items():
            if (t.state is AppState.FINISHED and t.finished is not None and t.finished <= now
                    and t.admitted is not None):
                # As ``store.work_lengths``: from the first executor (the launch if none).
                worked = t.finished - (t.admitted if t.first_executor is None
                                       else t.first_executor)
                out.setdefault(self.names[app_id], []).append(worked)
        return out

    def _run_s(self, app_id: str, history: dict[str, list[float]]) -> float:
        if self.truth is not None:  # the run it will have: first executor to end
            t = self.truth[app_id]
            return t.finished - (t.admitted if t.first_executor is None else t.first_executor)
        return run_length(self.names[app_id], history, self.default_run_s)

    def _stage_runs(self, now: float) -> dict[str, list[Run]]:
        """Per name, the completed stages of its runs that had finished by ``now``, as their
        agents reported them (what ``store.work_lengths.stage_runs`` reads back)."""
        out: dict[str, list[Run]] = {}
        for app_id, t in self.rec.apps.items():
            if t.state is AppState.FINISHED and t.finished is not None and t.finished <= now:
                out.setdefault(self.names[app_id], []).append(
                    tuple(self.cluster.apps[app_id].done_stages))
        return out

    def _live(self, view, now: float, history: dict[str, list[float]]) -> Live:
        running, queued = [], []
        by_stage = self._stage_runs(now) if self.stage_progress else {}
        for f in view.apps.values():
            spec = self.apps[f.app_id].spec
            if f.state is AppState.ACCEPTED:
                run_s = (self._run_s(f.app_id, history) if self.queued_truth else
                         run_length(self.names[f.app_id], history, self.default_run_s))
                queued.append(Queued(spec, f.priority, run_s))
            elif not f.state.terminal and f.launched_at is not None:
                run_s = self._run_s(f.app_id, history)
                first = f.first_executor_at
                left = (left_s(run_s, now, first) if self.truth is None
                        else self.truth[f.app_id].finished - now)
                sa = self.cluster.apps.get(f.app_id)
                progress = None if sa is None else sa.progress(now)
                if self.stage_progress and progress is not None and self.truth is None:
                    staged = left_by_stage(progress, by_stage.get(self.names[f.app_id], []),
                                           f.executors or width(spec), spec.executor.cores,
                                           now)
                    left = left if staged is None else staged
                running.append(Running(
                    spec, f.state, f.priority, f.executors, left,
                    now - f.launched_at, None if first is None else now - first, f.demand))
        return Live(view.root, view.capacity, view.driver_slots, tuple(running),
                    tuple(queued), self.timings)


def overtaken(replay: Replay, app_id: str) -> bool:
    """Whether an app of its queue submitted after its estimate was made was launched before
    it: what the estimate could not know (a later priority-8000 name)."""
    t, made = replay.rec.apps[app_id], replay.made[app_id]
    queue = replay.apps[app_id].spec.queue
    return any(o.submitted > made and o.admitted is not None and o.admitted < t.admitted
               and replay.apps[other].spec.queue == queue
               for other, o in replay.rec.apps.items())


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def row(label: str, rows: list[tuple[float, float, bool]]) -> str:
    """rows: (|error| s, wait s, had history)."""
    if not rows:
        return f"| {label} | 0 | - | - | - | - | - |"
    rel = [e / w for e, w, _ in rows]
    err = [e for e, _, _ in rows]
    waits = [w for _, w, _ in rows]
    return (f"| {label} | {len(rows)} | {statistics.median(waits):.0f} | "
            f"{pct(err, 0.5):.0f} | {pct(err, 0.9):.0f} | {100 * pct(rel, 0.5):.0f} % | "
            f"{100 * pct(rel, 0.9):.0f} % |")


def forward_at_scale(launched: int, queued: int) -> None:
    """``--scale``: one forward run's cost at the busy benchmark's size (service_throughput.py
    ``--busy 10000``: 100 leaves, every launched app with 2 executors, its in-cluster driver)."""
    from service_throughput import busy_config  # benchmarks/, beside this script

    from sessionsched.config import ServerConfig, parse_model
    cfg = parse_model(ServerConfig, busy_config(2 * launched, 41999, Path("/tmp/unused")),
                      "busy")
    root = cfg.queue_tree()
    leaves = [q.name for q in root.leaves()]
    rnd = random.Random(1)

    def spec(i: int) -> AppSpec:
        return AppSpec(app_id=f"a{i}", queue=leaves[i % len(leaves)], seq=i, submitted_at=0.0,
                       priority=rnd.randint(1, 10000), executor=Resources(1, 1024),
                       max_executors=2, driver=Resources(1, 1024), driver_in_cluster=True)

    run = tuple(Running(spec(i), AppState.RUNNING, 5000, 2, rnd.uniform(5, 50), 10.0, 9.0, 2)
                for i in range(launched))
    wait = tuple(Queued(spec(launched + i), 5000, 40.0) for i in range(queued))
    live = Live(root, Resources(3 * launched, 6 * 1024 * launched), 4, run, wait, Timings())
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        out = estimate(live)
        print(f"forward run, {launched} launched and {queued} queued apps: "
              f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU, "
              f"{sum(e.start_in_s is not None for e in out.values())} of {len(out)} estimated")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--noise", type=float, default=0.2, help="sigma of log task lengths")
    ap.add_argument("--skew", type=float, default=0.0,
                    help="a stage's tasks spread from (1 - skew) to (1 + skew) times its "
                         "task length (0: a stage's tasks all alike)")
    ap.add_argument("--default-run-s", type=float, default=600.0)
    ap.add_argument("--oracle", action="store_true",
                    help="estimate with every app's actual run (a first replay's): the error "
                         "left is the forward run's model of the cluster, not the history's")
    ap.add_argument("--oracle-running", action="store_true",
                    help="as --oracle for the launched apps only (their actual end), the "
                         "queued ones from history: the error the apps ahead's progress "
                         "could remove at most")
    ap.add_argument("--run-length-only", action="store_true",
                    help="the launched apps' work left from their names' run lengths alone, "
                         "not from their progress by stage (the server before it had them)")
    ap.add_argument("--scale", action="store_true",
                    help="instead: one forward run's cost at 5,000 launched and 300 queued apps")
    args = ap.parse_args()
    if args.scale:
        forward_at_scale(5000, 300)
        return 0
    workload, names = recurring(args.days, args.noise, args.seed, args.skew)
    t0 = time.perf_counter()
    truth = None
    if args.oracle or args.oracle_running:  # the estimates change nothing in the replay: a
        first = Replay(workload, names, args.default_run_s)  # second one is the same
        first.run()
        truth = first.rec.apps
    replay = Replay(workload, names, args.default_run_s, truth, not args.oracle_running,
                    not args.run_length_only)
    replay.run()
    wall = time.perf_counter() - t0
    waited: dict[str, list[tuple[float, float, bool]]] = {}
    no_estimate = not_waiting = 0
    for app_id, est in replay.estimates.items():
        t = replay.rec.apps[app_id]
        if t.admitted is None:
            continue
        wait = t.admitted - t.submitted
        if est is None:
            no_estimate += 1
            continue
        if wait < 2 * CYCLE_S:
            not_waiting += 1
            continue
        day = int(t.submitted // DAY_S)
        key = "day 1 (no history)" if day == 0 else "days 2+ (recurring)"
        entry = (abs(est - t.admitted), wait, replay.had_history[app_id])
        waited.setdefault(key, []).append(entry)
        prio = "priority 8000" if replay.apps[app_id].spec.priority > 5000 else "priority 5000"
        if day > 0:
            waited.setdefault(f"days 2+, {prio}", []).append(entry)
            burst = "burst" if "burst" in app_id else "recurring names"
            waited.setdefault(f"days 2+, {burst}", []).append(entry)
            if burst != "burst":
                late = overtaken(replay, app_id)
                waited.setdefault(f"of them, {'' if late else 'not '}overtaken by a later "
                                  f"arrival", []).append(entry)
    print(f"{len(workload.apps)} apps over {args.days} days (seed {args.seed}, noise "
          f"{args.noise}, skew {args.skew}); {len(workload.apps) - len(replay.estimates)} "
          f"launched by the cycle that took them (never queued), {len(replay.estimates)} "
          f"estimated when queued, "
          f"{not_waiting} of them launched within {2 * CYCLE_S:g} s (not counted), "
          f"{no_estimate} without an estimate; replay {wall:.0f} s wall, forward runs p50 "
          f"{1000 * pct(replay.runs_s, 0.5):.0f} ms, max {1000 * max(replay.runs_s):.0f} ms")
    print()
    print("| apps that waited | n | wait p50 s | abs error p50 s | p90 s | error/wait p50 | p90 |")
    print("|---|---|---|---|---|---|---|")
    for key in ("day 1 (no history)", "days 2+ (recurring)", "days 2+, priority 5000",
                "days 2+, priority 8000", "days 2+, recurring names",
                "of them, overtaken by a later arrival",
                "of them, not overtaken by a later arrival", "days 2+, burst"):
        print(row(key, waited.get(key, [])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
