"""Custom resources (GPUs, any name Spark knows) as the displays show them: the cluster's
capacity of each, what is free and what the scheduler's apps hold, per queue (parents summing
their children) and per app, read from the published view (docs/operator/resources.md).

Worked out only for a cluster that has custom resources: one without any costs nothing here
and every display shows what it did. Per queue it goes over the apps holding executors (the
engine's queue totals count cores and memory, not each resource): O(apps) per read, on a
cluster with GPUs only.

A queue's caps and guarantees per resource (``max_resources`` / ``min_resources`` beside
``max_cores``) are read by ``queue_caps``: queues without such settings have none, and the
displays show "-" until a queue sets them.

Why a running app holds fewer executors than it wants (``model.executor_notes``) is drawn
from the same view and the watch's workers: ``executor_figures`` for one app,
``executor_waits`` for every one (the lists of apps, ``/metrics``), on any cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sessionsched.engine.view import AppFacts
from sessionsched.model import AppSpec, AppState, Queue, Worker
from sessionsched.model.executor_notes import (
    Executors,
    NoteCode,
    WorkersSeen,
    executor_wait,
    wants_more,
    workers_seen,
)

from .reads import ReadView


def app_held(spec: AppSpec, facts: AppFacts | None) -> dict[str, int]:
    """What the app holds in the cluster now: its executors' amounts, and its in-cluster
    driver's while it runs (a client-mode driver runs outside the cluster's workers)."""
    out: dict[str, int] = {}
    if facts is None:
        return out
    if facts.executors:
        for name, amount in spec.executor.custom:
            out[name] = amount * facts.executors
    if spec.driver_in_cluster and spec.driver.custom and facts.state.admitted:
        for name, amount in spec.driver.custom:
            out[name] = out.get(name, 0) + amount
    return out


def queue_caps(queue: Queue) -> dict[str, dict[str, int | None]]:
    """Per resource the queue caps or guarantees: {"max": N | None, "min": N | None}. Read from
    the queue's ``max_resources`` / ``min_resources`` (name -> amount) where queues have them;
    none otherwise."""
    caps: dict[str, dict[str, int | None]] = {}
    for key, attr in (("max", "max_resources"), ("min", "min_resources")):
        for name, amount in _amounts(getattr(queue, attr, None)):
            caps.setdefault(name, {"max": None, "min": None})[key] = amount
    return caps


def _amounts(value) -> Iterable[tuple[str, int]]:
    if not value:
        return ()
    return value.items() if isinstance(value, Mapping) else value


def queue_held(view: ReadView) -> dict[str, dict[str, int]]:
    """Per queue (parents too), name -> amount its apps hold now."""
    out: dict[str, dict[str, int]] = {q.name: {} for q in view.engine.root.walk()}
    subs = view.submissions
    for facts in view.engine.apps.values():
        if not facts.executors and facts.state is AppState.ACCEPTED:
            continue
        sub = subs.get(facts.app_id)
        if sub is None or not (sub.spec.executor.custom or sub.spec.driver.custom):
            continue
        held = app_held(sub.spec, facts)
        if not held:
            continue
        parts = facts.queue.split(".")
        for n in range(1, len(parts) + 1):
            row = out.get(".".join(parts[:n]))
            if row is not None:
                for name, amount in held.items():
                    row[name] = row.get(name, 0) + amount
    return out


def queue_resources(view: ReadView) -> dict[str, dict[str, dict[str, int | None]]] | None:
    """Per queue, each of the cluster's custom resources: ``used`` (held by its apps), ``max``
    and ``min`` (its cap and guarantee, None: none); None for a cluster without any."""
    names = [name for name, _ in view.engine.capacity.custom]
    if not names:
        return None
    held = queue_held(view)
    out = {}
    for q in view.engine.root.walk():
        caps, used = queue_caps(q), held.get(q.name, {})
        out[q.name] = {name: {"used": used.get(name, 0),
                              **caps.get(name, {"max": None, "min": None})}
                       for name in names}
    return out


def cluster_resources(view: ReadView, workers: Iterable[Worker] | None
                      ) -> dict[str, dict[str, int | None]] | None:
    """Each custom resource of the cluster: ``capacity`` (the alive workers' sum, as the engine
    takes it), ``used`` (held by the scheduler's apps) and ``free`` (the workers' free amounts
    at the backend's last report; None when it names no worker); None for a cluster without
    any."""
    capacity = view.engine.capacity.custom
    if not capacity:
        return None
    workers = list(workers or ())
    free: dict[str, int] = {}
    for w in workers:
        for name, amount in w.free.custom:
            free[name] = free.get(name, 0) + amount
    used = queue_held(view).get(view.engine.root.name, {})
    return {name: {"capacity": amount, "used": used.get(name, 0),
                   "free": free.get(name, 0) if workers else None}
            for name, amount in capacity}


def executor_figures(view: ReadView, facts: AppFacts, policies: Mapping[str, str] | None = None
                     ) -> Executors:
    """An admitted app's executor figures (``model.executor_notes.Executors``); ``policies``:
    each leaf's policy, where the caller reads many apps (else read from the tree)."""
    if policies is None:
        policies = leaf_policies(view.engine.root)
    sub = view.submissions.get(facts.app_id)
    use = view.engine.usage.get(facts.queue)
    return Executors(facts.executors, facts.grant, facts.target, facts.demand, facts.queue,
                     policies.get(facts.queue),
                     0 if use is None else use.starting + use.running,
                     () if sub is None else sub.spec.executor.custom)


def leaf_policies(root: Queue) -> dict[str, str]:
    return {leaf.name: leaf.policy.value for leaf in root.leaves()}


def seen_workers(view: ReadView, workers: Iterable[Worker] | None) -> WorkersSeen | None:
    """The watch's workers as the notes read them; None behind several clusters, where they
    are every cluster's (``model.executor_notes``)."""
    if view.engine.cluster_rows:
        return None
    workers = list(workers or ())
    return workers_seen(workers, cluster_resources(view, workers))


def executor_waits(view: ReadView, workers: Iterable[Worker] | None
                   ) -> dict[str, tuple[NoteCode, str | None]]:
    """Each running app's one code (``model.executor_notes.executor_wait``) and the resource
    that is short, by app id; apps that hold what they want are left out. O(apps + workers)."""
    seen = seen_workers(view, workers)
    policies = leaf_policies(view.engine.root)
    out = {}
    for app_id, facts in view.engine.apps.items():
        if not facts.state.admitted:
            continue
        if not wants_more(facts.executors, facts.grant, facts.demand):
            continue  # before its figures are built: most apps of a busy cluster
        wait = executor_wait(executor_figures(view, facts, policies), seen)
        if wait is not None:
            out[app_id] = wait
    return out
