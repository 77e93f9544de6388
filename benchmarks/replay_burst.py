"""Busy steps of ``simulate_scale``'s burst, recorded once and replayed: compare two trees'
CPU per step on a loaded machine, and prove that they decide the same.

Not a test. One run of ``simulate_scale.py`` moves by 15-30 % with the machine's load, which
hides a 10 % cut; this records the engine's input (each step's ``now`` and events, and a hash
of its decisions) for the first ``--max-time`` virtual seconds of the 20,000-app burst, then
replays it into a fresh ``Scheduler`` of each tree in turn, alternating, so both see the same
load; each step's CPU (``thread_time``) is the minimum over the replays of its tree. Every
replayed step's decisions are compared with the recorded hash. Usage::

    .venv/bin/python benchmarks/replay_burst.py record /tmp/burst.pkl --tree /path/to/base
    .venv/bin/python benchmarks/replay_burst.py compare /tmp/burst.pkl /path/to/base . --rounds 4

(``--tree``: the tree whose engine records; a checkout made with ``git archive``.) Under
``valgrind --tool=callgrind`` a replay also gives instruction counts, which do not move with
the load at all (docs/design/bounded-cycles.md: how they were counted).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
BUSY = 50  # the burst's busy steps: 10,000 apps that may start, a slice of 200 each


def _use(tree: Path) -> None:
    sys.path[:0] = [str(tree), str(tree / "benchmarks")]


def _digest(decisions: list) -> str:
    return hashlib.sha256(repr(decisions).encode()).hexdigest()


def record(out: Path, max_time: float) -> None:
    import simulate_scale

    from sessionsched.engine import Scheduler
    from sessionsched.engine.budget import CycleBudget
    from sessionsched.sim.simulator import Simulator
    from sessionsched.sim.workload import WorkloadConfig, to_workload

    w = to_workload(WorkloadConfig.model_validate(simulate_scale.workload_dict(20_000, max_time)))
    sched = Scheduler(w.root, w.cluster.capacity, w.cluster.driver_slots, CycleBudget())
    step, steps = sched.step, []

    def recorded(now, events=()):
        events = list(events)
        decisions = step(now, events)
        steps.append((now, events, _digest(decisions)))
        return decisions

    sched.step = recorded
    Simulator(w, sched).run()
    out.write_bytes(pickle.dumps({"root": w.root, "capacity": w.cluster.capacity,
                                  "slots": w.cluster.driver_slots, "steps": steps}))
    print(f"recorded {len(steps)} steps to {out}")


def replay(path: Path, times: int) -> None:
    """Prints one line: the minimum CPU ms of each busy step over ``times`` replays, and how
    many steps decided otherwise than recorded."""
    from sessionsched.engine import Scheduler
    from sessionsched.engine.budget import CycleBudget
    from sessionsched.runtime.gc_pacer import GcPacer

    data = pickle.loads(path.read_bytes())
    pacer = GcPacer().install()
    best: list[float] | None = None
    differ = 0
    for _ in range(times):
        sched = Scheduler(data["root"], data["capacity"], data["slots"], CycleBudget())
        gc.collect()
        pacer.settle()
        cpu = []
        for now, events, digest in data["steps"][:BUSY]:
            c = time.thread_time()
            decisions = sched.step(now, events)
            cpu.append((time.thread_time() - c) * 1000)
            differ += _digest(decisions) != digest
        best = cpu if best is None else [min(a, b) for a, b in zip(best, cpu, strict=True)]
    print(f"{statistics.median(best):.2f} {statistics.mean(best):.2f} {max(best):.2f} {differ}")


def compare(path: Path, trees: list[Path], rounds: int, times: int) -> None:
    print(f"busy-step CPU ms (p50 / mean / max over {BUSY} steps, each the least of {times}"
          f" replays), trees alternating")
    for r in range(rounds):
        for tree in trees:
            line = subprocess.run(
                [sys.executable, str(HERE), "_replay", str(path), "--tree", str(tree),
                 "--times", str(times)],
                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                capture_output=True, text=True, check=True).stdout.split()
            p50, mean, most, differ = line
            print(f"round {r + 1} {str(tree):>30}: {float(p50):6.2f} / {float(mean):6.2f} /"
                  f" {float(most):6.2f}   decisions differing from the record: {differ}"
                  f"   load {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("record", "compare", "_replay"))
    ap.add_argument("path", type=Path, help="the recording")
    ap.add_argument("trees", type=Path, nargs="*", help="compare: the trees, in turn")
    ap.add_argument("--tree", type=Path, default=HERE.parents[1])
    ap.add_argument("--max-time", type=float, default=60.0, help="virtual seconds recorded")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--times", type=int, default=3, help="replays per tree and round")
    args = ap.parse_args()
    if args.what == "compare":
        if not args.trees:
            ap.error("compare needs the trees to compare")
        compare(args.path, [t.resolve() for t in args.trees], args.rounds, args.times)
        return
    _use(args.tree.resolve())
    if args.what == "record":
        record(args.path, args.max_time)
    else:
        replay(args.path, args.times)


if __name__ == "__main__":
    main()
