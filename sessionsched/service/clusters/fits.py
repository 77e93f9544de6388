"""What a submission meets behind several clusters, read from the merged view's cluster rows
(``engine.clusters.view.ClusterRow``: each cluster's engine's own view):

- ``never_fits_anywhere``: the submission's never-fits check, asked of each cluster it may use
  (its queue's clusters and those it asked for) on that cluster's workers and tree (its
  ``max_cores_per_cluster`` applied). It never fits only when it fits none of them; the line
  names each cluster and why. A cluster out of reach, or naming no worker, cannot be asked:
  the app queues until it can be told, as with one cluster.
- ``dry_run_place``: for ``submit --dry-run``, the first of those clusters, in the placement
  rule's order as the books stand (its queue's own rule, else the tree's), that has room free
  now for its driver (in the cluster) and first executors, counted in cores; and the
  clusters it may use. That is where an app that would start at once starts; one that would
  wait starts where the dry run's forward run over every cluster starts it, the apps queued
  ahead of it there counted (``sim.estimate.dry_run``).

Each cluster is asked with the app's driver where it runs there: on one that runs every
driver itself (Kubernetes) a client-mode driver is a pod, in the cluster's room.
"""

from __future__ import annotations

from dataclasses import replace

from sessionsched.engine.clusters.federation import eligible
from sessionsched.engine.clusters.order import own_rule
from sessionsched.engine.clusters.routing import run_by
from sessionsched.engine.clusters.view import ClusterRow
from sessionsched.engine.placement import never_fits
from sessionsched.engine.placement.never_fits import cores_to_start
from sessionsched.engine.view import EngineView
from sessionsched.model import AppSpec, Queue


def path_to(root: Queue, leaf: str) -> tuple[Queue, ...] | None:
    """The queues from ``root`` down to ``leaf``, or None. Walked here rather than read from
    ``QueueTree.of``, whose few kept indexes the cycle's engines reorder as they step: a
    submission is read on another thread."""
    if root.name == leaf:
        return (root,)
    for child in root.children:
        below = path_to(child, leaf)
        if below is not None:
            return (root, *below)
    return None


def may_use(engine: EngineView, spec: AppSpec) -> list[ClusterRow]:
    """The rows of the clusters ``spec`` may run on, in the listed order."""
    path = path_to(engine.root, spec.queue)
    if path is None:
        return []
    allowed = set(eligible(spec, path, [r.name for r in engine.cluster_rows]))
    return [r for r in engine.cluster_rows if r.name in allowed]


def _why_not(row: ClusterRow, spec: AppSpec) -> tuple[bool, str | None]:
    """(whether the cluster can be asked now, why ``spec`` never fits it: None when it fits),
    its driver where that cluster runs it (``run_by``: a pod on Kubernetes)."""
    spec = run_by(spec, row.drivers_in_cluster)
    view = row.view
    workers = view.workers if view is not None else None
    if not row.reachable or workers is None or not workers.sizes:
        return False, None
    path = path_to(view.root, spec.queue)
    return path is not None, None if path is None else never_fits(spec, path, workers)


def never_fits_anywhere(engine: EngineView, spec: AppSpec) -> str | None:
    """Why ``spec`` fits no cluster it may use (each named, with its reason), or None."""
    why: list[str] = []
    for row in may_use(engine, spec):
        asked, problem = _why_not(row, spec)
        if not asked or problem is None:
            return None
        why.append(f"{row.name}: {problem}")
    return "on no cluster it may use: " + "; ".join(why) if why else None


def _room_now(row: ClusterRow, spec: AppSpec) -> bool:
    spec = run_by(spec, row.drivers_in_cluster)
    view = row.view
    asked, problem = _why_not(row, spec)
    if view is None or not asked or problem is not None:
        return False
    path = path_to(view.root, spec.queue)
    use = view.usage.get(view.root.name)
    held = use.executor_cores + use.driver_cores if use is not None else 0
    return view.capacity.cores - held >= cores_to_start(spec, path[-1])


def dry_run_place(engine: EngineView, spec: AppSpec) -> tuple[str | None, tuple[str, ...]]:
    """(the cluster it would start on now, None: none has room now; the clusters it may use),
    in its queue's placement rule's order (``order.own_rule``), else the tree's."""
    rows = may_use(engine, spec)
    path = path_to(engine.root, spec.queue)
    rule = own_rule(path) if path is not None else None
    first = next((r.name for r in sorted(rows, key=lambda r: r.order if rule is None
                                         else dict(r.ranks)[rule.value])
                  if _room_now(r, spec)), None)
    return first, tuple(r.name for r in rows)


def with_clusters(engine: EngineView, spec: AppSpec, answer):
    """A dry run's answer (``estimating.DryRunAnswer``, ``cluster`` the forward run's) with,
    behind several clusters, where it would go: refused as a submission would be if it fits
    none it may use; else, for an app that would start at once, the first cluster with room
    for it now (``dry_run_place``), for one that would wait the forward run's; and the
    clusters it may use. With one cluster: ``answer`` as it is."""
    if not engine.cluster_rows:
        return answer
    never = never_fits_anywhere(engine, spec)
    if never is not None:
        return replace(answer, fits=False, problem=never)
    now, clusters = dry_run_place(engine, spec)
    cluster = now if answer.position is None and now is not None else answer.cluster
    return replace(answer, cluster=cluster, clusters=clusters)
