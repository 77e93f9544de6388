"""Engine cycle cost at scale: ``Scheduler.step`` with thousands of running and queued apps.

Not a test: it prints a table. Usage::

    .venv/bin/python benchmarks/engine_cycle.py            # growth 1k..10k running + 100k queued
    .venv/bin/python benchmarks/engine_cycle.py --quick    # 1k and 10k running only, fewer cycles
    .venv/bin/python benchmarks/engine_cycle.py --profile 10000   # cProfile one size
    .venv/bin/python benchmarks/engine_cycle.py --quick --usage-half-life 3600  # decay on
    .venv/bin/python benchmarks/engine_cycle.py --quick --gangs 0.1   # 10 % of the apps in gangs

The queue tree has 10 parents x 10 leaves (100 queues) with mixed policies (fifo, priority,
fairshare), admission modes (stateaware, reserve, none), weights, min_share and max_cores.
Running apps are adopted (as after a restart) and settle first; then every measured cycle carries
what a busy cluster reports in one 200 ms cycle:

  * 20 demand changes and up to 40 executor changes (launches up to the grant, reclaims carried
    out, executors going idle or busy);
  * 5 drivers exiting, so about 5 queued apps are admitted per cycle (each leaf's
    ``max_running_apps`` keeps the queued backlog in the queues);
  * 5 new submissions, 5 priority changes of queued apps and 2 of running apps.

Scenarios (the ``scenario`` column):

  * ``steady``: the cycle above; cores are the scarce resource (3 cores per running app).
  * ``capacity-swing``: the same, and the cluster's cores swing by 10% every cycle, so every
    queue's share moves and every leaf queue is recomputed (the engine's worst ordinary case).
  * ``memory-bound``: the same, but memory is scarcer than cores (1 GiB per core for 2-4 GiB
    executors), so every cycle takes the growth above floors in rank order as memory allows.
  * ``burst``: the same, and at the first measured cycle every leaf's ``max_running_apps`` is
    doubled, so about as many queued apps as are running may start at once: the admission
    slice (``engine.budget``) spreads them over the following cycles.
  * ``max-wait``: the same, and every leaf has a ``max_wait`` (1 h) that the queued apps reach
    one after another, about 25 per cycle (their submissions spread over the hour before):
    each cycle ends those apps FAILED, from the heap of deadlines, not a scan of the queued.
  * ``workers-1000``: steady, on a cluster of 1,000 named workers of three sizes (about the
    same cores and memory in all) instead of one pool: every cycle fits per worker
    (``engine.placement``); every 5th cycle a worker is lost or comes back, so the claims
    the cut binds are looked at again.

``--gangs F``: a fraction F of the apps, running and queued, ask for a gang
(docs/design/gangs.md) of 2, 4 or 8 executors (no more than their maxExecutors), half of them
``hard``; a queued gang at the head of its queue reserves what frees, a running one keeps its
executors as its floor. Which apps are gangs is drawn apart from the rest, so a run with
``--gangs`` plays the same workload as one without; ``gang_cycle_pair.py`` steps the two side
by side to compare them.

Only ``step`` is timed; the harness that plays the cluster is not. Targets: at most 50 ms per
cycle at 10k running + 100k queued on a 2-core machine, growing no worse than n log n;
every cycle, the burst's included, at most 100 ms.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import pstats
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessionsched.engine import (  # noqa: E402
    Adopted,
    CapacityChanged,
    DemandChanged,
    DriverExited,
    DriverStarted,
    ExecutorsChanged,
    LaunchDriver,
    MarkState,
    PriorityChanged,
    QueuesChanged,
    Reclaim,
    Scheduler,
    SetTarget,
    Submitted,
)
from sessionsched.model import (  # noqa: E402
    Admission,
    AppSpec,
    AppState,
    Executor,
    Gang,
    GangStyle,
    Policy,
    Queue,
    Resources,
    Worker,
)

PARENTS = 10
LEAVES = 10
CYCLE_S = 0.2
# ``--usage-half-life S``: decayed fair share on the whole tree, apps of 20 users.
HALF_LIFE_S: float | None = None
USERS = 20
# ``--gangs F``: the fraction of the apps that ask for a gang (docs/design/gangs.md).
GANGS = 0.0


MAX_WAIT_S = 3600.0  # the ``max-wait`` scenario's limit
EXPIRING_PER_S = 125  # its queued apps reaching it: 25 per 200 ms cycle


def queue_tree(running: int, room: int = 1, max_wait_s: float | None = None) -> Queue:
    """10 parents x 10 leaves; leaf max_running_apps holds ``running`` apps in total (times
    ``room``); every leaf's ``max_wait`` is ``max_wait_s``."""
    per_leaf = max(running // (PARENTS * LEAVES), 1) * room
    policies = [Policy.FIFO, Policy.PRIORITY, Policy.FAIRSHARE]
    modes = [Admission.STATEAWARE, Admission.RESERVE, Admission.NONE]
    timeouts = [0.0, 30.0, -1.0]
    parents = []
    for p in range(PARENTS):
        leaves = tuple(
            Queue(
                name=f"root.p{p}.l{leaf}",
                policy=policies[(p + leaf) % 3],
                admission=modes[leaf % 3],
                starting_limit=1 + leaf % 2,
                max_running_apps=per_leaf,
                reclaim_timeout_s=timeouts[(p * LEAVES + leaf) % 3],
                weight=1.0 + leaf % 4,
                max_wait_s=max_wait_s,
            )
            for leaf in range(LEAVES)
        )
        parents.append(
            Queue(
                name=f"root.p{p}",
                children=leaves,
                weight=1.0 + p % 3,
                min_share_cores=running // 20 if p % 4 == 0 else 0,
                max_cores=running if p % 5 == 1 else None,
            )
        )
    return Queue(name="root", children=tuple(parents), usage_half_life_s=HALF_LIFE_S)


class Workload:
    """Plays the cluster: makes specs, carries out decisions, produces each cycle's events."""

    def __init__(self, running: int, queued: int, seed: int = 1, expiring: bool = False,
                 gangs: float | None = None):
        self.rng = random.Random(seed)
        self.gangs = GANGS if gangs is None else gangs
        # Which apps are gangs is drawn apart: every other draw is the same with gangs or
        # without, so the two runs of a scenario differ by the gangs, not by their workloads.
        self.gang_rng = random.Random(seed + 1)
        self.expiring = expiring
        self.root = queue_tree(running, max_wait_s=MAX_WAIT_S if expiring else None)
        self.leaves = [q.name for q in self.root.leaves()]
        self.seq = 0
        self.running = running
        self.queued = queued
        self.grant: dict[str, int] = {}
        self.executors: dict[str, dict[str, Executor]] = {}
        self.doomed: dict[str, set[str]] = {}  # reclaimed executors, removed next cycle
        self.launched: list[str] = []  # LaunchDriver seen, DriverStarted not yet sent
        self.live: list[str] = []  # apps with a driver, for picking at random
        self.pending_ids: list[str] = []
        self.next_executor = 0
        self.expired = 0  # queued apps ended by their max_wait

    def spec(self, leaf: str | None = None) -> AppSpec:
        rng = self.rng
        self.seq += 1
        max_executors = rng.choice((None, 4, 16))
        gang = None
        if self.gangs and self.gang_rng.random() < self.gangs:
            gang = Gang(executors=min(self.gang_rng.choice((2, 4, 8)), max_executors or 16),
                        style=self.gang_rng.choice((GangStyle.HARD, GangStyle.SOFT)))
        return AppSpec(
            app_id=f"app-{self.seq:07d}",
            queue=leaf or rng.choice(self.leaves),
            seq=self.seq,
            submitted_at=0.0,
            priority=rng.randint(1, 10000),
            driver=Resources(1, 1024),
            driver_in_cluster=rng.random() < 0.3,
            executor=Resources(rng.choice((1, 2, 4)), rng.choice((2048, 4096))),
            min_executors=rng.choice((0, 0, 0, 1, 2)),
            max_executors=max_executors,
            user=f"user{self.seq % USERS}" if HALF_LIFE_S else "",
            gang=gang,
        )

    def setup_events(self) -> list:
        events = []
        for i in range(self.running):
            spec = self.spec(self.leaves[i % len(self.leaves)])
            events.append(Adopted(spec, AppState.RUNNING, spec.priority, launched_at=0.0,
                                  first_executor_at=0.0))
            events.append(DemandChanged(spec.app_id, self.rng.randint(0, 12)))
            self.live.append(spec.app_id)
            self.executors[spec.app_id] = {}
        span_s = self.queued / EXPIRING_PER_S
        for _ in range(self.queued):
            spec = self.spec()
            if self.expiring:  # submitted in the hour before: deadlines from now to span_s
                spec = replace(spec, submitted_at=self.rng.uniform(0, span_s) - MAX_WAIT_S)
            events.append(Submitted(spec))
            self.pending_ids.append(spec.app_id)
        return events

    def carry_out(self, decisions: list) -> None:
        for d in decisions:
            if isinstance(d, SetTarget):
                self.grant[d.app_id] = d.grant
            elif isinstance(d, Reclaim):
                self.doomed.setdefault(d.app_id, set()).update(d.executor_ids)
            elif isinstance(d, LaunchDriver):
                self.launched.append(d.app_id)
            elif isinstance(d, MarkState) and d.expired:
                self.expired += 1
                self.pending_ids_remove(d.app_id)

    def _executors_event(self, app_id: str, now: float) -> ExecutorsChanged:
        have = self.executors.setdefault(app_id, {})
        for eid in self.doomed.pop(app_id, ()):
            have.pop(eid, None)
        want = self.grant.get(app_id, 0)
        while len(have) < want:
            self.next_executor += 1
            eid = str(self.next_executor)
            have[eid] = Executor(eid, started_at=now, idle=False)
        for eid in list(have)[: self.rng.randint(0, 2)]:
            have[eid] = Executor(eid, have[eid].started_at, idle=not have[eid].idle)
        return ExecutorsChanged(app_id, tuple(have.values()))

    def settle_events(self, now: float, sched: Scheduler) -> list:
        """Bring every app to its grant (used before measuring)."""
        return [self._executors_event(a, now) for a in self.live if a in sched.apps]

    def cycle_events(self, now: float, sched: Scheduler) -> list:
        rng = self.rng
        events = []
        for app_id in self.launched:
            events.append(DriverStarted(app_id))
            self.live.append(app_id)
            self.pending_ids_remove(app_id)
        self.launched = []
        touched = set(self.doomed)
        touched.update(rng.sample(self.live, min(20, len(self.live))))
        for app_id in sorted(touched)[:40]:
            if sched.apps[app_id].state.admitted:
                events.append(self._executors_event(app_id, now))
        for app_id in rng.sample(self.live, min(20, len(self.live))):
            events.append(DemandChanged(app_id, rng.randint(0, 12)))
        for _ in range(5):
            app_id = self.live.pop(rng.randrange(len(self.live)))
            self.executors.pop(app_id, None)
            self.doomed.pop(app_id, None)
            events.append(DriverExited(app_id, 0))
        for _ in range(5):
            spec = self.spec()
            events.append(Submitted(spec))
            self.pending_ids.append(spec.app_id)
        for app_id in rng.sample(self.pending_ids, min(5, len(self.pending_ids))):
            events.append(PriorityChanged(app_id, rng.randint(1, 10000)))
        for app_id in rng.sample(self.live, 2):
            events.append(PriorityChanged(app_id, rng.randint(1, 10000)))
        return events

    def pending_ids_remove(self, app_id: str) -> None:
        # Swap-remove keeps this O(1); order does not matter for random picks.
        try:
            i = self.pending_ids.index(app_id)
        except ValueError:
            return
        self.pending_ids[i] = self.pending_ids[-1]
        self.pending_ids.pop()


SCENARIOS = ("steady", "burst", "capacity-swing", "memory-bound", "max-wait", "workers-1000")
QUICK_ROWS = (("steady", 1000), ("steady", 10_000), ("burst", 10_000),
              ("capacity-swing", 10_000), ("memory-bound", 10_000), ("max-wait", 10_000),
              ("workers-1000", 10_000))  # (scenario, running) of ``--quick``


def thousand_workers(cores: int, mem_mib: int, lost: int = 0) -> CapacityChanged:
    """1,000 workers of 3 sizes (1 : 2 : 4 by cores), ``lost`` of the largest gone."""
    unit = max(cores // (1000 * 7 // 3), 1)  # a third of the workers of each size
    sizes = [Resources(unit * k, unit * k * mem_mib // cores) for k in (1, 2, 4)]
    workers = tuple(Worker(f"w{i:04d}", sizes[i % 3], sizes[i % 3]) for i in range(1000))
    return CapacityChanged.of_workers(tuple(w for i, w in enumerate(workers)
                                            if not (i % 3 == 2 and i // 3 < lost)))


class Bench:
    """One scenario: its workload and engine set up, settled and warmed up; then ``cycle``
    steps one measured cycle at a time (``gang_cycle_pair.py`` steps two side by side)."""

    def __init__(self, running: int, queued: int, scenario: str = "steady",
                 gangs: float | None = None):
        self.scenario = scenario
        self.wl = wl = Workload(running, queued, expiring=scenario == "max-wait", gangs=gangs)
        self.cores = cores = running * 3
        self.mem_mib = mem_mib = cores * (1024 if scenario == "memory-bound" else 4096)
        self.sched = sched = Scheduler(wl.root, Resources(cores, mem_mib),
                                       driver_slots=running * 2)
        t0 = time.perf_counter()
        setup = wl.setup_events()
        if scenario == "workers-1000":
            setup.insert(0, thousand_workers(cores, mem_mib))
        wl.carry_out(sched.step(0.0, setup))
        self.setup_s = time.perf_counter() - t0
        self.settle()

    def settle(self) -> None:
        """After the setup step: 3 cycles for the executors to reach their grants and the
        reclaims to be carried out, then 5 of warm-up; the measured cycles count from 0."""
        wl, sched = self.wl, self.sched
        self.now = 0.0
        for _ in range(3):
            self.now += CYCLE_S
            wl.carry_out(sched.step(self.now, wl.settle_events(self.now, sched)))
        for _ in range(5):
            self.now += CYCLE_S
            wl.carry_out(sched.step(self.now, wl.cycle_events(self.now, sched)))
        self.measured = 0

    def events(self) -> list:
        """The next measured cycle's events (not timed)."""
        i, wl, cores, mem_mib = self.measured, self.wl, self.cores, self.mem_mib
        self.now += CYCLE_S
        events = wl.cycle_events(self.now, self.sched)
        if self.scenario == "capacity-swing":
            events.append(CapacityChanged(Resources(cores * (10 - i % 2) // 10, mem_mib)))
        if self.scenario == "workers-1000" and i % 5 == 4:
            events.append(thousand_workers(cores, mem_mib, lost=(i // 5) % 2))
        if self.scenario == "burst" and i == 0:
            events.append(QueuesChanged(queue_tree(wl.running, room=2)))
        self.measured += 1
        return events

    def step(self, events: list) -> tuple[list, float]:
        """The engine's step, its decisions carried out; and its thread's CPU ms (the step's
        alone: the harness is not timed)."""
        t = time.thread_time()
        out = self.sched.step(self.now, events)
        cpu_ms = (time.thread_time() - t) * 1000
        self.wl.carry_out(out)
        return out, cpu_ms


def stepped_in_turn(pacer, first: Bench, second: Bench, cycles: int) -> dict:
    """Two benches stepped cycle by cycle, taking turns at going first (a drift of the
    machine's speed falls on both alike: ``gang_cycle_pair.py``'s doc): each one's CPU ms per
    step, its drivers launched, and the median over the cycles of second / first and how many
    cycles the second cost more. ``pacer``: ``runtime.gc_pacer.GcPacer``, settled first."""
    cpu: tuple[list[float], list[float]] = ([], [])
    launched = [0, 0]
    pacer.settle()  # both engines' books, built: frozen, as serve's after a restore
    for i in range(cycles):
        turn = [(0, first, first.events()), (1, second, second.events())]
        for k, bench, events in turn if i % 2 == 0 else reversed(turn):
            out, ms = bench.step(events)
            pacer.between_cycles()
            cpu[k].append(ms)
            launched[k] += sum(1 for d in out if isinstance(d, LaunchDriver))
    pairs = list(zip(*cpu, strict=True))
    return {"cpu": cpu, "launched": launched,
            "ratio_p50": statistics.median(b / a for a, b in pairs if a > 0),
            "dearer": sum(b > a for a, b in pairs)}


def run(running: int, queued: int, cycles: int, scenario: str = "steady",
        profile: bool = False) -> dict:
    b = Bench(running, queued, scenario)
    wl, sched = b.wl, b.sched
    times: list[float] = []
    cpu: list[float] = []
    decisions = launched = 0
    expired_before = wl.expired
    prof = cProfile.Profile() if profile else None
    gc.collect()
    for _ in range(cycles):
        events = b.events()
        if prof:
            prof.enable()
        t, c = time.perf_counter(), time.process_time()
        out = sched.step(b.now, events)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        if prof:
            prof.disable()
        decisions += len(out)
        launched += sum(1 for d in out if isinstance(d, LaunchDriver))
        wl.carry_out(out)
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    times.sort()
    reserving = len(sched.view().reservations)
    admitted = sum(1 for r in sched.apps.values() if r.state.admitted)
    queued_now = sum(len(sched.pending(q)) for q in wl.leaves)
    return {
        "scenario": scenario,
        "running": running,
        "admitted": admitted,
        "queued": queued_now,
        "setup_s": b.setup_s,
        "p50": statistics.median(times),
        "p99": times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)],
        "launched": launched,
        "max": times[-1],
        "cpu_p50": statistics.median(cpu),
        "cpu_max": max(cpu),
        "decisions": decisions / cycles,
        "expired": wl.expired - expired_before,
        "reserving": reserving,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1k and 10k running, 20 cycles")
    ap.add_argument("--cycles", type=int, default=None)
    ap.add_argument("--queued", type=int, default=100_000)
    ap.add_argument("--profile", type=int, metavar="RUNNING", help="cProfile one size")
    ap.add_argument("--scenario", choices=SCENARIOS, help="only this scenario")
    ap.add_argument("--usage-half-life", type=float, metavar="S",
                    help="decayed fair share on root with this half-life, apps of 20 users")
    ap.add_argument("--gangs", type=float, default=0.0, metavar="F",
                    help="this fraction of the apps ask for a gang (e.g. 0.1)")
    args = ap.parse_args()
    global HALF_LIFE_S, GANGS
    HALF_LIFE_S = args.usage_half_life
    GANGS = args.gangs
    if args.profile:
        run(args.profile, args.queued, args.cycles or 20, args.scenario or "steady", profile=True)
        return
    if args.quick:
        rows = list(QUICK_ROWS)
    else:
        rows = [("steady", n) for n in (1000, 2000, 5000, 10_000)]
        rows += [(s, n) for s in SCENARIOS[1:] for n in (1000, 10_000)]
    if args.scenario:
        rows = [r for r in rows if r[0] == args.scenario]
    cycles = args.cycles or (20 if args.quick else 50)
    decay = f", usage_half_life {HALF_LIFE_S:g} s" if HALF_LIFE_S else ""
    decay += f", {GANGS:.0%} of the apps in gangs" if GANGS else ""
    print(f"engine cycle: {PARENTS * LEAVES} leaf queues, {args.queued:,} queued, "
          f"{cycles} cycles per row{decay}")
    head = (f"{'scenario':<15} {'running':>8} {'admitted':>8} {'queued':>8} {'setup s':>8} "
            f"{'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu p50':>8} {'cpu max':>8} "
            f"{'launched':>8} {'expired':>8} {'reserving':>9} {'dec/cyc':>8} {'cpu/(n log n)':>14}")
    print(head)
    print("-" * len(head))
    base: dict[str, float] = {}
    for scenario, n in rows:
        r = run(n, args.queued, cycles, scenario)
        per = r["cpu_p50"] / (n * math.log2(n))
        base.setdefault(scenario, per)
        print(f"{scenario:<15} {r['running']:>8,} {r['admitted']:>8,} {r['queued']:>8,} "
              f"{r['setup_s']:>8.1f} {r['p50']:>8.1f} {r['p99']:>8.1f} {r['max']:>8.1f} "
              f"{r['cpu_p50']:>8.1f} {r['cpu_max']:>8.1f} {r['launched']:>8,} "
              f"{r['expired']:>8,} {r['reserving']:>9,} {r['decisions']:>8.1f} "
              f"{per / base[scenario]:>14.2f}")
    print("p50/p99/max: wall-clock ms per cycle; cpu p50/max: CPU ms of the process (steadier "
          "when others load the machine); launched: drivers launched in the measured cycles; "
          "expired: queued apps ended by their max_wait in them; reserving: gangs reserving "
          "after the last cycle."
          "\ncpu/(n log n): CPU cost per n log n, relative to the "
          "scenario's first row (<= 1: no worse than n log n). Load average at the end: "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
