"""Several clusters behind one queue tree: one engine per cluster, one federation over them
(``federation``)."""

from .events import (  # noqa: F401
    ClusterReachable,
    LaunchUnavailable,
    OnCluster,
    Placed,
    Unplaced,
)
from .federation import LOST_TIMEOUT_S, ClusterSpec, Federation, eligible  # noqa: F401
from .order import PlacementRule  # noqa: F401
from .trees import tree_for  # noqa: F401
