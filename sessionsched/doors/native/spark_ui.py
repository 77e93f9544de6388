"""Where the Spark web UI of the scheduler's cluster is, for the dashboard's links
(``spark_ui`` in ``GET /api/v1/cluster``): the standalone master's ``cluster.master_ui``, and
with the ``local`` backend the master it started itself (the same kind of master, its address
read from its own ``cluster.json`` when the backend opened it).

Kubernetes has none to link to: each driver serves its own UI inside the cluster (its pod, port
4040), which a browser outside reaches only through ``kubectl port-forward``; the memory
backend runs no Spark at all (docs/user/watching.md).
"""

from __future__ import annotations


def with_spark_ui(ops, row: dict) -> dict:
    """``row`` (``cluster_row``) with the local backend's master UI when it has none."""
    if row.get("spark_ui") is None and ops.service.config.cluster.backend == "local":
        client = getattr(ops.service.backend, "client", None)  # the standalone backend's
        row["spark_ui"] = getattr(client, "master_ui", None)
    return row
