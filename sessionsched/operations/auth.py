"""Who is asking, and may they (docs/operator/serving-a-team.md; role-based priorities as IBM
Conductor has them).

``Gate`` answers both questions for the operations port (``port.Operations``), which every door
calls:

- ``identify(token)``: the ``Caller``. With ``auth.mode: none`` everyone is the admin
  (``Admin``). With ``tokens``: a user token from the tokens file (``config.tokens_file.TokenBook``,
  re-read when it changes, so a revocation needs no restart), an app's agent secret, or no
  token at all, which is ``auth.anonymous``: refused, or taken as that user with user rights.
  An unknown or revoked token is refused even when anonymous requests are taken.
- ``may_submit``, ``may_change``, ``may_report``: the rules. A user submits into queues whose
  ``submit_users`` name them or whose ``submit_groups`` name a group of ``auth.groups`` they
  are in (the queue's own lists, else its parent's), sets priorities in
  ``auth.user_priorities`` and changes (priority, kill, stop) only their own apps; an admin
  sets ``auth.admin_priorities`` on anyone's. An agent secret reports for its own app only.

Refusals are ``Unauthorized`` (401: no, wrong or revoked token) or ``Forbidden`` (403), whose
message names the rule (``user alice may set priority 1-5000, not 9000``).

Agent secrets: an app's driver gets ``sa.<app id>.<HMAC-SHA256(server key, app id)>`` in its
environment (``SESSIONSCHED_TOKEN``, never argv). Derived, not stored: the launch after a
restart gives the same one. The key is ``agent.key`` in the state directory (mode 0600).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sessionsched.config import AuthSection, PriorityRange, QueueConfig
from sessionsched.config.tokens_file import TokenBook

ADMIN = "admin"
USER = "user"
AGENT = "agent"
AGENT_PREFIX = "sa."


class Unauthorized(Exception):
    """No token where one is needed, or one that is not (or no longer) valid: 401."""


class Forbidden(Exception):
    """Known caller, not allowed: 403. ``str()`` names the rule."""


@dataclass(frozen=True)
class Caller:
    user: str
    role: str  # admin | user | agent
    app_id: str | None = None  # an agent: the app its secret was made for
    named: bool = True  # False with auth mode none: the anonymous all-powerful "Admin"

    @property
    def actor(self) -> str:
        """Who, as the audit trail says it (Conductor: ``Admin updated the priority ...``)."""
        if not self.named:
            return "Admin"
        if self.role == AGENT:
            return f"Agent of {self.app_id}"
        return f"{'Admin' if self.role == ADMIN else 'User'} {self.user}"


NOBODY = Caller(user="Admin", role=ADMIN, named=False)


class AppSecrets:
    """Per-app agent secrets from one server key (see the module doc)."""

    def __init__(self, state_dir: str | Path):
        path = Path(state_dir).resolve() / "agent.key"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            self._key = path.read_bytes()
        else:
            self._key = secrets.token_bytes(32)
            with os.fdopen(fd, "wb") as f:
                f.write(self._key)

    def _mac(self, app_id: str) -> str:
        return hmac.new(self._key, app_id.encode(), hashlib.sha256).hexdigest()

    def secret(self, app_id: str) -> str:
        return f"{AGENT_PREFIX}{app_id}.{self._mac(app_id)}"

    def app_of(self, secret: str) -> str | None:
        """The app a secret was made for, or None for a forged one."""
        app_id, _, mac = secret.removeprefix(AGENT_PREFIX).rpartition(".")
        if app_id and hmac.compare_digest(self._mac(app_id), mac):
            return app_id
        return None


def uploads_root(state_dir: str | Path) -> Path:
    """Where remote clients' files are stored (``uploads.UploadStore``)."""
    return Path(state_dir).resolve() / "uploads"


def _rng(r: PriorityRange) -> str:
    return f"{r.min}-{r.max}"


