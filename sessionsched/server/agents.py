"""The agent protocol's server side (docs/agent-protocol.md).

Register and heartbeat turn what the agent reports into engine events for the next cycle
(DriverStarted with the Spark application id, ExecutorsChanged, DemandChanged — only when they
changed) and answer from the engine's books: the app's target and grant, its reclaim orders
(each handed out once), and its state (a terminal state tells the agent to stop its app).
An agent that heartbeats without registering (the server restarted under it) is taken as
registered.
"""

from __future__ import annotations

import logging

from ..engine.events import DemandChanged, DriverStarted, Event, ExecutorsChanged
from ..model import Executor
from ..store import EventRecord, StoredApp
from .books import AgentState
from .reads import NotFound

log = logging.getLogger("sessionsched.service")


class AgentsMixin:
    """Mixed into ``Service``; uses its lock, books, engine, inbox and writer."""

    def agent_register(self, app_id: str, spark_app_id: str | None, control: str,
                       reason: str | None, pid: int | None, spark_version: str | None) -> dict:
        now = self.clock()
        with self.lock:
            app = self._agent_app(app_id)
            agent = self.agents.setdefault(app_id, AgentState(seen_at=now))
            agent.seen_at = now
            agent.control, agent.reason, agent.pid = control, reason, pid
            agent.spark_version = spark_version
            reply = self._agent_reply(app, agent)
        if spark_app_id:
            self._put(DriverStarted(app_id, spark_app_id))
        detail = f"agent registered: control {control}, pid {pid}, Spark {spark_version}"
        if control != "full":
            detail += f" ({reason or 'no reason given'})"
            log.warning("%s: agent has %s control: %s", app_id, control, reason)
        self.writer.submit(
            lambda s: self.store.add_events(s, [EventRecord(app_id, now, "agent", detail)]))
        return reply

    def agent_heartbeat(self, app_id: str, demand: int, executors: list[Executor],
                        control: str | None) -> dict:
        now = self.clock()
        events: list[Event] = []
        with self.lock:
            app = self._agent_app(app_id)
            agent = self.agents.setdefault(app_id, AgentState(seen_at=now))
            agent.seen_at = now
            if control:
                agent.control = control
            seen = tuple((e.executor_id, e.idle) for e in executors)
            # An admission-only agent cannot read its executors: the cluster's view stands.
            if agent.control == "full" and seen != agent.executors:
                agent.executors = seen
                events.append(ExecutorsChanged(app_id, tuple(executors)))
            if demand != agent.demand:
                agent.demand = demand
                events.append(DemandChanged(app_id, demand))
            reply = self._agent_reply(app, agent)
        for ev in events:
            self._put(ev)
        return reply

    def _agent_app(self, app_id: str) -> StoredApp:
        app = self.apps.get(app_id)
        if app is None:
            raise NotFound(f"no app {app_id!r}: the agent should stop reporting")
        return app

    def _agent_reply(self, app: StoredApp, agent: AgentState) -> dict:
        """The answer, handing out the pending reclaim orders (once)."""
        rec = self.engine.apps.get(app.id)
        orders, agent.orders = agent.orders, []
        return {
            "heartbeat_s": self.heartbeat_s,
            "target": rec.target if rec else 0,
            "grant": rec.grant if rec else 0,
            "state": app.state.value,
            "reclaim": [
                {"executor_ids": list(o.executor_ids), "mode": o.mode.value,
                 "deadline": o.deadline}
                for o in orders
            ],
        }
