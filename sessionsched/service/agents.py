"""The agent desk: the agent protocol's server side (docs/design/agent-protocol.md).

Register and heartbeat (a *report*) turn what an agent reports into engine events for the next
cycle (DriverStarted with the Spark application id, ExecutorsChanged, DemandChanged - only when
they changed) and answer at once, never waiting for a cycle: the app's state from the published
view, its target and grant as the last ``SetTarget`` decision gave them, and its reclaim orders
(``Reclaim`` decisions, each handed out once). A terminal state tells the agent to stop its
app. An agent that heartbeats without registering (the server restarted under it) is taken as
registered. The desk has its own lock: a heartbeat never waits for the scheduling cycle.

Every answer carries the app's ``version`` (bumped when the cycle changes what the agent is
told: its target or grant, a reclaim order, its state) and ``keepalive_s``. An agent that
speaks the change-driven protocol reports only when its facts change (and every
``keepalive_s``) and learns its decisions by a *watch*: ``watch`` answers at once when the
version moved past the one the agent holds, else hands back a future that ``take`` resolves
when it moves (the door waits on it, up to ``keepalive_s``). Such an agent is live for two
keep-alives after it was last heard from; one on the old protocol (1 Hz heartbeats, no watch)
for three heartbeats, as before.

Behind several clusters an agent says the attempt its driver runs as (its launch's
``SESSIONSCHED_ATTEMPT``): one of an older attempt than its app's (a driver started on a
cluster the app has since left) is answered with an ended state, so it stops its driver, and
nothing it reports is taken (``attempt_of``, set by the cycle).

``reconcile`` (whose word counts for an app's executors: its agent's or the cluster's) runs in
the cycle on the desk's records.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future

from sessionsched.engine.events import (
    Decision,
    DemandChanged,
    DriverStarted,
    Event,
    ExecutorsChanged,
    MarkState,
    Reclaim,
    SetTarget,
    Witness,
)
from sessionsched.model import AppState, Executor
from sessionsched.model.profiles import Profiles
from sessionsched.model.stages import Progress, Stages
from sessionsched.model.text import one_line
from sessionsched.service.estimating.progress import ProgressBook
from sessionsched.service.reads import AppRead, NotFound, ReadModel
from sessionsched.service.reconcile import AgentState, reconcile

log = logging.getLogger("sessionsched.service")

WATCH_JITTER = 0.2  # a watch with nothing to tell is held 80-100 % of its time
# What an agent of an older attempt is told its app is: ended, so it stops its driver.
STALE_STATE = AppState.KILLED.value


class AgentDesk:
    def __init__(self, reads: ReadModel, put: Callable[[Event], None],
                 note: Callable[[str, float, str], None], heartbeat_s: float,
                 clock: Callable[[], float], keepalive_s: float = 10.0,
                 progress: ProgressBook | None = None):
        """``put``: an event for the next cycle; ``note(app_id, at, detail)``: an audit row;
        ``progress``: where the apps' stages go (the estimated starts'; never an event)."""
        self._reads = reads
        self._put = put
        self._note = note
        self.heartbeat_s = heartbeat_s
        self.keepalive_s = keepalive_s
        self._clock = clock
        self._progress = progress
        self._lock = threading.Lock()
        self._agents: dict[str, AgentState] = {}
        # app -> (target, grant, grant per resource profile), from SetTarget
        self._targets: dict[str, tuple[int, int, tuple]] = {}
        self._versions: dict[str, int] = {}  # app -> how many times its answer changed
        self._watches: dict[str, Future] = {}  # app -> its agent's waiting watch (one at most)
        self._closed = False  # the server is stopping: no watch is held any more
        self._stale_told: dict[str, set[int]] = {}  # app -> older attempts told to stop
        # The attempt each app's driver runs as (several clusters; None: it has none): an
        # agent that reports an older one is told to stop, and not listened to.
        self.attempt_of: Callable[[str], int | None] = lambda _app_id: None

    # --- the protocol ------------------------------------------------------------------------

    def register(self, app_id: str, spark_app_id: str | None, control: str,
                 reason: str | None, pid: int | None, spark_version: str | None,
                 attempt: int | None = None) -> dict:
        now = self._clock()
        app = self._app(app_id)
        if (stale := self._stale(app, attempt, now)) is not None:
            return stale
        with self._lock:
            agent = self._agents.setdefault(app_id, AgentState(seen_at=now))
            agent.seen_at = now
            agent.control, agent.reason, agent.pid = control, reason, pid
            agent.spark_version = spark_version
            reply = self._reply(app, agent)
        if spark_app_id:
            self._put(DriverStarted(app_id, spark_app_id))
        detail = f"agent registered: control {control}, pid {pid}, Spark {spark_version}"
        if control != "full":
            detail += f" ({reason or 'no reason given'})"
        # the agent's words, free text (an exception's, with its newlines): one line each, so
        # that none reads as a line of the audit trail or the log of its own
        detail = one_line(detail)
        if control != "full":
            log.warning("%s: agent has %s control: %s", app_id, one_line(control),
                        one_line(reason or ""))
        self._note(app_id, now, detail)
        return reply

    def heartbeat(self, app_id: str, demand: int, executors: list[Executor],
                  control: str | None, observed_at: float | None = None,
                  removed: dict[str, float] | None = None,
                  changed_after: float | None = None, profiles: Profiles = (),
                  attempt: int | None = None, stages: Stages | None = None) -> dict:
        """A report. ``observed_at`` (when the agent looked), ``removed`` (when executors gone
        since its last report left) and ``changed_after`` (its look before) ride on the list's
        event for the usage meter, which bounds them by the scheduler's clock. ``stages``
        (completed, running) go to the progress book, as of now by the scheduler's clock."""
        now = self._clock()
        app = self._app(app_id)
        if (stale := self._stale(app, attempt, now)) is not None:
            return stale
        events: list[Event] = []
        with self._lock:
            agent = self._agents.setdefault(app_id, AgentState(seen_at=now))
            agent.seen_at = now
            if control:
                agent.control = control
            seen = tuple((e.executor_id, e.idle) for e in executors)
            # An admission-only agent cannot read its executors: the cluster's view stands.
            # (A report of the same executors may still say when one left: its own event.)
            if agent.control == "full" and (seen != agent.executors or removed):
                # Kept as seen only for a launched app: the engine refuses executors of one
                # still queued, and the same report after its launch must then count.
                if app.state is not AppState.ACCEPTED:
                    agent.executors = seen
                events.append(ExecutorsChanged(app_id, tuple(executors), Witness.AGENT,
                                               observed_at, tuple((removed or {}).items()),
                                               changed_after))
            shapes = tuple((p.profile_id, p.executor, p.demand) for p in profiles)
            if demand != agent.demand or shapes != agent.profiles:  # not on each task's end
                agent.demand, agent.profiles = demand, shapes
                events.append(DemandChanged(app_id, demand, profiles))
            reply = self._reply(app, agent)
        for ev in events:
            self._put(ev)
        if stages is not None and self._progress is not None:
            self._progress.report(app_id, Progress(*stages, now))
        return reply

    def watch(self, app_id: str, version: int, attempt: int | None = None) -> dict | Future:
        """A change-driven agent asks what it is told, holding ``version``: the answer now when
        the version moved on (or the app ended), else a future resolved when it moves -- the
        caller waits on it (up to ``hold_s``), ``unwatch``es it and asks for the ``answer``.
        A newer watch of the same app releases the older one (it answers with what it was told
        so far)."""
        now = self._clock()
        app = self._app(app_id)
        if (stale := self._stale(app, attempt, now)) is not None:
            return stale
        with self._lock:
            agent = self._agents.setdefault(app_id, AgentState(seen_at=now))
            agent.seen_at = now
            agent.keepalive_s = self.keepalive_s
            if (self._closed or self._versions.get(app_id, 0) != version or agent.orders
                    or app.state.terminal):
                return self._reply(app, agent)
            waiting: Future = Future()
            older, self._watches[app_id] = self._watches.get(app_id), waiting
        if older is not None:
            older.set_result(None)
        return waiting

    def close(self) -> None:
        """The server is stopping: every held watch answers now (with what its agent was told
        so far), and so does every watch after -- a graceful stop waits for open requests, and
        would wait up to ``keepalive_s`` for each held one."""
        with self._lock:
            self._closed = True
            waiting, self._watches = list(self._watches.values()), {}
        for w in waiting:
            w.set_result(None)

    def hold_s(self, wait_s: float | None) -> float:
        """How long a watch with nothing to tell is held: what the agent asked (at most the
        keep-alive), less up to ``WATCH_JITTER`` of it at random -- watches that began together
        (agents started at once, or all back after a restart) come back spread out, not as a
        herd."""
        limit = self.keepalive_s if wait_s is None else min(max(wait_s, 0.0), self.keepalive_s)
        return limit * random.uniform(1.0 - WATCH_JITTER, 1.0)

    def unwatch(self, app_id: str, waiting: Future) -> None:
        """A watch done waiting (woken, or its time out)."""
        with self._lock:
            if self._watches.get(app_id) is waiting:
                del self._watches[app_id]

    def answer(self, app_id: str) -> dict:
        """What the app's agent is told now (a watch that waited: its answer)."""
        app = self._app(app_id)
        with self._lock:
            agent = self._agents.setdefault(app_id, AgentState(seen_at=self._clock()))
            return self._reply(app, agent)

    def _app(self, app_id: str) -> AppRead:
        app = self._reads.view.app(app_id)
        if app is None:
            raise NotFound(f"no app {app_id!r}: the agent should stop reporting")
        return app

    def _stale(self, app: AppRead, attempt: int | None, now: float) -> dict | None:
        """The answer to an agent of an older attempt than its app's: stop (a terminal state,
        ``STALE_STATE``), nothing of its report taken, an audit row the first time; None for
        the app's own agent, or one that says no attempt (one cluster, an older agent)."""
        current = self.attempt_of(app.id) if attempt is not None else None
        if current is None or attempt >= current:
            return None
        with self._lock:
            told = self._stale_told.setdefault(app.id, set())
            first = attempt not in told
            told.add(attempt)
        if first:
            self._note(app.id, now, f"agent of attempt {attempt} told to stop its driver: "
                                    f"the app runs as attempt {current}")
        return {"heartbeat_s": self.heartbeat_s, "keepalive_s": self.keepalive_s,
                "version": 0, "target": 0, "grant": 0, "state": STALE_STATE, "reclaim": []}

    def _reply(self, app: AppRead, agent: AgentState) -> dict:
        """The answer, handing out the pending reclaim orders (once). Lock held."""
        target, grant, grants = self._targets.get(app.id, (0, 0, ()))
        orders, agent.orders = agent.orders, []
        reply = {
            "heartbeat_s": self.heartbeat_s,
            "keepalive_s": self.keepalive_s,
            "version": self._versions.get(app.id, 0),
            "target": target,
            "grant": grant,
            "state": app.state.value,
            "reclaim": [
                {"executor_ids": list(o.executor_ids), "mode": o.mode.value,
                 "deadline": o.deadline}
                for o in orders
            ],
        }
        if grants:  # the app reported a resource profile besides the default
            reply["grants"] = {str(rp): n for rp, n in grants}
        return reply

    # --- the cycle's side ----------------------------------------------------------------------

    def reconcile(self, polled: Sequence[Event], now: float) -> list[Event]:
        with self._lock:
            return reconcile(polled, self._agents, now, self.heartbeat_s)

    def take(self, decisions: Iterable[Decision]) -> None:
        """The committed cycle's targets and reclaim orders, for the agents to pick up; an
        ended app's orders are void. Each app whose answer changed gets a new version, and its
        waiting watch is woken."""
        changed: set[str] = set()
        with self._lock:
            for d in decisions:
                if isinstance(d, SetTarget):
                    told = (d.target, d.grant, d.grants)
                    if self._targets.get(d.app_id) != told:
                        changed.add(d.app_id)
                    self._targets[d.app_id] = told
                elif isinstance(d, Reclaim):
                    self._agents.setdefault(d.app_id, AgentState(seen_at=0.0)).orders.append(d)
                    changed.add(d.app_id)
                elif isinstance(d, MarkState):
                    changed.add(d.app_id)
                    if d.state.terminal:
                        self._targets.pop(d.app_id, None)
                        agent = self._agents.get(d.app_id)
                        if agent is not None:
                            agent.orders = []
            woken = []
            for app_id in changed:
                self._versions[app_id] = self._versions.get(app_id, 0) + 1
                if (waiting := self._watches.pop(app_id, None)) is not None:
                    woken.append(waiting)
        for waiting in woken:  # outside the lock: a future's callbacks run here
            waiting.set_result(None)

    def last_seen(self, app_id: str) -> float:
        with self._lock:
            agent = self._agents.get(app_id)
            return agent.seen_at if agent is not None else 0.0

    def forget(self, app_ids: Iterable[str]) -> None:
        with self._lock:
            for app_id in app_ids:
                self._agents.pop(app_id, None)
                self._stale_told.pop(app_id, None)
                self._targets.pop(app_id, None)
                self._versions.pop(app_id, None)
                if (waiting := self._watches.pop(app_id, None)) is not None:
                    waiting.set_result(None)
