"""``cluster.backend: kubernetes``: Spark drivers as pods (``backend.KubernetesBackend``)."""

from .backend import KubernetesBackend

__all__ = ["KubernetesBackend"]
