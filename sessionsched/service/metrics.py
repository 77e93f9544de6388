"""Prometheus metrics (``GET /metrics``).

Counters and the cycle histogram are updated as things happen; the gauges (apps per state per
queue, queue lengths, waiting apps per queue and reason code, running apps short of
executors per queue and what they wait for, the cores gangs have reserved and need per queue,
cluster reachability) are read
from the service's books at scrape time, so they can never drift from what the API shows. Each
service has its own registry: two services in one process (tests) do not collide.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from sessionsched.engine.waits import WaitCode
from sessionsched.model import AppState, Worker
from sessionsched.model.usage import COUNTED
from sessionsched.service.resource_view import (
    cluster_resources,
    executor_waits,
    queue_resources,
)
from sessionsched.service.usage_meter import RES_COUNTED, UsageMeter

if TYPE_CHECKING:
    from sessionsched.service.reads import ReadView

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _BooksCollector(Collector):
    def __init__(self, snapshot: Callable[[], dict]):
        self._snapshot = snapshot

    def collect(self) -> Iterable[GaugeMetricFamily]:
        snap = self._snapshot()
        apps = GaugeMetricFamily(
            "sessionsched_apps", "Applications by queue and state", labels=["queue", "state"]
        )
        for (queue, state), n in sorted(snap["apps"].items()):
            apps.add_metric([queue, state], n)
        yield apps
        pending = GaugeMetricFamily(
            "sessionsched_queue_pending", "Applications waiting in a leaf queue", labels=["queue"]
        )
        for queue, n in sorted(snap["pending"].items()):
            pending.add_metric([queue], n)
        yield pending
        executors = GaugeMetricFamily(
            "sessionsched_queue_executor_cores", "Cores of executors held by a queue's apps",
            labels=["queue"],
        )
        for queue, n in sorted(snap["executor_cores"].items()):
            executors.add_metric([queue], n)
        yield executors
        waiting = GaugeMetricFamily(
            "sessionsched_waiting_apps",
            "Applications waiting to start, by leaf queue and reason code (docs/user/reasons.md)",
            labels=["queue", "reason_code"],
        )
        for (queue, code), n in sorted(snap["waiting"].items()):
            waiting.add_metric([queue, code], n)
        yield waiting
        short = GaugeMetricFamily(
            "sessionsched_apps_short_of_executors",
            "Running applications holding fewer executors than they want, by leaf queue and what"
            " they wait for (the code of model/executor_notes.py; resource: the custom resource"
            " no worker has free for one executor, for resource_short)",
            labels=["queue", "code", "resource"],
        )
        for (queue, code, resource), n in sorted(snap["short"].items()):
            short.add_metric([queue, code, resource], n)
        yield short
        reserved = GaugeMetricFamily(
            "sessionsched_gang_reserved_cores",
            "Cores set aside for gangs waiting to be whole, by leaf queue (docs/design/gangs.md)",
            labels=["queue"],
        )
        needed = GaugeMetricFamily(
            "sessionsched_gang_needed_cores",
            "Cores the reserving gangs need in all (driver and N executors), by leaf queue",
            labels=["queue"],
        )
        for queue, (held, need) in sorted(snap["gangs"].items()):
            reserved.add_metric([queue], held)
            needed.add_metric([queue], need)
        yield reserved
        yield needed
        host = GaugeMetricFamily(
            "sessionsched_host_driver_memory_mib",
            "The scheduler host's memory for its client-mode drivers (room) and what they hold"
            " (used), spark.driver.memory and overhead; no room sample when not measured",
            labels=["kind"],
        )
        for kind, mib in snap["host"]:
            host.add_metric([kind], mib)
        yield host
        yield from _resource_gauges(snap.get("resources"))
        yield GaugeMetricFamily(
            "sessionsched_cluster_reachable", "1 when the backend reached the cluster last time",
            value=1 if snap["reachable"] else 0,
        )
        yield from _cluster_gauges(snap.get("clusters", ()))


def _cluster_gauges(rows) -> Iterable[GaugeMetricFamily]:
    """Behind several clusters, each one (``engine.clusters.view.ClusterRow``); nothing with
    one, so one cluster's scrape is as it was."""
    if not rows:
        return
    families = (("reachable", "1 when the cluster's backend answered its last poll",
                 lambda r: 1 if r.reachable else 0),
                ("cores", "Cores the cluster offers the scheduler's apps",
                 lambda r: r.capacity.cores),
                ("running_apps", "Applications placed on the cluster, not ended",
                 lambda r: r.apps),
                ("queued_apps", "Queued applications with a copy in the cluster's queue",
                 lambda r: r.queued))
    for name, text, value in families:
        gauge = GaugeMetricFamily(f"sessionsched_clusters_{name}", text, labels=["cluster"])
        for r in rows:
            gauge.add_metric([r.name], value(r))
        yield gauge


