"""The simulator: the real engine on the memory cluster (``backends/memory``, a discrete-event
Spark standalone cluster) with a virtual clock, its decisions carried out as the server's.

``load_workload(path)`` reads and validates a workload YAML; ``simulate(workload)`` runs it and
returns a ``SimResult`` (``to_json()``: what ``sessionsched simulate --json`` writes);
``plot`` draws it.
"""

from .result import SimResult
from .simulator import simulate
from .workload import Workload, load_workload

__all__ = ["SimResult", "Workload", "load_workload", "simulate"]
