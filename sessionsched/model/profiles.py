"""Stage-level resource profiles (Spark's ``ResourceProfile``, ``rdd.withResources``): an app
may run some stages on executors of another shape than its own (one core and a GPU, say).
Its agent reports each profile the driver knows; the engine grants executors per profile
(``engine.placement.profiles``). Profile 0 is the app's default profile: its executors are
the app's ``AppSpec.executor``. An app that reported no other profile has none here, and
the engine treats it as it always did."""

from __future__ import annotations

from dataclasses import dataclass

from . import Resources

DEFAULT_PROFILE = 0


@dataclass(frozen=True, slots=True)
class Profile:
    """One profile as its app's agent reported it."""

    profile_id: int
    executor: Resources  # one executor's cores, memory and custom resources
    demand: int = 0  # executors of this profile Spark could use now
    pending_tasks: int = 0
    running_tasks: int = 0
    task_cpus: float = 1.0
    task_resources: tuple[tuple[str, float], ...] = ()  # (name, amount per task)


Profiles = tuple[Profile, ...]  # sorted by id; empty: the default profile alone


def shape_of(profiles: Profiles, profile_id: int, default: Resources) -> Resources:
    """A profile's executor: ``default`` (the app's own) for the default profile."""
    if profile_id != DEFAULT_PROFILE:
        for p in profiles:
            if p.profile_id == profile_id:
                return p.executor
    return default


def held_by_shape(executors, profiles: Profiles, default: Resources) -> tuple[int, int]:
    """(cores, MiB) of ``executors`` (``model.Executor``), each by its profile's shape."""
    cores = mem = 0
    for e in executors:
        size = shape_of(profiles, e.profile, default)
        cores += size.cores
        mem += size.mem_mib
    return cores, mem
