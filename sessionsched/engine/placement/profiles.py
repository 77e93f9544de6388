"""Executors per resource profile (stage-level scheduling, ``model.profiles``).

The queue's policy (fifo, priority, fairshare) decides how many executors an app gets, as
for any app; this module splits that number over the app's profiles and gives each of
their executors its own shape:

* ``split``: the app's executors over its profiles. Each profile keeps the executors of it
  the app holds (the app never holds more than its grant: a profile's new executors wait
  for room in the grant, not on top of it); the rest goes by demand beyond what each holds:
  enough for every demand, each gets it and what is left goes to the default profile (the
  app's floor, minExecutors, is of that profile, and so are the next job's first
  executors); too few, in proportion, the remainders to the largest fractions, ties to the
  lower profile id. The executors ``place`` found a worker for this cycle are each their
  own profile's. An app cut below what it holds (its executors being reclaimed) has its
  grant shared by demand alone.
* ``give_back``: while a profile waits for room in the grant, the idle executors of
  another profile held beyond that profile's demand (a stage that ended) are released at
  once (``Reclaim`` IDLE), not at Spark's idle timeout (60 s by default).
* ``shape``: a profile's executor - the app's ``AppSpec.executor`` for the default
  profile, the reported shape for another.
* ``place``: an app's ``n`` new executors placed on workers (``free_now.Rooms``), split
  over its profiles by what each still wants beyond what it holds, each taken with its own
  shape: a GPU profile's executors fit only where a worker has the GPU (as the default
  profile's do).
* ``held``: the cores and memory of the executors an app holds, each by its profile's shape.

An app that reported no profile besides the default has ``AppRecord.profiles`` empty: none
of this runs for it, and its numbers are what they always were.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ...model import ReclaimMode, Resources
from ...model.profiles import DEFAULT_PROFILE, held_by_shape, shape_of
from ..events import Reclaim


def shape(rec, profile_id: int) -> Resources:
    return shape_of(rec.profiles, profile_id, rec.spec.executor)


def held_counts(rec) -> Counter:
    return Counter(e.profile for e in rec.executors.values())


def wants(rec) -> dict[int, int]:
    """Each profile's demand (module doc), the default profile's too."""
    out = {DEFAULT_PROFILE: 0}
    for p in rec.profiles:
        out[p.profile_id] = p.demand
    return out


def share(n: int, weights: dict[int, int], rest_to: int | None = DEFAULT_PROFILE) -> dict:
    """``n`` over ``weights`` (id -> weight): each its weight when they all fit, the rest to
    ``rest_to``; else in proportion, largest remainders first, ties to the lower id."""
    total = sum(weights.values())
    if total <= n:
        out = dict(weights)
        if rest_to is not None:
            out[rest_to] = out.get(rest_to, 0) + n - total
        return out
    out = {k: n * w // total for k, w in weights.items()}
    left = n - sum(out.values())
    by_remainder = sorted(weights, key=lambda k: (-(n * weights[k] % total), k))
    for k in by_remainder[:left]:
        out[k] += 1
    return out


def split(rec, n: int, placed: dict[int, int] | None = None) -> tuple[tuple[int, int], ...]:
    """The app's ``n`` executors over its profiles, (id, executors) by id; () without
    profiles. ``placed``: of the ``n``, the ones placed this cycle, per profile."""
    if not rec.profiles:
        return ()
    placed = placed or {}
    held = held_counts(rec)
    demand = wants(rec)
    kept = {rp: held[rp] for rp in demand}
    if sum(kept.values()) + sum(placed.values()) > n:  # being cut back: by demand alone
        kept, more = {}, demand
    else:
        more = {rp: max(d - held[rp] - placed.get(rp, 0), 0) for rp, d in demand.items()}
    out = share(max(n - sum(kept.values()) - sum(placed.values()), 0), more)
    for part in (kept, placed):
        for rp, k in part.items():
            out[rp] = out.get(rp, 0) + k
    return tuple(sorted(out.items()))


def give_back(rec, split: tuple[tuple[int, int], ...]) -> list[Reclaim]:
    """The idle executors to release now (module doc): of each profile held beyond its
    demand, newest first, while another profile's demand is above its part."""
    if not split:
        return []
    parts, demand = dict(split), wants(rec)
    if not any(demand[rp] > parts.get(rp, 0) for rp in demand):
        return []
    held = held_counts(rec)
    out = []
    for rp, d in demand.items():
        idle = [e for e in rec.executors.values()
                if e.profile == rp and e.idle and e.executor_id not in rec.reclaiming]
        idle.sort(key=lambda e: (-e.started_at, e.executor_id))
        out += [e.executor_id for e in idle[:max(held[rp] - d, 0)]]
    return [Reclaim(rec.app_id, tuple(out), ReclaimMode.IDLE)] if out else []


def place(rec, n: int, take: Callable[[Resources, int], int],
          placed: dict[str, dict[int, int]]) -> int:
    """How many of the app's ``n`` next executors find a worker, each profile's by its own
    shape (``take(size, k)``: up to ``k`` of ``size`` taken off the rooms, how many); how
    many of each profile, in ``placed[app id]``. An app without profiles: its own size."""
    if not rec.profiles:
        return take(rec.spec.executor, n)
    held = held_counts(rec)
    outstanding = {rp: w - held[rp] for rp, w in wants(rec).items() if w > held[rp]}
    parts = share(n, outstanding or {DEFAULT_PROFILE: n})
    got = {rp: take(shape(rec, rp), k) for rp, k in sorted(parts.items()) if k > 0}
    placed[rec.app_id] = got
    return sum(got.values())


def held(rec) -> tuple[int, int]:
    """(cores, MiB) of the executors the app holds, each by its profile's shape."""
    return held_by_shape(rec.executors.values(), rec.profiles, rec.spec.executor)


def take(rooms, kept, sort, size: Resources, n: int) -> int:
    """Up to ``n`` of ``size`` placed on ``rooms`` (how many), and kept on ``kept`` too when
    ``rooms`` is a copy of it (``Scheduler._placer``)."""
    got = rooms.take_up_to(size, n, sort)
    if rooms is not kept:
        kept.take_up_to(size, got, sort)
    return got
