"""Admission of a gang at its queue's head: it starts only when its reservation is whole.

A gang head runs its queue's limits, the driver-slot check and ``max_cores`` on its path
(``admission_checks.GANG_CHECKS``), then this one: its hold (``book.Hold``, read through ``Room.gangs``) covers its driver and all N
executors, else it waits ``gang_reserving`` with the numbers. It runs none of the modes' room
checks (``driver_share``, ``reserve_room``, ``running_demand``...): its reservation is its
room, set aside from what freed; what the others need is what they already hold.
"""

from __future__ import annotations

from ...model import AppSpec, Resources
from ..waits import Wait, WaitCode
from .book import Hold, needed


def _res(r: Resources) -> str:
    return f"{max(r.cores, 0)} cores/{max(r.mem_mib, 0)} MiB"


def gang_wait(hold: Hold | None, head: AppSpec) -> Wait | None:
    """None when ``hold`` is whole; else the ``gang_reserving`` wait: what is held of what is
    needed, and whether its timeout's clock runs (the deadline itself is on
    ``EngineView.reservation``: a reason's text is written once, not every second)."""
    if hold is not None and hold.whole:
        return None
    gang = head.gang
    assert gang is not None
    need = needed(head)
    held = hold.held if hold is not None else Resources()
    n = hold.executors if hold is not None else 0
    deadline = hold.deadline if hold is not None else None
    started = "runs since" if deadline is not None else "starts at"
    clock = (f"its {gang.timeout_s:g}s timeout ({gang.style.value}) {started} the first"
             " reserved core")
    return Wait(WaitCode.GANG_RESERVING,
                f"gang of {gang.executors} executor(s) reserving: holds {_res(held)}"
                f" of the {_res(need)} it needs ({n} of {gang.executors} executor(s)"
                f"{_driver(head, hold)}) as room frees; {clock}")


def _driver(head: AppSpec, hold: Hold | None) -> str:
    if not head.driver_in_cluster:
        return ""
    return ", its driver" if hold is not None and hold.driver else ", not yet its driver"
