"""Each cluster's queue tree: the federation's, with the caps set for that cluster.

A queue's ``max_cores_per_cluster`` (``Queue.cluster_max_cores``) caps its executor cores on
one cluster. Limits hold per cluster (each engine sees only the apps placed on its cluster:
``federation``), so a cap on one cluster is that cluster's engine's ``max_cores``: the lower
of it and the queue's own. A tree without such caps is shared by every engine as it is.
"""

from __future__ import annotations

from dataclasses import replace

from ...model import Queue


def tree_for(root: Queue, cluster: str) -> Queue:
    """``root`` as cluster ``cluster``'s engine sees it."""
    if not any(q.cluster_max_cores for q in root.walk()):
        return root
    return _capped(root, cluster)


def _capped(q: Queue, cluster: str) -> Queue:
    children = tuple(_capped(c, cluster) for c in q.children)
    cap = dict(q.cluster_max_cores).get(cluster)
    max_cores = q.max_cores if cap is None else min(cap, q.max_cores or cap)
    return replace(q, children=children, max_cores=max_cores)
