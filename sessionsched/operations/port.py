"""The operations port: every door calls one ``Operations`` for each operation, and only
translates its wire format and its error dialect (after Kyuubi's ``BackendService`` under its
``FrontendService``s, and Livy's ``SessionServlet``, where access is checked once).

Each operation, whichever door it comes through:

1. who is asking: ``identify(token)`` (``auth.Gate``; the door finds the token in its own way,
   ``callers``);
2. may they: the gate's rules (``may_change``: the app's owner or an admin; ``may_submit``:
   the queue's submitters, the caller's priority range; ``may_report``: an agent for its own
   app), checked here and nowhere else;
3. for a submission: the intake's checks (``intake.new_apps``: the request made an app record;
   ``guard.check_submission``: the limits), the rate limit (``guard.RateLimit``), the app
   made the caller's, its queue's depth caps (``depth.DepthCaps``: 429 beyond
   ``max_queued_apps`` or ``max_queued_apps_per_user``, nothing stored);
4. the service asked, and its answer awaited with one timeout per kind of operation
   (``SUBMIT_WAIT_S``, ``CYCLE_WAIT_S``: ``outcomes.waited``);
5. an ``Outcome``: done (with the value), not found, conflict, unauthorized, forbidden,
   invalid, refused, overloaded or unavailable.

Reads (``reads.Reads``: ``app``, ``apps``, ``events``, the queue rows, health) are answered
from the service's published view; a driver's log (``log_tail``) is its owner's to read, the
audit trail the admins', what apps used (``usage``) each user's own and the admins' all.
``AppRead`` is the app as every door shows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from sessionsched.intake import new_apps, remote
from sessionsched.intake.depth import DepthCaps, leaf_named
from sessionsched.intake.guard import RateLimit, check_submission
from sessionsched.intake.uploads import UploadError, UploadStore, check_sha
from sessionsched.model import Executor
from sessionsched.model.profiles import Profile
from sessionsched.model.stages import Stages
from sessionsched.model.submission import AppKind, Submission
from sessionsched.operations import auth
from sessionsched.operations.audit_read import AuditRow, audit_rows
from sessionsched.operations.outcomes import (
    CHECKS_FAIL,
    Kind,
    Outcome,
    check_failed,
    done,
    failed,
    service_refusal,
    waited,
)
from sessionsched.operations.reads import AppRead, Reads
from sessionsched.operations.usage_read import usage_lines, window
from sessionsched.service.clusters.fits import with_clusters
from sessionsched.service.service import Service
from sessionsched.store import StoreUnavailable

__all__ = ["AppRead", "AuditRow", "CYCLE_WAIT_S", "Operations", "SUBMIT_WAIT_S"]

SUBMIT_WAIT_S = 30.0  # a submission: until it is committed
CYCLE_WAIT_S = 10.0  # a priority change, a kill, a session stop: until a cycle applies it
AGENT_SUBMITS = "an agent secret may only report for its own app"


class Operations(Reads):
    """The one object every door calls (module doc); thread-safe as the service is."""

    def __init__(self, service: Service, gate: auth.Gate, limits: RateLimit,
                 defaults: new_apps.Defaults, uploads: UploadStore | None = None):
        super().__init__(service)
        self.gate = gate
        self.limits = limits
        self.defaults = defaults
        self.uploads = uploads
        self.depth = DepthCaps()

    # --- who is asking, and may they --------------------------------------------------------

    def identify(self, token: str | None, claimed_user: str | None = None) -> Outcome:
        """The ``Caller`` a token names (everyone is the admin with auth off). ``claimed_user``:
        a Basic auth user name, which must be the token's user."""
        try:
            caller = self.gate.identify(token)
        except auth.Unauthorized as e:
            return failed(Kind.UNAUTHORIZED, str(e))
        if claimed_user is not None and claimed_user != caller.user and \
                caller.role != auth.AGENT:
            return failed(Kind.UNAUTHORIZED, f"Basic auth user {claimed_user!r} is not the "
                                             f"token's user ({caller.user})")
        return done(caller)

    @property
    def auth_on(self) -> bool:
        return self.gate.on

    def may_change(self, caller: auth.Caller, app_id: str, what: str) -> Outcome:
        """``what`` (kill, re-prioritise, stop, read logs of, ...) to ``app_id``: its owner's or
        an admin's. Done with the app; not found for an unknown app."""
        app = self.service.app(app_id)
        if app is None:
            return failed(Kind.NOT_FOUND, f"no app {app_id!r}")
        try:
            self.gate.may_change(caller, app_id, app.user, what)
        except auth.Forbidden as e:
            return failed(Kind.FORBIDDEN, str(e))
        return done(app)

    def as_client(self, caller: auth.Caller) -> Outcome:
        """A client's operation (an upload, a Livy request): an agent secret only reports."""
        if self.gate.on and caller.role == auth.AGENT:
            return failed(Kind.FORBIDDEN, AGENT_SUBMITS)
        return done(caller)

    def may_speak_for(self, caller: auth.Caller, app_id: str, what: str) -> Outcome:
        """What only the app's own driver (its agent secret) or an admin may do: a Livy
        session's REPL taking statements."""
        if not self.gate.on or caller.role == auth.ADMIN:
            return done(caller)
        if caller.role != auth.AGENT or caller.app_id != app_id:
            return failed(Kind.FORBIDDEN, what)
        return done(caller)

    # --- submissions ------------------------------------------------------------------------

    async def submit_argv(self, caller: auth.Caller, sender: str, argv: list[str], cwd: str,
                          conf: Mapping[str, str], env: Mapping[str, str], queue: str | None,
                          priority: Any, name: str | None,
                          uploads: Mapping[str, str] | None = None) -> Outcome:
        """spark-submit arguments (the native API, a Livy batch); ``uploads``: a remote
        client's files by name (``intake.remote``), placed here first. Done: the stored app."""
        if uploads is not None:
            client = self.as_client(caller)
            if not client.ok:
                return client
            try:
                local = remote.rewrite(argv, conf, cwd, uploads, self.uploads.place,
                                       str(self.uploads.root),
                                       self.service.config.uploads.max_files)
            except UploadError as e:
                return failed(Kind.REFUSED, str(e), e.status)
            argv, conf, cwd = local.argv, local.conf, local.cwd
        return await self._submit(caller, sender, "submission", lambda: new_apps.from_argv(
            argv, cwd, conf, env, queue, priority, name, self.defaults))

    async def dry_run(self, caller: auth.Caller, argv: list[str], cwd: str,
                      conf: Mapping[str, str], env: Mapping[str, str], queue: str | None,
                      priority: Any, name: str | None) -> Outcome:
        """``submit --dry-run``: the submission checked as ``submit_argv`` checks it (its
        application file aside: a remote client's is not here), then what it would meet now
        (done: its queue and the ``estimating.DryRunAnswer``). Nothing is stored."""
        try:
            app = self._admit(caller, new_apps.from_argv(
                argv, cwd, conf, env, queue, priority, name, self.defaults, check_file=False))
            self._place(app)()  # a full queue refuses it as it would the submission
        except CHECKS_FAIL as e:
            return check_failed(e)
        answer = await asyncio.to_thread(self.service.estimator.dry_run, app.spec, app.name)
        return done((app.queue, with_clusters(self.service.view.engine, app.spec, answer)))

    async def submit_rest(self, caller: auth.Caller, sender: str, body: Any) -> Outcome:
        """Spark's ``CreateSubmissionRequest``. Done: (the stored app, unknown field names)."""
        unknown: list[str] = []

        def check() -> Submission:
            app, found = new_apps.from_rest(body, self.defaults)
            unknown.extend(found)
            return app

        out = await self._submit(caller, sender, "submission", check)
        return done((out.value, unknown)) if out.ok else out

    async def submit_session(self, caller: auth.Caller, sender: str, name: str | None,
                             queue: str | None, priority: Any,
                             conf: Mapping[str, str], on_host: bool = False) -> Outcome:
        """A notebook's (or, ``on_host``, a Livy client's: its REPL driver runs on the
        scheduler's host) session. Done: the stored app."""
        return await self._submit(caller, sender, "session", lambda: new_apps.from_session(
            name, queue, priority, conf, self.defaults, on_host=on_host))

    async def submit_connect(self, caller: auth.Caller, sender: str, argv: list[str],
                             conf: Mapping[str, str], queue: str | None, priority: Any,
                             name: str) -> Outcome:
        """A Spark Connect session's driver (kind ``connect``): spark-submit arguments the
        Connect door made, launched like a submission once admitted. Done: the stored app."""
        return await self._submit(caller, sender, "Connect session", lambda: new_apps.from_argv(
            argv, self.workdir, conf, {}, queue, priority, name, self.defaults,
            kind=AppKind.CONNECT))

    async def _submit(self, caller: auth.Caller, sender: str, what: str,
                      check: Callable[[], Submission]) -> Outcome:
        try:
            app = self._admit(caller, check())
            never = self.service.view.never_fits(app.spec)
            if never is not None:
                return failed(Kind.REFUSED, f"never fits: {never}", 400)
            place = self._place(app)
        except CHECKS_FAIL as e:
            return check_failed(e)
        try:
            future = self.service.submit(app, sender)
        except BaseException:
            place()
            raise
        # Given back once the write is done: the service's count then holds the app, or not.
        future.add_done_callback(lambda _f: place())
        return await waited(future, SUBMIT_WAIT_S, what)

    def _place(self, app: Submission) -> Callable[[], None]:
        """A place in its queue (the leaf as it runs now, plans applied), or 429 if full."""
        view = self.service.view
        leaf = leaf_named(view.engine.root, app.queue)
        return self.depth.take(leaf, app.user, lambda user: view.queued(app.queue, user))

    def _admit(self, caller: auth.Caller, app: Submission) -> Submission:
        """A checked submission made the caller's: refused (``Forbidden``, ``guard.Refused``)
        if it breaks a rule or a limit; with tokens on, its user is the caller (whatever
        ``spark.sessionsched.user`` says)."""
        check_submission(app, self.gate.auth, self.gate.uploads_root)
        if not self.gate.on:
            return app
        self.gate.may_submit(caller, app.queue, app.spec.priority)
        self.limits.take(caller.user)
        return replace(app, spec=replace(app.spec, user=caller.user))

    # --- changes to an app ------------------------------------------------------------------

    async def set_priority(self, caller: auth.Caller, app_id: str, priority: int,
                           sender: str, via: str) -> Outcome:
        """Done: the app as read after the change (applied, or committed and applied at the
        next cycle)."""
        allowed = self.may_change(caller, app_id, "re-prioritise")
        if not allowed.ok:
            return allowed
        try:
            self.gate.check_priority(caller, priority)
            future = self.service.set_priority(app_id, priority, actor=caller.actor, via=via,
                                               sender=sender, seen=allowed.value)
        except auth.Forbidden as e:
            return failed(Kind.FORBIDDEN, str(e))
        except Exception as e:
            return service_refusal(e)
        return self._read_after(await waited(future, CYCLE_WAIT_S, "priority change"), app_id)

    def request_kill(self, caller: auth.Caller, app_id: str, actor: str | None = None,
                     ) -> Outcome:
        """Ask for a kill without waiting for it; done: the future the next cycle resolves.
        ``actor``: who, as the audit trail says it (default: the caller)."""
        allowed = self.may_change(caller, app_id, "kill")
        if not allowed.ok:
            return allowed
        try:
            return done(self.service.kill(app_id, actor=actor or caller.actor))
        except Exception as e:
            return service_refusal(e)

    async def kill(self, caller: auth.Caller, app_id: str, actor: str | None = None) -> Outcome:
        """Done: the app as read after the cycle that applied the kill (it may have ended
        otherwise just before: its state says)."""
        asked = self.request_kill(caller, app_id, actor)
        if not asked.ok:
            return asked
        return self._read_after(await waited(asked.value, CYCLE_WAIT_S, "kill"), app_id)

    async def stop_session(self, caller: auth.Caller, app_id: str, exit_code: int) -> Outcome:
        allowed = self.may_change(caller, app_id, "stop")
        if not allowed.ok:
            return allowed
        try:
            future = self.service.stop_session(app_id, exit_code)
        except Exception as e:
            return service_refusal(e)
        return self._read_after(await waited(future, CYCLE_WAIT_S, "session stop"), app_id)

    def _read_after(self, out: Outcome, app_id: str) -> Outcome:
        if not out.ok:
            return out
        app = self.service.app(app_id)
        return done(app) if app is not None else failed(Kind.NOT_FOUND, f"no app {app_id!r}")

    # --- the agents -------------------------------------------------------------------------

    def register(self, caller: auth.Caller, app_id: str, spark_app_id: str | None,
                 control: str, reason: str | None, pid: int | None,
                 spark_version: str | None, attempt: int | None = None) -> Outcome:
        """An agent's registration (never waits for a cycle). Done: the agent's reply."""
        return self._report(caller, app_id, lambda: self.service.desk.register(
            app_id, spark_app_id, control, reason, pid, spark_version, attempt))

    def heartbeat(self, caller: auth.Caller, app_id: str, demand: int,
                  executors: list[Executor], control: str | None,
                  observed_at: float | None = None, removed: dict[str, float] | None = None,
                  changed_after: float | None = None, profiles: tuple[Profile, ...] = (),
                  attempt: int | None = None, stages: Stages | None = None) -> Outcome:
        """An agent's report. ``observed_at``, ``removed`` (executor id -> when it left) and
        ``changed_after`` time its executors' changes for the usage figures; ``profiles``, its
        app's resource profiles; ``stages``, its Spark stages; an older agent sends none."""
        return self._report(caller, app_id, lambda: self.service.desk.heartbeat(
            app_id, demand, executors, control, observed_at, removed, changed_after,
            profiles, attempt, stages))

    async def watch(self, caller: auth.Caller, app_id: str, version: int,
                    wait_s: float | None, attempt: int | None = None) -> Outcome:
        """A change-driven agent's wait for its decisions (``AgentDesk.watch``): done with its
        answer once its ``version`` is out of date, or after ``AgentDesk.hold_s``."""
        desk = self.service.desk
        out = self._report(caller, app_id, lambda: desk.watch(app_id, version, attempt))
        if out.ok and isinstance(out.value, Future):  # nothing new: wait for a cycle's change
            await asyncio.wait([asyncio.wrap_future(out.value)], timeout=desk.hold_s(wait_s))
            desk.unwatch(app_id, out.value)
            out = self._report(caller, app_id, lambda: desk.answer(app_id))
        return out

    def _report(self, caller: auth.Caller, app_id: str, call: Callable[[], Any]) -> Outcome:
        if self.gate.on:  # with auth off an unknown app is the desk's refusal, in its words
            app = self.service.app(app_id)
            if app is None:
                return failed(Kind.NOT_FOUND, f"no app {app_id!r}")
            try:
                self.gate.may_report(caller, app_id, app.user)
            except auth.Forbidden as e:
                return failed(Kind.FORBIDDEN, str(e))
        try:
            return done(call())
        except Exception as e:
            return service_refusal(e)

    # --- uploads ----------------------------------------------------------------------------

    def uploaded(self, caller: auth.Caller, sha256: str) -> Outcome:
        """Done: the stored content's size; not found when it is not stored."""
        allowed = self.as_client(caller)
        if not allowed.ok:
            return allowed
        try:
            size = self.uploads.has(check_sha(sha256))
        except UploadError as e:
            return failed(Kind.REFUSED, str(e), e.status)
        return done(size) if size is not None else failed(Kind.NOT_FOUND, f"no upload {sha256}")

    async def upload(self, caller: auth.Caller, sha256: str, chunks, length: int | None,
                     ) -> Outcome:
        """Done: (size, new). The body limit's refusal (raised by the stream) passes through."""
        allowed = self.as_client(caller)
        if not allowed.ok:
            return allowed
        try:
            return done(await self.uploads.put(check_sha(sha256), chunks, length))
        except UploadError as e:
            return failed(Kind.REFUSED, str(e), e.status)

    # --- reads that need a right (the others: ``reads.Reads``) ----------------------------

    def log_tail(self, caller: auth.Caller, app_id: str, lines: int) -> Outcome:
        """A driver's log may hold its data: its owner's (and admins') to read."""
        allowed = self.may_change(caller, app_id, "read logs of")
        return self.driver_log(app_id, lines) if allowed.ok else allowed

    def may_read_audit(self, caller: auth.Caller) -> Outcome:
        if self.gate.on and caller.role != auth.ADMIN:
            return failed(Kind.FORBIDDEN, f"{caller.role} {caller.user} may not read the audit "
                                          "trail (admins only)")
        return done(caller)

    def audit(self, caller: auth.Caller, app: str | None, user: str | None,
              since: float | None) -> Outcome:
        """Submissions, priority changes, kills and expiries, oldest first (admins only)."""
        allowed = self.may_read_audit(caller)
        if not allowed.ok:
            return allowed
        return done(audit_rows(self.service.store, app, user, since))

    def usage(self, caller: auth.Caller, by: str, since: str | None,
              until: str | None) -> Outcome:
        """What apps used (``usage_read``): an admin sees everyone's, a user their own apps'
        (with auth off, everyone's)."""
        allowed = self.as_client(caller)
        if not allowed.ok:
            return allowed
        now = self.service.clock()
        try:
            start, end = window(since, until, now)
            own = None if not self.gate.on or caller.role == auth.ADMIN else caller.user
            first = self.service.config.cluster_registry()[0].name
            return done(usage_lines(self.service.store, by, start, end, now, own, first))
        except ValueError as e:
            return failed(Kind.INVALID, str(e))
        except StoreUnavailable as e:
            return failed(Kind.UNAVAILABLE, f"the store cannot be read now: {e}")


def executors_of(reports) -> list[Executor]:
    """An agent's executor reports as the engine's ``Executor`` records."""
    return [Executor(e.id, e.started_at, e.idle, e.profile) for e in reports]

