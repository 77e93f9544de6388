"""Whether an app can run on the cluster as it is: the one check submission and admission share.

``never_fits(spec, path, workers)`` names the first number that does not fit, or None:
  1. its in-cluster driver is larger than any worker (in cores, memory or a custom resource:
     the line names the resource no worker has enough of, ``at most 2 gpu on one``);
  2. one executor is larger than any worker (an app that may hold no executor skips this);
  3. its first executors (``first_executors``: what its leaf's admission sets aside - under
     ``demand`` and ``reserve`` ``reservation()``, minExecutors but at least 1; else
     minExecutors; a gang's N in any mode, all of them at once beside its driver) need
     more cores than ``max_cores`` of a queue on its path, or more of a custom resource than
     its ``max_resources``;
  4. its driver and those executors are more than the workers hold, counted per worker
     (``Workers.holds_beside``), not as a sum of cores and memory.
Asked of the workers' sizes, not of what is free now: what is in use ends, a worker that is
too small stays too small.

At submission (``intake``) a hit refuses the app: nothing is stored, every door answers with
the line. At admission the same check holds a queued app whose cluster shrank under it (a
worker gone, a smaller ``max_cores`` in force) with ``does_not_fit_now`` and lets the apps
behind it go ahead; it starts when the cluster can hold it again (docs/design/admission.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model import AppSpec, Queue, Resources
from ...model.custom import describe
from ..admission_checks import ADMISSION_MODES, reservation, reserve_room
from ..waits import Wait, WaitCode
from .workers import Workers

DOES_NOT_FIT_NOW = "does not fit the cluster as it is now: {why}"


def _size(r: Resources) -> str:
    return f"{r.cores} cores/{r.mem_mib} MiB{describe(r.custom)}"


def _fits_no_worker(what: str, size: Resources, workers: Workers) -> str:
    """Why ``size`` fits no worker, naming the custom resource no worker has enough of when
    cores and memory alone would fit."""
    plain = Resources(size.cores, size.mem_mib)
    if size.custom and workers.fits_one(plain):
        for name, n in size.custom:
            most = workers.most(name)
            if most < n:
                have = f"at most {most} {name} on one" if most else f"no worker has {name}"
                return f"{what} of {_size(size)} fits no worker: {have} ({workers.describe()})"
    return f"{what} of {_size(size)} fits no worker ({workers.describe()})"


_SETS_ASIDE = tuple(mode for mode, m in ADMISSION_MODES.items() if reserve_room in m.checks)


def first_executors(spec: AppSpec, leaf: Queue) -> int:
    """The executors an app needs beside its driver to be admitted into ``leaf``."""
    if spec.gang is not None:  # a gang's N, in any mode (docs/design/gangs.md)
        return reservation(spec)
    mode = leaf.admission
    for aside in _SETS_ASIDE:  # by identity, not an Enum hash: asked for every head, each cycle
        if mode is aside:
            return reservation(spec)
    cap = spec.executor_cap
    return spec.min_executors if cap is None else min(spec.min_executors, cap)


def cores_to_start(spec: AppSpec, leaf: Queue) -> int:
    """The cores an app takes on a cluster to start there: its driver's, when it runs in the
    cluster, and its first executors' (what a dry run and a queue's placement rule count as
    room for it now)."""
    need = first_executors(spec, leaf) * spec.executor.cores
    return need + spec.driver.cores if spec.driver_in_cluster else need


def _what(spec: AppSpec, n: int) -> str:
    if spec.gang is not None and n == spec.gang.executors:
        return f"a gang of {n}"
    return f"minExecutors {spec.min_executors}" if n == spec.min_executors else "at least 1"


def never_fits(spec: AppSpec, path: Sequence[Queue], workers: Workers) -> str | None:
    """The first reason (module doc) ``spec`` cannot run on ``workers`` under the queues of
    ``path`` (root first), as one line with the numbers; None when it fits. What depends on
    the workers is memoised on ``workers`` per shape of app (admission asks every cycle, of
    every new head): what ``_on_workers`` reads of it."""
    n = first_executors(spec, path[-1]) if path else reservation(spec)
    gang = spec.gang
    driver, executor = spec.driver, spec.executor  # as ints: hashed and compared in C
    shape = ((driver.cores, driver.mem_mib, driver.custom) if spec.driver_in_cluster else None,
             executor.cores, executor.mem_mib, executor.custom, spec.executor_cap != 0, n,
             spec.min_executors, None if gang is None else gang.executors)
    sizes, count = workers.memo(shape, lambda: _on_workers(spec, n, workers))
    if sizes is not None:
        return sizes
    cores = n * spec.executor.cores
    for node in path:
        if node.max_cores is not None and cores > node.max_cores:
            return (f"{n} executor(s) of {spec.executor.cores} cores ({_what(spec, n)}) need"
                    f" {cores} cores, above max_cores {node.max_cores} of queue {node.name}")
        if node.max_resources and executor.custom:
            caps = dict(node.max_resources)
            for name, amount in executor.custom:
                if name in caps and n * amount > caps[name]:
                    return (f"{n} executor(s) of {amount} {name} ({_what(spec, n)}) need"
                            f" {n * amount} {name}, above max_resources {name} {caps[name]}"
                            f" of queue {node.name}")
    return count


def _on_workers(spec: AppSpec, n: int, workers: Workers) -> tuple[str | None, str | None]:
    """(the driver or an executor larger than any worker, the first executors more than the
    workers hold): checks 1-2 and 4 of the module doc."""
    driver = spec.driver if spec.driver_in_cluster else None
    if driver is not None and not workers.fits_one(driver):
        return _fits_no_worker("the driver", driver, workers), None
    executor = spec.executor
    if spec.executor_cap != 0 and not workers.fits_one(executor):
        return _fits_no_worker("an executor", executor, workers), None
    if n <= 0:
        return None, None
    held = workers.holds(executor) if driver is None else workers.holds_beside(driver, executor)
    if held < n:
        beside = "" if driver is None else f" beside the driver of {_size(driver)}"
        return None, (f"{n} executor(s) of {_size(executor)} ({_what(spec, n)}) do not fit"
                      f" the cluster: its workers hold {held}{beside} ({workers.describe()})")
    return None, None


def held_now(spec: AppSpec, path: Sequence[Queue], workers: Workers) -> Wait | None:
    """Admission's use of ``never_fits``: the ``does_not_fit_now`` wait of a queued app the
    cluster as it is now cannot hold, or None."""
    why = never_fits(spec, path, workers)
    return None if why is None else Wait(WaitCode.DOES_NOT_FIT_NOW,
                                         DOES_NOT_FIT_NOW.format(why=why))
