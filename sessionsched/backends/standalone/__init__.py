"""The Spark standalone backend: drivers launched on the scheduler host or in the cluster,
observed through the master's and workers' JSON.

One part per driver kind, behind one ``poll(now)`` (``backend.StandaloneBackend``):

* ``client_mode``: a process on this host -- a client-mode driver (Python apps; any app not
  ``in_cluster``), or the cluster-mode ``spark-submit`` of a ``submit`` JVM app until it logs
  its driver id;
* ``cluster_mode``: a driver the master runs on a worker -- a Spark REST create's
  (``Launch.rest_request``), or that spark-submit's once its driver id is known;
* ``adopted``: an app this backend did not start (``manage``): its executors only.

Files in ``run_dir``: ``<app>.json`` (``driver_files``), ``<app>.exit``, ``<app>.log`` (unless
``Launch.log_path`` says otherwise).
"""

from ..spawn import RUNNER
from .backend import StandaloneBackend

__all__ = ["RUNNER", "StandaloneBackend"]
