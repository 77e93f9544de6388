"""Node sorting: which worker a driver or an executor goes to, of those with room for it now.

YuniKorn's node sorting policies (a queue's ``node_sort``, ``model.NodeSort``), on the free
room of each worker as free cores, then free memory (a worker with more free cores is "more
free"; memory breaks ties):
  * ``fair`` (the default): the worker with the most free room first - load spread over every
    worker, each kept about as busy as the others;
  * ``binpacking``: the fullest worker that still fits first - the others stay whole (nothing
    on them), for a large driver or executor later and for a cluster that scales down.
Equal workers: the first in the order given (the backends give their workers in name order),
so the same state places the same way.

Keep-off, before either order: a driver or an executor that asks for no custom resource goes
to a worker with custom resources free (GPUs not all taken) only when no other worker has
room for it. The GPU workers' cores and memory stay free for the GPU executors, which can go
nowhere else; a GPU worker whose GPUs are all taken is a worker like any other. With no custom
resource anywhere the rule changes nothing.

``pick`` is the rule the memory backend, the simulator and the Kubernetes backend place by,
and what the engine models its own launches with (``free_now``). O(workers) per pick; the
memory backend keeps its workers indexed by free room to pick the same worker in
O(log distinct free rooms) (``backends/memory/rooms.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model import NodeSort, Resources


def more_free(a: Resources, b: Resources) -> bool:
    """``a`` is more free room than ``b`` (cores first, then memory)."""
    return (a.cores, a.mem_mib) > (b.cores, b.mem_mib)


def pick(free: Sequence[Resources | None], size: Resources, sort: NodeSort) -> int | None:
    """The index of the worker ``size`` goes to by ``sort``, of ``free`` (each worker's free
    room now; None: a worker that takes nothing, lost or cordoned), or None when none fits.
    A ``size`` that asks for no custom resource keeps off the workers with custom resources
    free while another worker has room for it (the module doc)."""
    best: int | None = None
    kept_off: int | None = None  # the best of the workers with custom resources free
    fair = sort is not NodeSort.BINPACKING
    plain = not size.custom
    for i, room in enumerate(free):
        if room is None or not size.fits_in(room):
            continue
        if plain and room.custom:
            if kept_off is None or (more_free(room, free[kept_off]) if fair
                                    else more_free(free[kept_off], room)):
                kept_off = i
            continue
        if best is None:
            best = i
            continue
        chosen = free[best]
        if more_free(room, chosen) if fair else more_free(chosen, room):
            best = i
    return best if best is not None else kept_off


def whole(free: Sequence[Resources | None], size: Sequence[Resources]) -> int:
    """How many workers are whole: alive, with all of their room free (nothing placed)."""
    return sum(1 for f, s in zip(free, size, strict=True) if f is not None and f == s)
