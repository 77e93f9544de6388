"""The server over several clusters (docs/operator/clusters.md): the engine for the config's
cluster registry (``engine``)."""

from .engine import Engine, attempt_of, engine_for, recorded_clusters  # noqa: F401
