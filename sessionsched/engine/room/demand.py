"""``running_demand``, the ``demand`` admission's last room check (``admission_checks``): the
head's driver and first executors fit beside what its queue's running apps of its priority
or higher still want above their floors (``needs.NeedBook``), custom resources included - or
its driver alone goes ahead (one per leaf)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...model import AppSpec, Policy, Resources
from ...model.custom import amount
from ..host_room import resource_room
from ..waits import Wait, WaitCode, first_of, res
from .commitment import commitment, reservation

if TYPE_CHECKING:
    from ..admission import LeafView, Room

_NONE = Resources()


def demand_verdict(view: LeafView, head: AppSpec, room: Room) -> tuple[Wait | None, bool]:
    """``running_demand``'s wait, and whether it lets the head in as the driver ahead (only
    its first executors lack room): admission marks such an app ``ahead``."""
    need = need_beside(view, head, room)
    c, left = commitment(head), room.uncommitted
    short = _short(c, need, left)
    if short is None:
        return None, False
    if _may_go_ahead(view, head, need, room):
        return None, True
    q = view.queue.name
    n = reservation(head)
    verb = "need" if n else "needs"
    if short:  # a GPU or the like: named
        return Wait(
            WaitCode.RUNNING_DEMAND,
            f"waiting for {short}: the running apps of {q} want {amount(need.custom, short):g}"
            f" {short} above their floors and {first_of(head, n)} {verb}"
            f" {amount(c.custom, short):g} {short}: more than the"
            f" {max(amount(left.custom, short), 0):g} {short} left beside the admitted apps'"
            f" drivers and floors", resource_room(short)
        ), False
    return Wait(
        WaitCode.RUNNING_DEMAND,
        f"the running apps of {q} want {res(need)} above their floors and {first_of(head, n)}"
        f" {verb} {res(c)}: more than the {res(left)} left beside the admitted apps' drivers"
        f" and floors"
    ), False


def need_beside(view: LeafView, head: AppSpec, room: Room) -> Resources:
    """What the leaf's admitted apps of the head's priority or higher want above their floors
    (in a ``fairshare`` leaf: up to what they keep with the head in)."""
    q = view.queue.name
    priority = view.priority_of[head.app_id]
    need, extra = room.need_of(q, priority), room.need_admitted.get(q)
    if extra is not None:  # apps admitted this cycle
        need = need + extra
    if view.queue.policy is Policy.FAIRSHARE and need != _NONE:
        weight = room.weight_of(q, priority) + room.weight_admitted.get(q, 0)
        need = _kept_beside(head, priority, need, weight, room)
    return need


def _short(asked: Resources, need: Resources, left: Resources) -> str | None:
    """What keeps ``asked`` from fitting beside ``need`` in ``left`` (what the floors and
    drivers leave: ``Room.uncommitted``): None if it fits; "" for cores or memory; else the
    first custom resource of ``asked`` short. Only what is asked counts: the running apps'
    GPUs are no reason to hold back a CPU app."""
    if asked.cores + need.cores > left.cores or asked.mem_mib + need.mem_mib > left.mem_mib:
        return ""
    for name, v in asked.custom:
        if v + amount(need.custom, name) > amount(left.custom, name):
            return name
    return None


def _may_go_ahead(view: LeafView, head: AppSpec, need: Resources, room: Room) -> bool:
    """The head may start ahead of the room for its first executors: its driver alone fits
    beside the running apps' need, and no app of its leaf started ahead still waits for its
    first executor (one per leaf)."""
    if room.ahead_in.get(view.queue.name, 0):
        return False
    d = head.driver if head.driver_in_cluster else _NONE
    return _short(d, need, room.uncommitted) is None


def _kept_beside(head: AppSpec, priority: int, need: Resources, weight: int,
                 room: Room) -> Resources:
    """In a ``fairshare`` leaf: the part of the running apps' ``need`` they keep with the head
    admitted beside them. Arbitration would give the head its weighted share of the room left
    for executors (weight = priority), taken from theirs, so their need counts only up to their
    part, ``weight / (weight + priority)`` of that room (rounded up); the head is then held
    back only when its own share could not hold its first executors. Each app's real share is
    ``min(its need, its part)``; taking the part of the sum instead is never smaller, so never
    lets in a head that the exact division would keep out."""
    driver = head.driver if head.driver_in_cluster else _NONE
    left = room.uncommitted - driver
    if weight <= 0 or left.cores <= 0:
        return need
    total = weight + priority

    def part(x: int) -> int:
        return -(-max(x, 0) * weight // total)  # ceil, in whole cores, MiB and units

    kept = ((name, min(v, part(int(amount(left.custom, name))))) for name, v in need.custom)
    return Resources(min(need.cores, part(left.cores)), min(need.mem_mib, part(left.mem_mib)),
                     tuple((name, v) for name, v in kept if v))