def _resource_gauges(res: dict | None) -> Iterable[GaugeMetricFamily]:
    """Each custom resource's capacity and use (cluster, and per queue with its cap and
    guarantee): only for a cluster that has custom resources."""
    if not res:
        return
    cluster, queues = res["cluster"], res["queues"]
    capacity = GaugeMetricFamily(
        "sessionsched_resource_capacity",
        "A custom resource's amount on the cluster's alive workers (GPUs: any name Spark knows)",
        labels=["resource"])
    used = GaugeMetricFamily(
        "sessionsched_resource_used",
        "A custom resource's amount held by the scheduler's apps (executors, in-cluster drivers)",
        labels=["resource"])
    for name, row in sorted(cluster.items()):
        capacity.add_metric([name], row["capacity"])
        used.add_metric([name], row["used"])
    yield capacity
    yield used
    families = {key: GaugeMetricFamily(
        f"sessionsched_queue_resource_{key}", text, labels=["queue", "resource"])
        for key, text in (("used", "A custom resource's amount held by a queue's apps "
                                   "(parents sum their children)"),
                          ("max", "A queue's cap on a custom resource (none: no sample)"),
                          ("min", "A queue's guarantee of a custom resource (none: no sample)"))}
    for queue, row in sorted(queues.items()):
        for name, entry in sorted(row.items()):
            for key, family in families.items():
                if entry.get(key) is not None:
                    family.add_metric([queue, name], entry[key])
    yield from families.values()


class _UsageCollector(Collector):
    """``sessionsched_app_usage_total{queue,user,kind}`` and, per custom resource,
    ``sessionsched_app_resource_usage_total{queue,user,resource,kind}``: the usage meter's
    totals, read at a scrape (the meter only adds floats as it counts)."""

    def __init__(self, meter: UsageMeter):
        self._totals = meter.totals
        self._resources = meter.resource_totals

    def collect(self) -> Iterable[CounterMetricFamily]:
        usage = CounterMetricFamily(
            "sessionsched_app_usage",
            "What apps used, by queue, user and kind: core- or GiB-seconds as the kind names "
            "them (held_core_s, busy_core_s, idle_core_s, reclaimed_core_s, held_gib_s, "
            "driver_core_s, driver_gib_s; docs/operator/usage.md)",
            labels=["queue", "user", "kind"])
        for (queue, user), values in sorted(dict(self._totals()).items()):
            for kind, value in zip(COUNTED, list(values), strict=True):
                usage.add_metric([queue, user, kind], value)
        yield usage
        res = CounterMetricFamily(
            "sessionsched_app_resource_usage",
            "What apps used of each custom resource (GPUs: any name Spark knows), by queue, "
            "user, resource and kind, in resource-seconds (held_s, busy_s, idle_s, "
            "reclaimed_s, driver_s; docs/operator/usage.md)",
            labels=["queue", "user", "resource", "kind"])
        for (queue, user, name), values in sorted(dict(self._resources()).items()):
            for kind, value in zip(RES_COUNTED, list(values), strict=True):
                res.add_metric([queue, user, name, kind], value)
        yield res


CYCLE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)  # seconds


class ServiceMetrics:
    def __init__(self, snapshot: Callable[[], dict], usage: UsageMeter | None = None):
        self.registry = CollectorRegistry()
        self.submissions = Counter(
            "sessionsched_submissions", "Submissions accepted (committed)", ["kind"],
            registry=self.registry,
        )
        self.cycle_seconds = Histogram(
            "sessionsched_cycle_seconds", "Duration of a scheduling cycle",
            buckets=CYCLE_BUCKETS,
            registry=self.registry,
        )
        self.cycle_phase_seconds = Histogram(
            "sessionsched_cycle_phase_seconds",
            "Duration of each phase of a scheduling cycle (server.cycle's PHASES)", ["phase"],
            buckets=CYCLE_BUCKETS,
            registry=self.registry,
        )
        self.cycle_phase_cpu_seconds = Histogram(
            "sessionsched_cycle_phase_cpu_seconds",
            "CPU time of the cycle's thread in each phase of a scheduling cycle (beside "
            "sessionsched_cycle_phase_seconds: the rest of a phase's time it waited for the "
            "store, or for the interpreter held by requests)", ["phase"],
            buckets=CYCLE_BUCKETS,
            registry=self.registry,
        )
        self.launches = Counter(
            "sessionsched_launches", "Driver launches by outcome", ["outcome"],
            registry=self.registry,
        )
        self.registry.register(_BooksCollector(snapshot))
        if usage is not None:
            self.registry.register(_UsageCollector(usage))

    def render(self) -> bytes:
        return generate_latest(self.registry)


