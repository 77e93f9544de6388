"""The agent loop: a daemon thread in the driver that reports facts and applies decisions.

Every ``heartbeat_s`` (the server's answer sets it, default 1 s) it:
  1. reads the facts from Spark (demand, pending/running tasks, executors with idle state; the
     app's stages, ``stages.StageReader``, only for a report that goes out anyway);
  2. sends them (``register`` first, then ``heartbeat``) and reads the answer;
  3. applies the answer: the ``grant`` becomes the dynamic-allocation cap, each reclaim order is
     carried out once (``reclaim.ReclaimExecutor``), a terminal ``state`` stops the SparkContext;
  4. re-asserts the cap and runs due reclaim work (decommission deadlines, idle releases) --
     this step also runs while the server is unreachable.

Change-driven (when the server's answers carry ``keepalive_s``; docs/design/agent-protocol.md):
step 2 sends the facts only when they differ from the last ones sent (the demand, the executors,
their idle flags, a removal time to tell) or a keep-alive is due, and decisions come by the watch
(``watch.Watch``: one request held open until the scheduler changes what the app is told), which
wakes the loop. Its grant is the one the cap follows (one channel, in order); a report's answer
hands over reclaim orders and a terminal state. An older server's answers have no ``keepalive_s``:
the agent then heartbeats every ``heartbeat_s`` and never watches, as before.

A task's start or end is not left waiting for the next heartbeat: the loop reads the demand and the
running tasks alone every ``TICK_S`` (two py4j calls) and looks at once when either moved: a
changed demand is reported at once, a changed flag is timed to a tick (docs/operator/usage.md). On
the old protocol it then asks again ``FOLLOW_UP_S`` later -- the server decides in its next cycle,
after it answered the report, and the follow-up fetches that decision; a watching agent is told by
its watch as soon as the cycle decided (benchmarks/agent_latency.py).

It holds no policy: what it reports is read from Spark, what it does is what it was told.

Until the first answer the cap is 0: the scheduler has granted nothing yet, and an app that
asked for executors before being counted would overcommit the cluster. When the server cannot
be reached the agent keeps the last cap, logs one warning per outage (and one line when it is
back), and retries with exponential backoff up to ``max_backoff_s``. A ``404`` to a heartbeat
means the server lost the app (a restart without its state): the agent registers again. A
``404`` to the registration means the app is not the scheduler's: the agent restores the
user's own maxExecutors and stops, and the app runs on unmanaged.

Nothing here may break the user's program: every error is caught, logged (bounded) and
retried; the loop ends quietly when the SparkContext stops.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from . import protocol
from .profiles import ProfileCaps
from .protocol import Answer
from .reclaim import ReclaimExecutor
from .spark_control import SparkControl, SparkControlError, SparkFacts
from .stages import StageReader, stages_body
from .transport import JsonClient, Refused, Unreachable
from .watch import Watch

log = logging.getLogger("sessionsched.agent")

TICK_S = 0.25  # how often the demand and the running tasks are looked at between heartbeats
FOLLOW_UP_S = 0.3  # after reporting a changed demand: ask again for the decision this soon


class Agent:
    def __init__(
        self,
        control: SparkControl,
        client: JsonClient,
        app_id: str,
        *,
        spark_app_id: str | None = None,
        spark_version: str = "",
        heartbeat_s: float = 1.0,
        max_backoff_s: float = 15.0,
        stages: StageReader | None = None,
        on_terminal: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.control = control
        self.client = client
        self.app_id = app_id
        self.spark_app_id = spark_app_id
        self.spark_version = spark_version
        self.heartbeat_s = heartbeat_s
        self.max_backoff_s = max_backoff_s
        self.on_terminal = on_terminal
        self.clock = clock
        self.reclaim = ReclaimExecutor(control)
        self.stages = stages  # the app's stages, read for each report sent
        self.registered = False
        self.last_answer: Answer | None = None
        self.grant: int | None = None
        self.caps = ProfileCaps()  # the grant per resource profile, and the caps it sets
        self.sent = 0  # successful exchanges with the server
        # Loop iterations and their time (the agent's cost): wall (JVM and scheduler waits too), CPU
        self.cycles = 0
        self.busy_s = 0.0
        self.cpu_s = 0.0
        self._failures = 0  # consecutive failed exchanges (0 = connected)
        self._outage_since: float | None = None
        self._next_attempt = 0.0  # not before: backoff while the server is unreachable
        self._next_beat = 0.0  # the next heartbeat is due
        self._sent_demand: int | None = None
        self._sent: tuple | None = None  # the last facts reported (change-driven: sent again?)
        self._reported: set[str] = set()  # executors the last report listed
        self._gone: dict[str, float] = {}  # gone since then -> when they left (not yet sent)
        self._leaving: set[str] = set()  # killed, left out of the reports, still in the driver
        self._looked_at = 0.0  # the last full read of the facts
        self._quiet_at = 0.0  # the last check that found the demand and the tasks unchanged
        self._looked_pulse: tuple[int, int] | None = None  # (demand, running) at the last read
        self._changed_after: float | None = None  # this look's changes happened after this
        self._report_due = 0.0  # change-driven: the next keep-alive report
        self.watch: Watch | None = None  # the change-driven protocol's, once the server has it
        self.reports = 0  # reports sent (register and heartbeats)
        self._spark_errors = 0
        self._stop = threading.Event()
        self._woken = threading.Event()  # the watch brought an answer, or stop
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self.control.probe.full:
            self._set_cap(0)
        else:
            log.warning("sessionsched agent: %s: executor control unavailable (%s); reporting "
                        "control: admission-only. The app runs normally; the scheduler only "
                        "orders its driver.", self.app_id, self.control.probe.reason)
        self._thread = threading.Thread(target=self._run, name="sessionsched-agent", daemon=True)
        self._thread.start()

    def stop(self, release: bool = False, timeout_s: float = 10.0) -> None:
        """Stop reporting. ``release``: hand the user's own maxExecutors back to Spark."""
        self._stop.set()
        self._woken.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)
        if release:
            self._release()

    @property
    def failures(self) -> int:
        """Consecutive failed exchanges with the server (0 while connected)."""
        return self._failures

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.control.stopped():
                break
            started, cpu_started = time.perf_counter(), time.thread_time()
            try:
                self._cycle(self.clock())
            except Exception as e:  # the last line of defence for the user's app
                if self.control.stopped():
                    break
                self._spark_error(e)
            self.cycles += 1
            self.busy_s += time.perf_counter() - started
            self.cpu_s += time.thread_time() - cpu_started
            self._woken.wait(min(TICK_S, self.heartbeat_s))
            self._woken.clear()
        self._stop.set()  # the watch too
        log.info("sessionsched agent: %s stopped reporting", self.app_id)

    @property
    def change_driven(self) -> bool:
        """Reporting on change, told by the watch (not while watches keep failing)."""
        return self.watch is not None and not self.watch.failing

    def _cycle(self, now: float) -> None:
        watched = self.watch.take() if self.watch is not None else None
        if watched is not None:
            self._apply(watched)
            if self._stop.is_set():
                return
        early = now < self._next_beat  # not a heartbeat's look: the demand or the tasks moved
        if early and not self._moved(now):
            self._quiet_at = now  # as before: the executors' flags too
            return
        self._next_beat = now + self.heartbeat_s
        looked = self.clock()
        facts: SparkFacts | None = self._quietly(self.control.facts)
        pulse = None if facts is None else (facts.demand, facts.running_tasks)
        # What changed happened after the last look; after the last check that found the demand
        # and the tasks as they were, when those moved (a task's start or end).
        moved = early or pulse != self._looked_pulse
        self._changed_after = max(self._looked_at, self._quiet_at) if moved else self._looked_at
        self._looked_at, self._looked_pulse = looked, pulse
        if facts is not None and now >= self._next_attempt:
            beat = self.registered  # else this exchange registers, carrying no demand
            changed = facts.demand != self._sent_demand
            body = self._heartbeat_body(facts, looked)
            sent = (body["demand"], tuple((e["id"], e["idle"]) for e in body["executors"]),
                    body["control"], tuple(sorted(self._gone)),
                    tuple((p["id"], p["demand"]) for p in body.get("profiles", ())))
            quiet = (beat and self.change_driven and sent == self._sent
                     and now < self._report_due)
            if not quiet and self.stages is not None and (stages := self.stages.look(looked)):
                body["stages"] = stages_body(stages)  # read for a report that goes out only
            answer = None if quiet else self._exchange(body, now)
            if answer is not None:
                if not beat:
                    self._next_beat = now  # the first heartbeat right after registering
                else:
                    self._sent, self._report_due = sent, now + (answer.keepalive_s or 0.0)
                    self._reported = {e["id"] for e in body["executors"]}
                    self._gone = {}
                    if changed and not self.change_driven:
                        self._next_beat = now + FOLLOW_UP_S
                    self._sent_demand = facts.demand
                self._apply(answer, reported=True)
                if self._stop.is_set():
                    return
        if self.control.probe.full:
            if self.grant is not None:
                self._set_cap(self.grant)
            if facts is not None:
                self.reclaim.tick(facts.executors, self.clock())

    def _moved(self, now: float) -> bool:
        """Between heartbeats: did the demand (since reported) or the running tasks move?"""
        if self._sent_demand is None or now < self._next_attempt or not self.control.probe.full:
            return False
        try:
            pulse = self.control.pulse()
        except SparkControlError:
            return False  # the heartbeat's full read will report the trouble
        return pulse[0] != self._sent_demand or pulse != self._looked_pulse

    def _exchange(self, heartbeat: dict, now: float) -> Answer | None:
        try:
            if not self.registered:
                body = self.client.post(protocol.REGISTER_PATH, self._register_body())
                self.registered = True
                self._sent = None
                log.info("sessionsched agent: %s registered (control %s)", self.app_id,
                         self.control.probe.control)
            else:
                body = self.client.post(protocol.HEARTBEAT_PATH, heartbeat)
            self.reports += 1
            answer = Answer.from_json(body, self.heartbeat_s)
        except Refused as e:
            self._refused(e, now)
            return None
        except (Unreachable, ValueError, TypeError) as e:
            self._unreachable(str(e), now)
            return None
        self._connected(now)
        self.sent += 1
        return answer

    def _register_body(self) -> dict:
        p = self.control.probe
        return protocol.register_body(self.app_id, self.spark_app_id, self.spark_version,
                                      os.getpid(), p.control, p.reason)

    def _heartbeat_body(self, facts: SparkFacts, looked: float) -> dict:
        """What a heartbeat reports: the facts read at ``looked``, without the executors this
        agent killed (leaving); for each executor gone since the last report, when it left:
        its driver's removal time (Spark's own, from the status store), else this look. One
        this agent killed is reported removed once its driver removed it, with that time: it
        held its core, and ran its task, until its process died (docs/operator/usage.md)."""
        self.caps.seen(facts.profiles, looked)
        driver_lists = {e.executor_id for e in facts.executors}
        if self.reclaim.killed:
            facts = replace(facts, executors=tuple(
                e for e in facts.executors if e.executor_id not in self.reclaim.killed))
        listed = {e.executor_id for e in facts.executors}
        for eid in self._reported - listed - self._gone.keys() - self._leaving:
            if eid in driver_lists:  # killed by this agent: its driver removes it later
                self._leaving.add(eid)
            else:
                self._gone[eid] = self.control.removed_at(eid) or looked
        for eid in self._leaving - driver_lists:  # ...now: when it really left
            self._leaving.discard(eid)
            self._gone[eid] = self.control.removed_at(eid) or looked
        return protocol.heartbeat_body(self.app_id, facts, self.control.probe.control,
                                       observed_at=looked, removed=self._gone,
                                       changed_after=self._changed_after or None)

    def ended(self, at: float, timeout_s: float = 2.0) -> None:
        """The SparkContext was stopped at ``at`` (``attach`` wraps ``SparkContext.stop``): its
        executors went with it. The loop stops, and one last report says so -- no executors, looked
        at ``at`` -- so that the usage figures end with Spark's record of the app, not when the
        scheduler sees the driver's process gone (on a loaded machine seconds later, every executor
        counted meanwhile). Skipped while the server is unreachable, before the agent registered,
        or when the scheduler ended the app (its end is the scheduler's own); never raises."""
        self.stop(timeout_s=timeout_s)
        told_ended = self.last_answer is not None and self.last_answer.terminal
        if not self.registered or self._failures or not self.control.probe.full or told_ended:
            return
        body = protocol.heartbeat_body(self.app_id, SparkFacts(0, 0, 0, ()),
                                       self.control.probe.control, observed_at=at,
                                       removed=self._gone)
        try:
            self.client.post(protocol.HEARTBEAT_PATH, body, timeout_s=timeout_s)
            self.reports += 1
        except Exception as e:  # the app is ending: nothing more to do about it
            log.info("sessionsched agent: %s: the last report failed: %s", self.app_id, e)

    def _apply(self, answer: Answer, reported: bool = False) -> None:
        """``reported``: the answer to a report. Change-driven, the grant is the watch's to
        give (its answers come in order; a report's may be older than the watch's last)."""
        if reported and answer.keepalive_s is not None and self.watch is None:
            self.watch = Watch(self.client, self.app_id, answer.version, answer.keepalive_s,
                               self._woken, self._stop, self.max_backoff_s)
            self.watch.start()
            reported = False  # the first answer: its grant counts
        self.last_answer = answer
        self.heartbeat_s = answer.heartbeat_s
        if answer.terminal:
            log.warning("sessionsched agent: the scheduler reports %s as %s; stopping its "
                        "SparkContext", self.app_id, answer.state)
            self._stop.set()
            if self.on_terminal is not None:
                self.on_terminal(answer.state)
            return
        if self.control.probe.full:
            told = (answer.grant, answer.grants)
            if not (reported and self.change_driven) and told != (self.grant, self.caps.grants):
                log.info("sessionsched agent: %s grant %d (target %d, per profile %s)",
                         self.app_id, answer.grant, answer.target, dict(answer.grants))
                self.grant, self.caps.grants = told
            if self.grant is not None:  # before reclaim: a killed executor must not be replaced
                self._set_cap(self.grant)
            self.reclaim.accept(answer.reclaim)

    # --- server trouble -------------------------------------------------------------------

    def _unreachable(self, why: str, now: float) -> None:
        self._failures += 1
        backoff = min(self.heartbeat_s * 2 ** (self._failures - 1), self.max_backoff_s)
        self._next_attempt = now + backoff
        if self._outage_since is None:
            self._outage_since = now
            cap = self.grant if self.grant is not None else 0
            log.warning(
                "sessionsched agent: scheduler unreachable (%s); %s keeps its executor cap at %d "
                "and retries with backoff up to %gs",
                why, self.app_id, cap, self.max_backoff_s,
            )

    def _connected(self, now: float) -> None:
        if self._outage_since is not None:
            down_s = now - self._outage_since
            log.warning("sessionsched agent: scheduler reachable again after %.1fs", down_s)
        self._failures = 0
        self._outage_since = None
        self._next_attempt = 0.0

    def _refused(self, e: Refused, now: float) -> None:
        if e.status == 404 and self.registered:
            log.warning("sessionsched agent: the scheduler lost %s (%s); registering again",
                        self.app_id, e.detail)
            self.registered = False
            return
        if e.status == 404:
            log.warning(
                "sessionsched agent: the scheduler does not know %s (%s); the app runs unmanaged",
                self.app_id, e.detail,
            )
            self._stop.set()
            self._release()
            return
        # 400/401/403...: a configuration problem (token, version). Keep the cap, retry slowly.
        self._unreachable(f"refused: {e}", now)

    # --- Spark trouble --------------------------------------------------------------------

    def _set_cap(self, cap: int) -> None:
        caps = self.caps.choose(cap, self.clock())
        if caps is not None:  # profiles besides the default: a cap each
            return self._quietly(self.control.set_caps, caps)
        self._quietly(self.control.set_cap, cap)

    def _release(self) -> None:
        self._quietly(self.control.release_cap)

    def _quietly(self, call: Callable, *args):
        """``call(*args)``, or None if Spark failed (logged, bounded; not once it stopped)."""
        try:
            return call(*args)
        except SparkControlError as e:
            if not self.control.stopped():
                self._spark_error(e)
            return None

    def _spark_error(self, e: Exception) -> None:
        self._spark_errors += 1
        if self._spark_errors <= 3 or self._spark_errors % 60 == 0:
            log.warning("sessionsched agent: Spark call failed (%d so far): %s",
                        self._spark_errors, e)
