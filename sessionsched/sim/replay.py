"""A workload replayed under a server config (``sessionsched simulate FILE --config SERVER``):
the same apps under the config's queue tree (with each queue's admission and policy), its
``defaults`` and, where it sets them, its cluster.

What the config replaces:
- ``queues``: the whole tree. An app whose queue the tree lacks runs in ``defaults.queue``
  (as ``workload from-eventlogs`` places it), and ``Replayed.moved`` names it; an app that
  names no queue runs there too.
- ``defaults.priority``: the priority of an app whose entry sets none.
- ``cluster``: the keys it sets. ``driver_slots``; with ``backend: memory``, its shape
  (``workers`` of ``cores`` and ``memory`` each: all three once it sets one, as the memory
  backend would run them) and ``driver_start_s``, ``executor_start_s``,
  ``executor_idle_timeout_s``. A standalone cluster's shape is its workers', which a config
  does not hold: the workload's stays. So do a workload's several ``clusters``, its
  ``placement`` and ``cluster_down``; a config that sets keys of one cluster is refused there.
- ``plans``: run from a ``start`` (the date and time of the run's 0: the caller's, else the
  workload's ``start:``), as a server started then would run them (``queue_trees.planned``);
  without one, only counted (``Replayed.plans``), for the caller to say they did not run.
The result is checked as the workload file is (``workload.WorkloadConfig``): an app that could
never start on the config's cluster or queues refuses the replay with one line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from ..config import (
    ConfigError,
    ServerConfig,
    load_server_config,
    load_yaml,
    parse_model,
    resolve_queue,
)
from ..config.plan_times import aware
from .queue_trees import planned
from .workload import AppConfig, ClusterConfig, Workload, WorkloadConfig, to_workload

SHAPE = ("workers", "cores", "memory")
TIMES = ("driver_start_s", "executor_start_s", "executor_idle_timeout_s")


@dataclass(frozen=True)
class Replayed:
    workload: Workload
    moved: tuple[str, ...] = ()  # apps whose queue the config's tree lacks (run in its default)
    plans: int = 0  # the config's time-of-day plans (run only with a ``start``)
    started: bool = False  # they ran (from a ``start``)


def workload_config(path: str | Path) -> WorkloadConfig:
    """The workload file as written, validated (``workload.load_workload`` without typing)."""
    data = load_yaml(path)
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("x-"))}
    return parse_model(WorkloadConfig, data, str(path))


def replay(path: str | Path, config_path: str | Path, start: datetime | None = None
           ) -> Replayed:
    """The workload in ``path`` under the server config in ``config_path`` (module doc), its
    plans run from ``start`` (aware; else the workload's ``start:``); ConfigError with one
    line for a bad file or a replay that could never run."""
    cfg = workload_config(path)
    config = load_server_config(config_path)
    try:
        replayed, moved = under_config(cfg, config)
    except ConfigError as e:
        raise ConfigError(f"{config_path}: {e}") from None
    source = f"{path} under {config_path}"
    workload = to_workload(parse_model(WorkloadConfig, replayed, source))
    if start is None and cfg.start is not None:
        try:
            start = aware(cfg.start)
        except ValueError as e:
            raise ConfigError(f"{path}: start: {e}") from None
    if start is not None and config.plans:
        try:
            changes = planned(config, start, workload.cluster.max_time_s)
        except ValueError as e:
            raise ConfigError(f"{config_path}: plans: {e}") from None
        workload = replace(workload, queue_changes=changes)
    return Replayed(workload, tuple(moved), len(config.plans), start is not None)


def under_config(cfg: WorkloadConfig, config: ServerConfig) -> tuple[dict, list[str]]:
    """The workload's data with the config's queues, defaults and cluster (to validate), and
    the names of the apps moved to the default queue."""
    root = config.queue_tree()
    default = config.defaults.queue
    moved = []
    apps = []
    for app in cfg.apps:
        queue = default
        if app.queue is not None:
            try:
                queue = resolve_queue(root, app.queue).name
            except LookupError:
                moved.append(app.name)
        apps.append(_app(app, queue, config))
    # Several clusters, their placement and outages are the workload's, as a standalone
    # config's cluster is (it holds no sizes): dropped, the run went on one default cluster.
    several = {k: getattr(cfg, k) for k in ("clusters", "placement", "cluster_down")
               if k in cfg.model_fields_set}
    if "clusters" in several:
        replaced = [k for k in ("driver_slots", *SHAPE, *TIMES)
                    if k in config.cluster.model_fields_set]
        if replaced:
            raise ConfigError(f"cluster.{replaced[0]}: sets one cluster, and the workload has "
                              f"several (clusters: {', '.join(c.name for c in cfg.clusters)}): "
                              "set it on the workload's clusters instead")
        return {**several, "queues": list(config.queues), "apps": apps}, moved
    return {"cluster": _cluster(cfg.cluster, config), **several,
            "queues": list(config.queues), "apps": apps}, moved


def _app(app: AppConfig, queue: str, config: ServerConfig) -> AppConfig:
    update: dict[str, object] = {"queue": queue}
    if "priority" not in app.model_fields_set:
        update["priority"] = config.defaults.priority
    return app.model_copy(update=update)


def _cluster(c: ClusterConfig, config: ServerConfig) -> ClusterConfig:
    section = config.cluster
    given = section.model_fields_set
    update: dict[str, object] = {}
    if "driver_slots" in given and section.driver_slots is not None:
        update["driver_slots"] = section.driver_slots
    if section.backend == "memory":
        if given & set(SHAPE):
            update.update(workers=section.workers, cores=section.cores * section.workers,
                          memory=section.memory * section.workers)
        update.update({k: getattr(section, k) for k in TIMES if k in given})
    return c.model_copy(update=update)


def load(path: str | Path, config_path: str | Path | None,
         start: datetime | None = None) -> Replayed:
    """The workload, under ``config_path`` when one is given (its plans run from ``start``)."""
    if config_path is None:
        from .workload import load_workload

        return Replayed(load_workload(path))
    return replay(path, config_path, start)

