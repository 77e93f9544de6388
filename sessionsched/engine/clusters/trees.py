"""Each cluster's queue tree: the federation's, with the caps set for that cluster.

A queue's ``max_cores_per_cluster`` (``Queue.cluster_max_cores``) caps its executor cores on
one cluster: that cluster's engine's ``max_cores`` is the lower of it and the queue's own
(which also holds over every cluster together: ``cores``); ``max_resources_per_cluster``
(``Queue.cluster_max_resources``) likewise its custom resources (``resources``). A tree
without such caps is shared by every engine as it is.
"""

from __future__ import annotations

from ...model import Queue
from ..tree import with_caps


def tree_for(root: Queue, cluster: str) -> Queue:
    """``root`` as cluster ``cluster``'s engine sees it."""
    return with_caps(root, {q.name: cap for q in root.walk()
                            if (cap := dict(q.cluster_max_cores).get(cluster)) is not None},
                     {q.name: caps for q in root.walk()
                      if (caps := dict(q.cluster_max_resources).get(cluster)) is not None})
