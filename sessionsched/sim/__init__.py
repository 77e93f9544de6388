"""The simulator: a discrete-event Spark standalone cluster driving the real engine.

``load_workload(path)`` reads and validates a workload YAML; ``simulate(workload)`` runs it and
returns a ``SimResult`` (``to_json()`` is DESIGN.md's result format); ``plot`` draws it.
"""

from .result import SimResult
from .simulator import simulate
from .workload import Workload, load_workload

__all__ = ["SimResult", "Workload", "load_workload", "simulate"]