@dataclass(frozen=True)
class Submitters:
    """Who may submit into a queue: these users, and the members of these groups."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def admit(self, user: str, groups: dict[str, list[str]]) -> bool:
        return user in self.users or any(user in groups.get(g, ()) for g in self.groups)

    def __str__(self) -> str:
        parts = [f"submit_users: {', '.join(self.users)}"] if self.users else []
        parts += [f"submit_groups: {', '.join(self.groups)}"] if self.groups else []
        return "; ".join(parts) or "submit_users: nobody"


def _queue_users(queues: Iterable[QueueConfig], parent: str = "",
                 inherited: Submitters | None = None) -> dict[str, Submitters | None]:
    """Each queue's full name -> who may submit into it (its own lists, else its parent's;
    None: everyone)."""
    out: dict[str, Submitters | None] = {}
    for q in queues:
        full = f"{parent}.{q.name}" if parent else q.name
        own = q.submit_users is not None or q.submit_groups is not None
        who = Submitters(tuple(q.submit_users or ()), tuple(q.submit_groups or ())) if own \
            else inherited
        out[full] = who
        out.update(_queue_users(q.queues, full, who))
    return out


class Gate:
    def __init__(self, auth: AuthSection, queues: list[QueueConfig], state_dir: str | Path,
                 default_priority: int = 5000):
        """``default_priority``: the server's ``defaults.priority``, which every submission
        without a priority gets and which is allowed whatever the caller's range."""
        self.auth = auth
        self.default_priority = default_priority
        self.on = auth.mode == "tokens"
        self.book = TokenBook(auth.tokens_file) if self.on and auth.tokens_file else None
        self.secrets = AppSecrets(state_dir) if self.on else None
        self.uploads_root = str(uploads_root(state_dir))
        roots = queues if len(queues) == 1 and queues[0].name == "root" else [
            QueueConfig(name="root", queues=queues)]
        self._queue_users = _queue_users(roots)
        if self.on and os.geteuid() == 0 and not auth.run_as_root:
            raise ValueError(
                "auth mode tokens while running as root: drivers run as the server's user, so "
                "every submitted app would run as root; run the server as an unprivileged user "
                "or set auth.run_as_root: true to accept that")

    # --- identity ---------------------------------------------------------------------------

    def identify(self, token: str | None) -> Caller:
        if not self.on:
            return NOBODY
        if not token:
            if self.auth.anonymous == "refuse":
                raise Unauthorized("a token is required: send 'Authorization: Bearer TOKEN' "
                                   "(sessionsched --token, $SESSIONSCHED_TOKEN)")
            return Caller(user=self.auth.anonymous, role=USER)
        if token.startswith(AGENT_PREFIX) and self.secrets is not None:
            app_id = self.secrets.app_of(token)
            if app_id is None:
                raise Unauthorized("invalid agent secret")
            return Caller(user=f"agent:{app_id}", role=AGENT, app_id=app_id)
        entry = self.book.lookup(token) if self.book is not None else None
        if entry is None:
            raise Unauthorized("unknown or revoked token")
        return Caller(user=entry.user, role=entry.role)

    def secret_for(self, app_id: str) -> str | None:
        """The agent secret a launched driver gets (None with auth off)."""
        return self.secrets.secret(app_id) if self.secrets is not None else None

    # --- the rules --------------------------------------------------------------------------

    def priorities(self, caller: Caller) -> PriorityRange:
        return self.auth.admin_priorities if caller.role == ADMIN else self.auth.user_priorities

    def check_priority(self, caller: Caller, priority: int) -> None:
        if not self.on:
            return
        r = self.priorities(caller)
        if not r.min <= priority <= r.max:
            raise Forbidden(f"{caller.role} {caller.user} may set priority {_rng(r)}, "
                            f"not {priority}")

    def may_submit(self, caller: Caller, queue: str, priority: int) -> None:
        """``queue``: the leaf the submission resolved to."""
        if not self.on:
            return
        if caller.role == AGENT:
            raise Forbidden("an agent secret may only report for its own app")
        who = self._queue_users.get(queue)
        if who is not None and caller.role != ADMIN and not who.admit(caller.user,
                                                                       self.auth.groups):
            raise Forbidden(f"user {caller.user} may not submit to queue {queue} ({who})")
        if priority != self.default_priority:
            self.check_priority(caller, priority)

    def may_change(self, caller: Caller, app_id: str, owner: str, what: str) -> None:
        """Kill, re-prioritise or stop ``app_id`` (owned by ``owner``)."""
        if not self.on or caller.role == ADMIN:
            return
        if caller.role == AGENT and caller.app_id == app_id and what == "stop":
            return  # a Livy session's REPL ends its own session
        if caller.role == AGENT or caller.user != owner:
            raise Forbidden(f"user {caller.user} may {what} only their own apps; {app_id} is "
                            f"{owner}'s")

    def may_report(self, caller: Caller, app_id: str, owner: str) -> None:
        """An agent report: its own app's secret, or (a notebook's agent) the owner's token."""
        if not self.on or caller.role == ADMIN:
            return
        if caller.role == AGENT:
            if caller.app_id != app_id:
                raise Forbidden(f"this agent secret is for {caller.app_id}; it may not report "
                                f"for {app_id}")
            return
        if caller.user != owner:
            raise Forbidden(f"user {caller.user} may report only for their own apps; {app_id} "
                            f"is {owner}'s")
