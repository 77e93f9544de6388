"""Whose word counts for an app's executors: its agent's or the cluster's (no IO).

An app's driver agent reports its executors with idle/busy flags every heartbeat; the backend
reports the cluster's own view (master JSON) every cycle. While the agent is live (heard from
within three heartbeats) it speaks for the app — its view is the one the driver acts on. When
it goes silent, or there never was one (JVM apps, static apps, a driver still starting), the
cluster's view is the truth: a silent agent does not take executors off the books, the cluster
does. The backend reports a view only when it changes, so the view it reported while the agent
spoke is kept (``AgentState.cluster_view``) and handed to the engine when the agent falls
silent -- else an app whose agent died would keep its agent's last word until the cluster
changed again. A driver that exited has nothing to hand over (its executors died with it).

What an app is taken to want is the engine's rule (``engine.agent_terms``), not decided here: each
cluster view handed on says whether a live agent speaks for the app's demand (``seen_by``:
``Witness.CLUSTER`` beside a live agent that reported a demand, as an ``admission-only`` agent
does; ``Witness.CLUSTER_ALONE`` when none does -- no agent, none reporting yet, or a silent
one). A list reported as an agent's (``Witness.AGENT``: the memory backend's, which models
the agent) is handed on as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sessionsched.engine.events import DriverExited, Event, ExecutorsChanged, Reclaim, Witness
from sessionsched.model import Executor


@dataclass
class AgentState:
    """What the app's driver agent last said (docs/design/agent-protocol.md)."""

    seen_at: float
    control: str = "full"
    reason: str | None = None
    pid: int | None = None
    spark_version: str | None = None
    executors: tuple[tuple[str, bool], ...] | None = None  # (id, idle) as last reported
    demand: int | None = None
    profiles: tuple = ()  # (id, executor shape, demand) of each resource profile, as reported
    orders: list[Reclaim] = field(default_factory=list)  # reclaim orders not yet handed out
    # The cluster's latest view of the app while the agent spoke for it: the truth again once
    # the agent goes silent. None when already handed to the engine.
    cluster_view: tuple[Executor, ...] | None = None
    # Set when the agent watches (the change-driven protocol): it reports at least this often.
    keepalive_s: float = 0.0

    def live(self, now: float, heartbeat_s: float) -> bool:
        """Heard from within three heartbeats (two keep-alives for a change-driven agent): it
        speaks for the app's executors."""
        return now - self.seen_at <= max(3 * heartbeat_s, 2 * self.keepalive_s)


def reconcile(polled: Sequence[Event], agents: Mapping[str, AgentState], now: float,
              heartbeat_s: float) -> list[Event]:
    out: list[Event] = []
    for ev in polled:
        if isinstance(ev, DriverExited) and ev.app_id in agents:
            agents[ev.app_id].cluster_view = None  # its executors died with it: nothing to hand
        if not isinstance(ev, ExecutorsChanged) or ev.seen_by is Witness.AGENT:
            out.append(ev)
            continue
        agent = agents.get(ev.app_id)
        reports = agent is not None and agent.executors is not None
        if reports and agent.live(now, heartbeat_s):
            agent.cluster_view = ev.executors
            continue
        if agent is not None:
            agent.cluster_view = None
        speaks = agent is not None and agent.demand is not None and agent.live(now, heartbeat_s)
        out.append(replace(ev, seen_by=Witness.CLUSTER if speaks else Witness.CLUSTER_ALONE))
    for app_id, agent in agents.items():
        if agent.cluster_view is not None and not agent.live(now, heartbeat_s):
            out.append(ExecutorsChanged(app_id, agent.cluster_view, Witness.CLUSTER_ALONE))
            agent.cluster_view = None
    return out
