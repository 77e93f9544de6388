"""Extended resources (GPUs and the like) of nodes and pods, as custom resources: no IO.

A node advertises an extended resource in its allocatable under a vendor's domain
(``nvidia.com/gpu: 4``, a device plugin's); a pod requests it whole, in its containers'
requests (or limits alone: for an extended resource the two must be equal, and the API server
copies limits into requests). Spark asks for it by its own name and a vendor
(``spark.executor.resource.gpu.amount`` with ``spark.executor.resource.gpu.vendor=nvidia.com``
makes the pod request ``nvidia.com/gpu``), so a custom resource here is named as Spark names
it: the part after the slash (``gpu``). Two vendors' resources of one name on one node add up.
Kubernetes' own names (no domain, or ``kubernetes.io``) are not extended resources.

The pods carry them as Spark puts them: spark-submit builds the driver pod and the driver its
executor pods, each container with a limit ``{vendor}/{name}: amount`` for every
``spark.{driver,executor}.resource.{name}.amount`` (Spark's ``KubernetesUtils
.buildResourcesQuantities``), which the API server copies into its requests. The backend
passes those properties through untouched (its own are labels, node selectors and defaults
where the user set none). Spark needs the vendor for that: without it spark-submit fails for
the driver, and the driver cannot build its executor pods (the app would wait for executors
for ever), so ``vendor_missing`` refuses such a launch first, in one line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from kubernetes.utils import parse_quantity


def spark_name(key: str) -> str | None:
    """The custom resource a quantity key is (``nvidia.com/gpu`` -> ``gpu``), or None."""
    domain, slash, name = key.partition("/")
    if not slash or not name or domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return None
    return name


def amounts(quantities: Mapping[str, object]) -> dict[str, int]:
    """The extended resources among ``quantities`` (allocatable, requests), whole units."""
    out: dict[str, int] = {}
    for key, value in quantities.items():
        name = spark_name(key)
        if name is not None:
            out[name] = out.get(name, 0) + math.floor(parse_quantity(value))
    return out


def node_amounts(node: dict) -> dict[str, int]:
    return amounts((node.get("status") or {}).get("allocatable") or {})


def pod_amounts(pod: dict) -> dict[str, int]:
    """What the pod requests of extended resources: its containers' sum, or the largest init
    container's if larger (as the kube-scheduler counts it)."""
    spec = pod.get("spec") or {}

    def of(container: dict) -> dict[str, int]:
        res = container.get("resources") or {}
        return amounts({**(res.get("limits") or {}), **(res.get("requests") or {})})

    total: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for k, v in of(c).items():
            total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers") or []:
        for k, v in of(c).items():
            total[k] = max(total.get(k, 0), v)
    return total


def take(into: dict[str, int], what: Iterable[tuple[str, int]] | Mapping[str, int]) -> None:
    """``into`` less ``what``, in place."""
    for k, v in (what.items() if isinstance(what, Mapping) else what):
        into[k] = into.get(k, 0) - v


_AMOUNT = re.compile(r"spark\.(driver|executor)\.resource\.(.+)\.amount")


def vendor_missing(props: Mapping[str, str]) -> str | None:
    """Why the app's pods could not ask for a custom resource (an amount without its vendor),
    in one line; None when every amount has its vendor (or there is none)."""
    for key, value in sorted(props.items()):
        m = _AMOUNT.fullmatch(key)
        if m is None or str(value).strip() in ("", "0"):
            continue
        component, name = m.groups()
        vendor = f"spark.{component}.resource.{name}.vendor"
        if not str(props.get(vendor, "")).strip():
            return (f"{key}={value} needs {vendor} on Kubernetes: the domain of the device "
                    f"plugin's resource (nvidia.com makes the {component} pod ask for "
                    f"nvidia.com/{name})")
    return None
