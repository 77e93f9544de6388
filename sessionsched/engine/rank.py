"""The engine's one order of apps, used by every phase that goes "by rank".

  1. priority, highest first (``spark.ego.priority``; a change re-orders at once);
  2. submission sequence, oldest first;
  3. application id (never reached: sequences are unique; it keeps the order total).

Admission orders a queue's pending apps by it, arbitration's ``priority`` and ``fairshare``
policies and the remainder phase hand out executors by it, grants grow apps by it, and reclaim
takes executors back from the *lowest* rank first. One key, so the phases can never disagree.
"""

from __future__ import annotations

Rank = tuple[int, int, str]  # sorts ascending in rank order: the best app first


def rank(priority: int, seq: int, app_id: str) -> Rank:
    """A plain tuple (not a NamedTuple): it is built for every app that moves, every cycle."""
    return (-priority, seq, app_id)
