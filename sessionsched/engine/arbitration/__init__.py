"""Executor targets: how many executors each admitted application deserves this cycle.

Input: one ``Claim`` per admitted app and the capacity left for executors (cluster capacity
minus in-cluster drivers). Output: app id -> target, in whole executors of the app's own size.
Deterministic: the same claims, queue tree and capacity give the same targets, whatever came
before (``compute_targets``, the from-scratch ``oracle``, and ``Arbiter`` give the same
answers).

Phases:
  1. Floors. Every app's floor (``minExecutors``, or its reservation under a ``reserve`` queue
     until met) is set aside first. When they do not all fit (the cluster shrank, or floors
     exceed a queue's ``max_cores``) they are given in the order: 1. guaranteed (``reserve``
     queues, whose floors admission made room for) first; 2. rank; as capacity and every
     ``max_cores`` on the app's path allow.
  2. Shares. The cores are divided down the queue tree. At each parent the children get a
     weighted max-min fair share (water-filling), each between its guarantee - its floors, or
     ``min_share`` as far as it wants that much - and what it wants (its apps' wants, cut to its
     ``max_cores``); what one queue does not want goes to its siblings. If the guarantees do not
     all fit, floors are kept and the ``min_share`` guarantees share the rest. A leaf divides its
     whole cores among its apps by its ``policy`` (``policies.LEAF_POLICIES``), floors first.
     With decayed fair share (``decay``: a queue's ``usage_half_life``), the water-fill levels
     (cores + decayed past usage) / weight instead, and a ``fairshare`` leaf that decays
     divides among its users first, levelled the same way, then each user's apps
     (``users.divide_leaf``).
  3. Memory. Shares are in cores. When the wanted executors need more memory than there is,
     phase 2 divides only the cores memory can back (the cluster's memory at the wanted
     executors' mean MiB per core), so a memory-bound cluster is still shared by the queues'
     weights and policies. If executor sizes differ and the executors still do not all fit,
     the growth above floors is taken in rank order as memory allows.
  4. Remainders. Cores left over by rounding to whole executors go one executor at a time to
     apps that still want more, in rank order (repeated while any is given), within memory and
     every ``max_cores`` on the app's path.
Rank: 1. priority, highest first; 2. submission sequence, oldest first; 3. app id.

Two implementations of the same phases: ``oracle.targets`` (plain functions over the claims,
one per phase, from scratch: the spec as code, for the self-check and the tests) and
``incremental.Arbiter`` (what the engine runs every cycle: it reuses last cycle's work). The
tests hold them to each other over random histories.
"""

from .decay import NO_PAST, DecayBook, Decayed, Past
from .incremental import Arbiter
from .oracle import targets as compute_targets
from .policies import (
    LEAF_POLICIES,
    Claim,
    by_priority_then_seq,
    by_seq,
    fairshare,
    water_fill,
)

__all__ = ["LEAF_POLICIES", "NO_PAST", "Arbiter", "Claim", "DecayBook", "Decayed", "Past",
           "by_priority_then_seq", "by_seq", "compute_targets", "fairshare", "water_fill"]