def count_states(apps: Iterable[tuple[str, AppState]]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for queue, state in apps:
        key = (queue, state.value)
        out[key] = out.get(key, 0) + 1
    return out


def snapshot(view: ReadView, workers: Iterable[Worker] | None = None) -> dict:
    """What the books collector reads at a scrape, from the service's read view and the
    workers at the backend's last report."""
    usage = view.engine.usage
    return {
        "apps": count_states(view.states()),
        "pending": {q.name: len(view.engine.pending.get(q.name, ()))
                    for q in view.engine.root.leaves()},
        "executor_cores": {name: u.executor_cores for name, u in usage.items()},
        "reachable": bool(view.health.reachable),
        "waiting": waiting_by_code(view),
        "short": short_by_code(view, workers),
        "gangs": gang_cores(view),
        "host": [(kind, r.mem_mib) for kind, r in (("room", view.engine.host_room),
                                                   ("used", view.engine.host_used)) if r],
        "resources": resource_snapshot(view),
        "clusters": view.engine.cluster_rows,
    }


def short_by_code(view: ReadView, workers: Iterable[Worker] | None
                  ) -> dict[tuple[str, str, str], int]:
    """Running apps short of executors by (leaf queue, code, resource or ""):
    ``resource_view.executor_waits``. O(apps + workers)."""
    apps = view.engine.apps
    return dict(Tally((apps[a].queue, str(code), resource or "")
                      for a, (code, resource) in executor_waits(view, workers).items()))


def resource_snapshot(view: ReadView) -> dict | None:
    """The custom resources' rows for the gauges; None (and no cost) without any."""
    if not view.engine.capacity.custom:
        return None
    return {"cluster": cluster_resources(view, None), "queues": queue_resources(view)}


def gang_cores(view: ReadView) -> dict[str, tuple[int, int]]:
    """Per leaf queue, (cores reserved, cores needed) of its reserving gangs; every leaf, 0s
    where none reserves. O(queues + reserving gangs)."""
    out = {q.name: (0, 0) for q in view.engine.root.leaves()}
    for app_id, res in view.engine.reservations.items():
        facts = view.engine.apps.get(app_id)
        if facts is not None:
            held, need = out.get(facts.queue, (0, 0))
            out[facts.queue] = (held + res.held.cores, need + res.needed.cores)
    return out


def waiting_by_code(view: ReadView) -> dict[tuple[str, str], int]:
    """Waiting apps by (leaf queue, reason code): each queue's head has its queue's code, the
    apps held aside ``does_not_fit_now``, the others ``behind_app`` (``EngineView.wait_of``),
    every one ``cluster_unavailable`` while there is no cluster to start in; apps no cycle has
    seen yet ``next_cycle``. O(queues + held) plus the apps in memory (as ``states``)."""
    engine = view.engine
    down = view.health.reachable is not None and not view.health.ok
    held_in = Tally(engine.apps[a].queue for a in engine.held if a in engine.apps)
    out: Tally[tuple[str, str]] = Tally()
    for leaf, pend in engine.pending.items():
        if down:
            out[leaf, WaitCode.CLUSTER_UNAVAILABLE.value] += len(pend)
            continue
        out[leaf, WaitCode.DOES_NOT_FIT_NOW.value] += held_in[leaf]
        rest = len(pend) - held_in[leaf]
        if rest > 0:
            head = engine.waiting.get(leaf)
            out[leaf, (head.code if head else WaitCode.NEXT_CYCLE).value] += 1
            out[leaf, WaitCode.BEHIND_APP.value] += rest - 1
    for app_id, sub in view.submissions.snapshot().items():
        if app_id not in engine.apps and app_id not in view.final:
            out[sub.queue, WaitCode.NEXT_CYCLE.value] += 1
    return {key: n for key, n in out.items() if n > 0}
