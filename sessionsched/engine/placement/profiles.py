"""Executors per resource profile (stage-level scheduling, ``model.profiles``).

The queue's policy (fifo, priority, fairshare) decides how many executors an app gets, as
for any app; this module splits that number over the app's profiles and gives each of
their executors its own shape:

* ``split``: the app's executors over its profiles by their demand. Enough for every
  demand: each gets its demand, and what is left goes to the default profile (the app's
  floor, minExecutors, is of that profile, and so are the next job's first executors). Too
  few: shared in proportion to the demands, the remainders to the largest fractions, ties
  to the lower profile id. A profile's executors held beyond its demand (a stage that
  ended: Spark releases them once idle) get no part: they are the app's surplus, taken back
  as any app's surplus is. The executors ``place`` found a worker for this cycle are each
  their own profile's: the split shares only the rest.
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

from ...model import Resources
from ...model.profiles import DEFAULT_PROFILE, held_by_shape, shape_of


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
    out = share(max(n - sum(placed.values()), 0), wants(rec))
    for rp, k in placed.items():
        out[rp] = out.get(rp, 0) + k
    return tuple(sorted(out.items()))


def place(rec, n: int, take: Callable[[Resources, int], int],
          placed: dict[str, dict[int, int]]) -> int:
    """How many of the app's ``n`` next executors find a worker, each profile's by its own
    shape (``take(size, k)``: up to ``k`` of ``size`` taken off the rooms, how many); how
    many of each profile, in ``placed[app id]``."""
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
