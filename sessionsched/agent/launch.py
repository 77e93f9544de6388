"""What a driver needs so the agent can control it: the argv wrapper and the Spark properties.

Used on the service side (``server.launch.build_launch``) and by the notebook API; not needed
inside the driver (``package.build_zip`` leaves it out).

Properties, each only when the user did not set it (an explicit choice is respected, with a
warning when it takes control away):

* dynamic allocation and shuffle tracking on (``dynamic_allocation_conf``; for ``submit`` apps
  the server's ``service_conf`` already does this). Without dynamic allocation Spark standalone
  hands an app every free core at registration and the agent has no cap to hold, so a static
  app gets admission control only.
* ``spark.dynamicAllocation.maxExecutors`` at the cluster ceiling: the agent never raises the
  cap above the value it finds at attach time, so this is the most the app can ever get, and
  an app whose agent never attached still cannot ask for more than the cluster holds.
* when the queue's ``reclaim_timeout`` > 0 (graceful reclaim): ``spark.decommission.enabled``
  and ``spark.storage.decommission.enabled`` (running tasks finish, shuffle and cached blocks
  move to peers); ``spark.executor.decommission.forceKillTimeout`` = the reclaim timeout, so
  Spark itself kills a decommissioning executor at the deadline even if the agent is gone;
  ``spark.storage.decommission.replicationReattemptInterval`` = 2s: a decommissioned executor
  exits only after a migration round that starts after its last task, and the default 30 s
  round kept the core ~16 s longer than needed (measured on 4.0.1: 31 s -> 19 s from
  decommission to exit with 15 s tasks left).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

DECOMMISSION_ROUND = "2s"


def bootstrap_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap.py")


def is_off(conf: Mapping[str, str], key: str) -> bool:
    return conf.get(key, "").strip().lower() == "false"


def dynamic_allocation_conf(user_conf: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Dynamic allocation and shuffle tracking on, unless the user turned allocation off."""
    if is_off(user_conf, "spark.dynamicAllocation.enabled"):
        return {}, [
            "spark.dynamicAllocation.enabled=false: a static app keeps every executor it "
            "gets; sessionsched controls only when its driver starts (admission-only)"
        ]
    out = {"spark.dynamicAllocation.enabled": "true"}
    if (
        "spark.dynamicAllocation.shuffleTracking.enabled" not in user_conf
        and user_conf.get("spark.shuffle.service.enabled", "").strip().lower() != "true"
    ):
        out["spark.dynamicAllocation.shuffleTracking.enabled"] = "true"
    return out, []


def agent_conf(
    user_conf: Mapping[str, str],
    reclaim_timeout_s: float,
    max_executors: int | None = None,
) -> tuple[dict[str, str], list[str]]:
    """The agent's properties for an app with dynamic allocation on (see the module doc).
    Returns (properties to add, warnings for the submitter)."""
    if is_off(user_conf, "spark.dynamicAllocation.enabled"):
        return {}, []
    out: dict[str, str] = {}
    warnings: list[str] = []
    if max_executors is not None and "spark.dynamicAllocation.maxExecutors" not in user_conf:
        out["spark.dynamicAllocation.maxExecutors"] = str(max(max_executors, 1))
    if reclaim_timeout_s > 0:
        if is_off(user_conf, "spark.decommission.enabled"):
            warnings.append(
                "spark.decommission.enabled=false on a queue with graceful reclaim: reclaimed "
                "executors are released when idle and killed at the deadline"
            )
        else:
            out["spark.decommission.enabled"] = "true"
            defaults = {
                "spark.storage.decommission.enabled": "true",
                "spark.executor.decommission.forceKillTimeout": f"{reclaim_timeout_s:g}s",
                "spark.storage.decommission.replicationReattemptInterval": DECOMMISSION_ROUND,
            }
            out.update({k: v for k, v in defaults.items() if k not in user_conf})
    return out, warnings


def wrap_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """spark-submit arguments with the bootstrap as the application file and the user's
    Python file as its first argument. Non-Python apps (JVM) come back unchanged: they get
    admission control and a static cap only."""
    from ..spark.submit_args import parse_spark_submit

    args = parse_spark_submit(list(argv))
    if not args.is_python:
        return tuple(argv)
    head = len(argv) - len(args.app_args) - 1
    return (*argv[:head], bootstrap_path(), args.app_file, *args.app_args)
