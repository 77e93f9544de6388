"""The levels a report sets when an app's executors are not all of one shape: stage-level
resource profiles (``rdd.withResources``), whose executors (one core and a GPU, say) differ
from the app's own (``AppSpec.executor``). Pure: plain data in, plain data out.

An executor says its profile (``Executor.profile``; 0, the app's own, where it says none) and
the app's agent reports each profile's executor shape with its demand (``DemandChanged
.profiles``); the meter keeps the shapes it was told. Each profile's executors are placed in
time as ``timing`` places any (one series of steps each), and the levels at each step are the
sum of every profile's executors times its shape. An app with its own executors alone never
comes here: its levels are its executors times its size, as they always were
(``plain_levels``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sessionsched.model import Executor, Resources

from .timing import Step, timed_steps

# (from, held cores, held MiB, busy cores, held custom amounts, busy custom amounts)
Level = tuple[float, int, int, int, dict[str, float], dict[str, float]]


def profile_of(e: Executor) -> int:
    """Its resource profile (0: the app's own; a report from before profiles has none)."""
    return getattr(e, "profile", 0)


def _times(custom, n: int) -> dict[str, float]:
    return {k: v * n for k, v in custom} if custom and n else {}


def plain_levels(steps: Sequence[Step], size: Resources) -> list[Level]:
    """Every executor of ``size``: the steps' counts times it."""
    return [(at, n * size.cores, n * size.mem_mib, b * size.cores, _times(size.custom, n),
             _times(size.custom, b)) for at, n, b in steps]


def _sum(counts: Mapping[int, tuple[int, int]], size_of: Callable[[int], Resources],
         at: float) -> Level:
    held = mib = busy = 0
    held_res: dict[str, float] = {}
    busy_res: dict[str, float] = {}
    for profile, (n, b) in counts.items():
        size = size_of(profile)
        held, mib, busy = held + n * size.cores, mib + n * size.mem_mib, busy + b * size.cores
        for k, v in size.custom:
            if n:
                held_res[k] = held_res.get(k, 0) + v * n
            if b:
                busy_res[k] = busy_res.get(k, 0) + v * b
    return at, held, mib, busy, held_res, busy_res


def shaped_levels(before: Mapping[str, bool], profiles_before: Mapping[str, int],
                  after: Sequence[Executor], size_of: Callable[[int], Resources],
                  timed: tuple[float, Mapping[str, float], float, float, float | None] | None,
                  now: float) -> list[Level]:
    """The levels from ``before`` (id -> busy; ``profiles_before``: id -> profile, 0 where
    absent) to ``after``, each executor by its profile's shape (``size_of``). ``timed``: the
    report's (observed_at, removed, lo, hi, changed_after) to place the changes in time as
    ``timing.timed_steps`` does, per profile; None: all at ``now``."""
    if timed is None:
        counts: dict[int, tuple[int, int]] = {}
        for e in after:
            n, b = counts.get(profile_of(e), (0, 0))
            counts[profile_of(e)] = (n + 1, b + (not e.idle))
        return [_sum(counts, size_of, now)]
    groups: dict[int, tuple[dict[str, bool], list[Executor]]] = {}
    for eid, busy in before.items():
        groups.setdefault(profiles_before.get(eid, 0), ({}, []))[0][eid] = busy
    for e in after:
        groups.setdefault(profile_of(e), ({}, []))[1].append(e)
    observed_at, removed, lo, hi, changed_after = timed
    series = {p: timed_steps(b, a, observed_at, removed, lo, hi, changed_after)
              for p, (b, a) in groups.items()}
    counts = {p: (len(b), sum(b.values())) for p, (b, _) in groups.items()}
    at_index = dict.fromkeys(series, 0)
    out = []
    for t in sorted({step[0] for steps in series.values() for step in steps}):
        for p, steps in series.items():
            i = at_index[p]
            while i < len(steps) and steps[i][0] <= t:
                counts[p] = steps[i][1:]
                i += 1
            at_index[p] = i
        out.append(_sum(counts, size_of, t))
    return out
