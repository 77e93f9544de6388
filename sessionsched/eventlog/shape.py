"""The cluster a workload from event logs runs on: given (``--cluster``), or inferred from the
logs and said so.

Inferred: one worker per host the apps' executors ran on (at least one); each worker as large
as the most executor cores and memory held at once on one host, across all the logs (an
executor's memory is its app's ``spark.executor.memory``); then raised where an app could
not start on it otherwise (an executor, an in-cluster driver, the driver and its first
executors). A cluster's idle room leaves no trace in a log, so an inferred cluster is the
smallest that ran what the logs show: a lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..config import MAX_WORKERS
from ..model import WHOLE_NUMBER, parse_mem_mib
from .events import AppFacts


@dataclass(frozen=True)
class Shape:
    """``workers`` equal workers of ``cores`` cores and ``mem_mib`` MiB each."""

    workers: int
    cores: int
    mem_mib: int


def parse_shape(text: str) -> Shape:
    """``workers=N,cores=C,memory=M``: each worker's cores and memory (a Spark size), as
    ``sessionsched cluster up`` and the server config's ``cluster`` section take them."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or key.strip() not in ("workers", "cores", "memory"):
            raise ValueError(f"{text!r}: expected workers=N,cores=C,memory=M")
        if key.strip() in fields:  # the last one would win without a word
            raise ValueError(f"{text!r}: {key.strip()} given twice")
        fields[key.strip()] = value.strip()
    missing = [k for k in ("workers", "cores", "memory") if k not in fields]
    if missing:
        raise ValueError(f"{text!r}: {', '.join(missing)} missing (workers=N,cores=C,memory=M)")
    # ASCII digits: "²".isdigit() is true, and int() refused it with its own words.
    if not (WHOLE_NUMBER.fullmatch(fields["workers"]) and WHOLE_NUMBER.fullmatch(fields["cores"])):
        raise ValueError(f"{text!r}: workers and cores are whole numbers")
    shape = Shape(int(fields["workers"]), int(fields["cores"]), parse_mem_mib(fields["memory"]))
    if min(shape.workers, shape.cores, shape.mem_mib) < 1:
        raise ValueError(f"{text!r}: workers, cores and memory are above 0")
    if shape.workers > MAX_WORKERS:  # said here, not as the written workload's problem
        raise ValueError(f"{text!r}: at most {MAX_WORKERS} workers")
    return shape


@dataclass(frozen=True)
class Need:
    """What one app needs of the cluster to start (its workload entry's sizes)."""

    executor_cores: int
    executor_mib: int
    driver_cores: int
    driver_mib: int
    in_cluster: bool
    first_executors: int


def need_of(app: dict) -> Need:
    ex, dr = app["executor"], app["driver"]
    return Need(ex["cores"], parse_mem_mib(ex["memory"]), dr["cores"],
                parse_mem_mib(dr["memory"]), dr["in_cluster"], max(app["min_executors"], 1))


def infer_shape(apps: list[AppFacts], executor_mib: list[int], needs: list[Need]) -> Shape:
    """The cluster the logs show (module doc); ``executor_mib[i]`` is ``apps[i]``'s executor
    memory, ``needs[i]`` its entry's sizes."""
    moves: dict[str, list[tuple[int, int, int]]] = {}
    for facts, mib in zip(apps, executor_mib, strict=True):
        for e in facts.executors:
            host = moves.setdefault(e.host or "?", [])
            host.append((e.added_ms, e.cores, mib))
            host.append((e.removed_ms if e.removed_ms is not None else facts.end_ms,
                         -e.cores, -mib))
    cores = mem = 1
    for steps in moves.values():
        held_cores = held_mib = 0
        for _, c, m in sorted(steps, key=lambda s: (s[0], s[1])):  # releases first at a tie
            held_cores += c
            held_mib += m
            cores, mem = max(cores, held_cores), max(mem, held_mib)
    workers = max(len(moves), 1)
    for n in needs:
        cores = max(cores, n.executor_cores, n.driver_cores if n.in_cluster else 0)
        mem = max(mem, n.executor_mib, n.driver_mib if n.in_cluster else 0)
        first = n.first_executors * n.executor_cores + (n.driver_cores if n.in_cluster else 0)
        first_mib = n.first_executors * n.executor_mib + (n.driver_mib if n.in_cluster else 0)
        cores = max(cores, math.ceil(first / workers))
        mem = max(mem, math.ceil(first_mib / workers))
        # the first executors must also fit whole on the workers, not only in their sum: each
        # worker grown by as many executors as it lacks, counted, not added one by one (a log's
        # minExecutors may be up to 2**31 - 1)
        lacking = (-(-n.first_executors // workers)
                   - min(cores // n.executor_cores, mem // n.executor_mib))
        if lacking > 0:
            cores += lacking * n.executor_cores
            mem += lacking * n.executor_mib
    return Shape(workers, cores, mem)


def describe(shape: Shape) -> str:
    return (f"{shape.workers} worker(s) of {shape.cores} cores and {mem_text(shape.mem_mib)}")


def mem_text(mib: int) -> str:
    return f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"
