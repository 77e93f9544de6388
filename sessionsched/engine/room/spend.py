"""Admitting a head spends the cycle's room (``admission.Room``): the next heads of the walk
see what it took (``admission.plan_admissions``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...model import AppSpec, Queue, Resources
from ...model.custom import combine, scaled
from ..admission_checks import admitted_floor, mode_of, reservation
from ..host_room import host_need
from ..ledger import whole
from .commitment import custom_with

if TYPE_CHECKING:
    from ..admission import LeafView, Room

_NONE = Resources()


def spend(room: Room, view: LeafView, head: AppSpec, path: tuple[Queue, ...]) -> None:
    """What admitting ``head`` takes of the cycle's ``room``, so the next heads see it."""
    view.starting += 1
    floor = admitted_floor(head, view.queue)
    in_cluster = head.driver_in_cluster
    executor = head.executor
    reserve = mode_of(view.queue).reserves or head.gang is not None  # a gang's N: promised
    hold = room.gangs.get(head.app_id) if room.gangs else None
    if hold is not None:  # its reservation becomes its driver and floor, spent below
        room.free, room.uncommitted = room.free + hold.held, room.uncommitted + hold.need
    # Plain ints and dict look-ups, one ``Resources`` built per figure that moves: this runs
    # for every admitted app, 200 a busy cycle.
    ex_cores, ex_mem = executor.cores, executor.mem_mib
    driver_cores, floor_cores = head.driver.cores, floor * ex_cores
    admitted_in, usage, floors = room.admitted_in, room.usage_cores, room.floor_cores_in
    for node in path:
        name = node.name
        admitted_in[name] = admitted_in.get(name, 0) + 1
        usage[name] = usage.get(name, 0.0) + driver_cores
        floors[name] = floors.get(name, 0) + floor_cores
    leaf = view.queue.name
    if in_cluster:
        d_cores, d_mem = driver_cores, head.driver.mem_mib
        was = room.drivers_in.get(leaf)
        room.drivers_in[leaf] = (head.driver if was is None
                                 else Resources(was.cores + d_cores, was.mem_mib + d_mem))
    else:
        d_cores = d_mem = 0
        if head.driver_on_host:
            room.driver_slots_free -= 1
            room.host_drivers += 1
            if room.host_free is not None:
                room.host_free = room.host_free - host_need(head)
        room.drivers_in.setdefault(leaf, _NONE)
    most = whole(head)
    if most is None:
        room.unbounded_in[leaf] = room.unbounded_in.get(leaf, 0) + 1
    else:
        was = room.whole_in.get(leaf, _NONE)
        room.whole_in[leaf] = Resources(was.cores + most[0], was.mem_mib + most[1])
    first = max(reservation(head) - floor, 0)
    first_cores, first_mem = first * ex_cores, first * ex_mem
    if first_cores or first_mem:  # an app with a need has a fairshare weight (``NeedBook``)
        was = room.need_admitted.get(leaf, _NONE)
        first_custom = scaled(executor.custom, first) if executor.custom else ()
        room.need_admitted[leaf] = Resources(was.cores + first_cores, was.mem_mib + first_mem,
                                             combine(was.custom, first_custom, 1))
        room.weight_admitted[leaf] = (room.weight_admitted.get(leaf, 0)
                                      + view.priority_of[head.app_id])
    floor_mem = floor * ex_mem
    free = room.free
    if reserve:
        room.free = Resources(free.cores - d_cores - floor_cores, free.mem_mib - d_mem - floor_mem)
    elif in_cluster:
        room.free = Resources(free.cores - d_cores, free.mem_mib - d_mem)
    if room.free_now is not None and in_cluster:
        room.free_now.spend(head.driver, view.queue.node_sort)
    left = room.uncommitted
    # what the floors and in-cluster drivers leave of GPUs and the like
    custom = combine(left.custom, custom_with(head, floor), -1)
    room.uncommitted = Resources(left.cores - d_cores - floor_cores,
                                 left.mem_mib - d_mem - floor_mem, custom)
