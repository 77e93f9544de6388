"""Active/standby: which of the schedulers sharing one PostgreSQL store leads, and what the
others answer meanwhile.

Roles (``Role``): ``single`` — a SQLite store, the only scheduler; ``leader`` — holds the
store's leadership lock (``store.Leadership``), cycles and takes every write; ``standby`` —
waits for the lock; ``taking over`` — won it and is putting the books back (a fraction of a
second to a few seconds), answering like a standby that knows no leader.

Start-up: ``claim()`` (when the app is made, so a refusal is one line before anything
listens) tries the lock once. Won: the scheduler will lead. Lost: with ``server.standby`` it
will wait as a standby; without, it refuses to start, naming the leader — two schedulers on one
store by mistake must not look like a working pair. ``start()`` (the app's lifespan) then
leads, or starts the standby's thread, which tries the lock every ``CHECK_S`` and meanwhile
learns who leads (``Leadership.leader``). To lead: announce this scheduler's URL in the store,
fence the writer (``Leadership.fence``: a scheduler that lost the lock cannot commit), then
``Service.start`` — the restart path (``restore``): queued apps back in order, running
drivers adopted, a launch that was decided but never recorded failed rather than made twice —
and serve from its first cycle's view on (the adopted apps are in the engine from then).

A leader that loses the lock (its connection to PostgreSQL was cut, or the server restarted)
stops writing at once (the fence), keeps answering reads from its last view and tries to get
the lock back every ``CHECK_S`` and at each write (``_regain``). If it gets it and the
``leader`` row still holds its own announcement, nobody led in between: its books are the
store's, and it leads on, as a single scheduler rides out a store outage without a restart.
If another scheduler announced itself meanwhile, its books are behind the store: it stops its
process, as Kubernetes' controller-manager does when it loses its lease, and a supervisor
(systemd, Kubernetes) starting it again makes it a standby of whoever leads.

What a standby answers instead of every route but the health check: ``doors/standby/front.Standby``
(the server's front, ``server/front.py``, sends the requests there).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from enum import Enum
from typing import TYPE_CHECKING

from prometheus_client import Gauge

from sessionsched.config import STANDBY_NEEDS_POSTGRESQL, ServerConfig
from sessionsched.store.leadership import Leadership, NotLeader

if TYPE_CHECKING:
    from sessionsched.service.service import Service

log = logging.getLogger("sessionsched.leader")

CHECK_S = 1.0  # how often a standby tries the lock, and a leader checks it still holds it
LOCK_NAME = "sessionsched"


class Role(str, Enum):
    SINGLE = "single"
    LEADER = "leader"
    STANDBY = "standby"
    TAKING_OVER = "taking over"

    @property
    def serves(self) -> bool:
        """Answers requests itself (the others send them to the leader)."""
        return self in (Role.SINGLE, Role.LEADER)


_SERVING = frozenset(r.value for r in Role if r.serves)


class ActiveStandby:
    """The role of one scheduler (``service``) among those sharing its store."""

    def __init__(self, service: Service, config: ServerConfig, check_s: float = CHECK_S):
        self.service = service
        self.standby_allowed = config.server.standby
        self.check_s = check_s
        self.leadership: Leadership | None = None
        if config.on_postgresql():
            self.leadership = Leadership(config.database_url(), name=LOCK_NAME,
                                         check_s=check_s)
        elif self.standby_allowed:
            raise ValueError(STANDBY_NEEDS_POSTGRESQL)
        self._set(Role.SINGLE if self.leadership is None else Role.STANDBY)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._won = False
        self._announced: float | None = None  # our announcement's time while we lead
        self._regain_lock = threading.Lock()
        self._replaced = False  # another scheduler led while our lock was lost: stopping
        self.took_over_s: float | None = None  # from winning the lock to serving
        Gauge("sessionsched_leader", "1 while this scheduler leads (or is the only one)",
              registry=service.metrics.registry).set_function(
            lambda: 1.0 if self.role.serves else 0.0)

    @property
    def role(self) -> Role:
        return Role(self.service.role)

    def serves(self) -> bool:
        """``role.serves``, asked by the front of every request: without building the role."""
        return self.service.role in _SERVING

    def _set(self, role: Role, leader_url: str | None = None) -> None:
        self.service.role = role.value
        self.service.leader_url = leader_url

    # --- start and stop -------------------------------------------------------------------

    def claim(self) -> None:
        """Try the lock once. ValueError if another scheduler leads and this one may not wait
        as its standby."""
        if self.leadership is None:
            return
        self._won = self.leadership.try_acquire()
        if self._won or self.standby_allowed:
            return
        info = self.leadership.leader()
        self.leadership.release()
        where = f" at {info.url} (host {info.host}, pid {info.pid})" if info else ""
        raise ValueError(f"another scheduler leads this store{where}; to run this one as its "
                         "standby, start it with --standby (server.standby: true)")

    def start(self, run_cycles: bool = True) -> None:
        if self.leadership is None:
            self.service.start(run_cycles)
        elif self._won:
            self._lead(run_cycles)
        else:
            log.info("standby: another scheduler leads the store; waiting for its lock")
            self._thread = threading.Thread(target=self._wait, args=(run_cycles,),
                                            name="standby", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the service (a leader first stops writing, then lets the lock go: a standby
        takes over at its next try)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
        try:
            self.service.stop()
        finally:
            if self.leadership is not None:
                self.leadership.release()

    # --- standby and taking over ----------------------------------------------------------

    def _wait(self, run_cycles: bool) -> None:
        assert self.leadership is not None
        while not self._stop.is_set():
            try:
                won = self.leadership.try_acquire()
                info = None if won else self.leadership.leader()
            except Exception:  # noqa: BLE001 - a standby must keep trying, whatever happened
                log.exception("standby: cannot check the leadership lock now")
                won, info = False, None
            if won:
                try:
                    self._lead(run_cycles)
                except Exception:  # noqa: BLE001 - cannot lead: stop, as a lost leader does
                    log.exception("taking over failed")
                    _stop_process()
                return
            # A leader announced under our own address (one advertise_url shared by all, with
            # no readiness routing in front) is not followed: a redirect to ourselves loops.
            url = info.url if info is not None and info.url != self.service.url else None
            if url != self.service.leader_url:
                log.info("standby: the leader is %s", url or "unknown")
            self._set(Role.STANDBY, url)
            self._stop.wait(self.check_s)

    def _lead(self, run_cycles: bool) -> None:
        assert self.leadership is not None
        won_at = time.monotonic()
        self._set(Role.TAKING_OVER)
        self._announced = self._announce(self.leadership)
        self.service.writer.before_commit = self._fence
        self.service.start(run_cycles)  # with cycles: the first has run (adopted apps in)
        self._keep(self.leadership)
        self.took_over_s = time.monotonic() - won_at
        self._set(Role.LEADER, self.service.url)
        log.info("leading the store at %s (books restored in %.2fs)", self.service.url,
                 self.took_over_s)

    def _announce(self, leadership: Leadership) -> float:
        since = self.service.clock()
        leadership.announce(self.service.url, since)
        return since

    def _fence(self, session) -> None:
        """The writer's ``before_commit``: the current lock must be ours. A lock found lost
        (PostgreSQL restarted under us) is regained right here when it can be, so the first
        write after the store is back commits, as on a single scheduler."""
        current = self.leadership
        assert current is not None
        try:
            current.fence(session)
            return
        except NotLeader:
            current.renew()  # a dead lock session counts as lost from now on
            if not self._regain():
                raise
        self.leadership.fence(session)

    def _keep(self, leadership: Leadership) -> None:
        leadership.keep(on_lost=lambda reason: self._lost(leadership, reason))

    def _lost(self, lost: Leadership, reason: str) -> None:
        if lost is not self.leadership:
            return  # an old lock, already replaced by a regained one
        log.error("leadership lost (%s): writes stop until the lock is back", reason)
        threading.Thread(target=self._regain_loop, name="regain", daemon=True).start()

    def _regain_loop(self) -> None:
        while not self._stop.wait(self.check_s):
            if self._regain() is not None:
                return

    def _regain(self) -> bool | None:
        """Try once to get the lock back. True: we lead (again); None: not yet (the store is
        down, or our old session still holds the lock until the server notices it is gone);
        False: another scheduler led meanwhile — our books are stale, the process stops."""
        with self._regain_lock:
            current = self.leadership
            assert current is not None
            if current.is_leader:
                return True
            if self._replaced:
                return False
            fresh: Leadership | None = Leadership(current.url, name=current.name,
                                                  check_s=self.check_s)
            try:
                if not fresh.try_acquire():
                    info = fresh.leader()
                    if info is None or (info.url == self.service.url
                                        and info.since == self._announced):
                        return None
                    why = f"another scheduler leads now ({info.url})"
                elif fresh.announced_since(self.service.url) == self._announced:
                    self._announced = self._announce(fresh)
                    self.leadership, fresh = fresh, None
                    self._keep(self.leadership)
                    current.release()
                    log.info("leadership regained; nobody led in between")
                    return True
                else:
                    why = "another scheduler led while the lock was lost"
            finally:
                if fresh is not None:
                    fresh.release()
            self._replaced = True
        log.error("%s: stopping; started again, this one is a standby", why)
        self._set(Role.STANDBY)
        _stop_process()
        return False


def _stop_process() -> None:
    # SIGTERM to ourselves: uvicorn shuts down in order (the lifespan stops the service).
    os.kill(os.getpid(), signal.SIGTERM)
