"""What admitting an app commits of the cluster: its reservation of first executors and, with
its in-cluster driver, the resources they take together - custom ones (GPUs) included, which
``admission_checks.reserve_room`` counts against what the drivers and executor floors already
admitted leave (``ledger.Ledger.floor_custom``).
"""

from __future__ import annotations

from ...model import AppSpec, Resources
from ...model.custom import Custom, combine, scaled

_NONE = Resources()


def reservation(spec: AppSpec) -> int:
    """Executors a ``reserve`` queue sets aside for an app until it holds them:
    ``max(minExecutors, 1)`` - a gang's N (``AppSpec.gang``) in any queue -, but never more
    than the app may hold (maxExecutors, slots.max)."""
    n, gang, cap = spec.min_executors, spec.gang, spec.executor_cap  # ~1,300 asks a busy cycle
    n = n if n > 1 else 1
    if gang is not None and gang.executors > n:
        n = gang.executors
    return n if cap is None or n <= cap else cap


def commitment(spec: AppSpec) -> Resources:
    """Its in-cluster driver and ``reservation`` executors, custom resources included."""
    n, ex = reservation(spec), spec.executor  # one ``Resources`` built: asked 2-3 times a head
    d = spec.driver if spec.driver_in_cluster else _NONE
    return Resources(d.cores + n * ex.cores, d.mem_mib + n * ex.mem_mib, custom_with(spec, n))


def custom_with(spec: AppSpec, n: int) -> Custom:
    """The custom resources (GPUs and the like) of the app's in-cluster driver and ``n`` of its
    executors: what its reservation asks (``commitment``), what its floor holds
    (``ledger.Ledger.floor_custom``, ``spend``)."""
    ex = spec.executor.custom
    d = spec.driver.custom if spec.driver_in_cluster else ()
    return combine(d, scaled(ex, n), 1) if ex or d else ()
