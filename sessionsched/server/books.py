"""The service's in-memory state besides the engine: who the agents are, what they were told,
whether the cluster answers. Plain data; the service guards it with its lock."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.events import Reclaim
from ..model import Executor


@dataclass
class AgentState:
    """What the app's driver agent last said (docs/agent-protocol.md)."""

    seen_at: float
    control: str = "full"
    reason: str | None = None
    pid: int | None = None
    spark_version: str | None = None
    executors: tuple[tuple[str, bool], ...] | None = None  # (id, idle) as last reported
    demand: int | None = None
    orders: list[Reclaim] = field(default_factory=list)  # reclaim orders not yet handed out
    # The cluster's latest view of the app while the agent spoke for it (reconcile): the
    # truth again once the agent goes silent. None when already handed to the engine.
    cluster_view: tuple[Executor, ...] | None = None

    def live(self, now: float, heartbeat_s: float) -> bool:
        """Heard from within three heartbeats: it speaks for the app's executors."""
        return now - self.seen_at <= 3 * heartbeat_s


@dataclass
class ClusterHealth:
    """Whether the backend reached the cluster at its last attempt."""

    reachable: bool | None = None  # None: not tried yet
    message: str = ""
    since: float = 0.0

    def describe(self) -> str:
        if self.reachable is None:
            return "cluster not contacted yet"
        if self.reachable:
            return "cluster reachable"
        return f"cluster unreachable ({self.message}): submissions are queued until it is back"
