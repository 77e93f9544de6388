"""Reading pods and nodes (raw API JSON, as the informers keep them): no IO.

Labels: Spark puts ``spark-role`` (driver/executor), ``spark-app-selector`` (the Spark
application id) and ``spark-exec-id`` on its pods; the backend adds ``LABEL_APP`` (the
submission id) and ``LABEL_IN_CLUSTER`` to driver and executor pods.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from decimal import Decimal

from kubernetes.utils import parse_quantity

from ...model import Resources, Worker
from ...model.custom import custom_of
from .extended import node_amounts, pod_amounts, take

LABEL_APP = "sessionsched.io/app-id"
LABEL_IN_CLUSTER = "sessionsched.io/driver-in-cluster"
LABEL_QUEUE = "sessionsched.io/queue"
LABEL_PRIORITY = "sessionsched.io/priority"
DRIVER_CONTAINER = "spark-kubernetes-driver"
ENDED = ("Succeeded", "Failed")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


def valid_label_value(value: str) -> bool:
    return bool(_LABEL_VALUE.fullmatch(value))


def labels(obj: dict) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def phase(pod: dict) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def is_driver(pod: dict) -> bool:
    return labels(pod).get("spark-role") == "driver"


def is_executor(pod: dict) -> bool:
    return labels(pod).get("spark-role") == "executor"


def deleting(pod: dict) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def exit_code(pod: dict) -> int | None:
    """The driver container's exit code once terminated (the first container's if Spark's
    name is not there), else None."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ordered = sorted(statuses, key=lambda s: s.get("name") != DRIVER_CONTAINER)
    for status in ordered:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode") is not None:
            return int(terminated["exitCode"])
    return None


def driver_exit(pod: dict) -> int | None:
    """How an ended driver pod ended, as an exit code; None while it runs. A Failed pod
    whose container says 0 (or nothing) is 1: it failed."""
    p = phase(pod)
    if p == "Succeeded":
        code = exit_code(pod)
        return 0 if code is None else code
    if p == "Failed":
        return exit_code(pod) or 1
    return None


def requests(pod: dict) -> tuple[Decimal, Decimal]:
    """(cpu cores, memory bytes) the pod requests: the sum over its containers, or the largest
    init container's if larger (as the kube-scheduler counts it)."""
    spec = pod.get("spec") or {}

    def total(containers: Iterable[dict]) -> list[tuple[Decimal, Decimal]]:
        out = []
        for c in containers:
            req = (c.get("resources") or {}).get("requests") or {}
            out.append((parse_quantity(req.get("cpu", 0)), parse_quantity(req.get("memory", 0))))
        return out

    main = total(spec.get("containers") or [])
    cpu = sum((c for c, _ in main), Decimal(0))
    mem = sum((m for _, m in main), Decimal(0))
    for c, m in total(spec.get("initContainers") or []):
        cpu, mem = max(cpu, c), max(mem, m)
    return cpu, mem


def node_usable(node: dict) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def allocatable(node: dict) -> tuple[Decimal, Decimal]:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    return parse_quantity(alloc.get("cpu", 0)), parse_quantity(alloc.get("memory", 0))


def free_capacity(nodes: Iterable[dict], pods: Iterable[dict], theirs) -> Resources:
    """Allocatable cpu/memory (and extended resources, ``extended``) of the usable ``nodes``
    minus the requests of pods bound to them that are not ended and for which ``theirs(pod)``
    is true (usage the scheduler does not manage). Whole cores, MiB; never negative."""
    names: set[str] = set()
    cpu = mem = Decimal(0)
    ext: dict[str, int] = {}
    for node in nodes:
        if node_usable(node):
            names.add(node["metadata"]["name"])
            c, m = allocatable(node)
            cpu, mem = cpu + c, mem + m
            for k, v in node_amounts(node).items():
                ext[k] = ext.get(k, 0) + v
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") in names and phase(pod) not in ENDED \
                and theirs(pod):
            c, m = requests(pod)
            cpu, mem = cpu - c, mem - m
            take(ext, pod_amounts(pod))
    return _res(cpu, mem, ext)


def _res(cpu: Decimal, mem: Decimal, ext: dict[str, int]) -> Resources:
    """Whole cores, MiB, whole extended amounts; never negative."""
    return Resources(max(math.floor(cpu), 0), max(math.floor(mem / (1 << 20)), 0),
                     custom_of({k: max(v, 0) for k, v in ext.items()}) if ext else ())


def node_workers(nodes: Iterable[dict], pods: Iterable[dict], theirs) -> tuple[Worker, ...]:
    """The usable ``nodes`` one by one, as workers: each one's size is its allocatable cpu and
    memory (and extended resources: ``extended``, GPUs) minus the requests of the live pods
    bound to it for which ``theirs(pod)`` is true (what the scheduler does not manage), its free
    room that less our own pods' requests too. Whole cores, MiB; never negative. In node name
    order."""
    alloc: dict[str, list] = {}
    for node in nodes:
        if node_usable(node):
            c, m = allocatable(node)
            ext = node_amounts(node)
            # size cpu/mem/extended, free cpu/mem/extended
            alloc[node["metadata"]["name"]] = [c, m, ext, c, m, dict(ext)]
    for pod in pods:
        row = alloc.get((pod.get("spec") or {}).get("nodeName"))
        if row is None or phase(pod) in ENDED:
            continue
        c, m = requests(pod)
        ext = pod_amounts(pod) if row[2] else None  # a node without any: nothing to take
        if theirs(pod):
            row[0], row[1] = row[0] - c, row[1] - m
            if ext:
                take(row[2], ext)
        row[3], row[4] = row[3] - c, row[4] - m
        if ext:
            take(row[5], ext)

    return tuple(Worker(name, _res(r[0], r[1], r[2]), _res(r[3], r[4], r[5]))
                 for name, r in sorted(alloc.items()))
