"""The server over several clusters (docs/operator/clusters.md): the engine for the config's
cluster registry (``engine``)."""

from .engine import (  # noqa: F401
    Engine,
    attempt_of,
    engine_for,
    may_move,
    recorded_clusters,
)
