"""The node a driver pod goes to under ``node_sort: binpacking`` (docs/design/placement.md): no IO.

Under ``fair`` (the default) nothing is added: the kube scheduler's default scoring
(``NodeResourcesFit``, ``LeastAllocated``) already puts a pod on the node with the most room
left. Under ``binpacking`` the backend chooses the fullest node that holds the driver pod now
(``engine.placement.sorting.pick``) from the nodes it reads already (``pods.node_workers``:
allocatable less every live pod's requests), and pins the pod there by Spark's own property
``spark.kubernetes.driver.node.selector.kubernetes.io/hostname`` (a node selector on the
well-known hostname label, which the kubelet sets on every node). Nothing is pinned when no
node holds it now (the pod then waits for the kube scheduler, as before) or when the drivers
run on nodes of their own outside what the backend reads (``driver_node_selector``).

The driver pod's request is Spark's: cores ``spark.kubernetes.driver.request.cores``, else
``spark.driver.cores`` (1); memory ``spark.driver.memory`` (1g) plus
``spark.driver.memoryOverhead``, else ``spark.driver.memoryOverheadFactor`` of it (0.1; 0.4
for a Python or R app) but at least 384 MiB. Executors are placed by the kube scheduler.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

from kubernetes.utils import parse_quantity

from ...engine.placement.sorting import pick
from ...model import NodeSort, Resources, parse_mem_mib
from ...spark.resource_props import resource_ask
from ...spark.submit_args import parse_spark_submit
from ..base import Launch
from .pods import labels, node_workers

HOSTNAME = "kubernetes.io/hostname"
PIN = f"spark.kubernetes.driver.node.selector.{HOSTNAME}"
MIN_OVERHEAD_MIB = 384


def _conf(launch: Launch) -> dict[str, str]:
    """The app's properties as spark-submit sees them (ours win), and its primary resource
    under ``_resource``."""
    if launch.rest_request is not None:
        props = {k: str(v) for k, v in (launch.rest_request.get("sparkProperties") or {}).items()}
        resource = str(launch.rest_request.get("appResource") or "")
    else:
        args = parse_spark_submit(list(launch.argv))
        props = dict(args.conf)
        for option, key in (("--driver-cores", "spark.driver.cores"),
                            ("--driver-memory", "spark.driver.memory")):
            value = args.last(option)
            if value is not None:
                props[key] = value
        resource = args.app_file or ""
    props.update(launch.conf)
    props["_resource"] = resource
    return props


def driver_request(launch: Launch) -> Resources:
    """The driver pod's cpu (whole cores, rounded up) and memory request (module doc)."""
    return _request(_conf(launch))


def _request(conf: Mapping[str, str]) -> Resources:
    """Cores and memory as above, and the driver's custom resources (a GPU driver goes to a
    node with GPUs)."""
    cores = conf.get("spark.kubernetes.driver.request.cores") or conf.get("spark.driver.cores")
    cpu = math.ceil(parse_quantity(cores)) if cores else 1
    mem = parse_mem_mib(conf.get("spark.driver.memory", "1g"))
    if "spark.driver.memoryOverhead" in conf:
        overhead = parse_mem_mib(conf["spark.driver.memoryOverhead"])
    else:
        jvm = not conf["_resource"].endswith((".py", ".R", ".r"))
        factor = float(conf.get("spark.driver.memoryOverheadFactor", 0.1 if jvm else 0.4))
        overhead = max(int(mem * factor), MIN_OVERHEAD_MIB)
    return Resources(cpu, mem + overhead, resource_ask(conf).driver)


def pinned(launch: Launch, nodes: Iterable[dict], pods: Iterable[dict], theirs,
           driver_selector: Mapping[str, str]) -> Launch:
    """``launch`` with its driver pod pinned to the node ``binpacking`` chooses, or as it is
    (``fair``; no node holds it now; the drivers' own nodes not read; the user pinned it; module
    doc)."""
    if launch.node_sort != NodeSort.BINPACKING.value:
        return launch
    try:
        conf = _conf(launch)
        size = _request(conf)
    except (ValueError, ArithmeticError):
        return launch  # a property spark-submit will refuse in its own words
    if PIN in conf:
        return launch  # the user's own choice of node
    nodes = [n for n in nodes
             if all(labels(n).get(k) == v for k, v in driver_selector.items())]
    workers = node_workers(nodes, pods, theirs)
    at = pick([w.free for w in workers], size, NodeSort.BINPACKING)
    if at is None:
        return launch
    name = workers[at].name
    host = next((labels(n).get(HOSTNAME) for n in nodes
                 if n["metadata"]["name"] == name), None) or name
    return replace(launch, conf={**launch.conf, PIN: host})
