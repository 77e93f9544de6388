"""Who may use the Apache Livy API with auth mode tokens (README, "Serve a team").

Livy clients authenticate the way they can: sparkmagic and Zeppelin send HTTP Basic auth
(``username``/``password`` in their configuration), Airflow's ``LivyHook`` a header of the
connection's. So a request carries a sessionsched token either as ``Authorization: Bearer
TOKEN`` or as ``Authorization: Basic base64(USER:TOKEN)``, where USER, if given, must be the
token's user (a mismatch is a misconfiguration, refused rather than guessed at). No header:
``auth.anonymous`` (refused, or that user). A refusal is Livy's ``{"msg": ...}``: 401 with
``WWW-Authenticate: Basic`` (clients that wait for a challenge then send their credentials),
403 naming the rule.

The rules are the native API's (``auth.Gate``):

1. creating a batch or a session is a submission: the queue's ``submit_users``/
   ``submit_groups``, the caller's priority range and rate limit; the app is the caller's
   (``Livy.admit`` / ``LivySessions.admit``, called by the handlers with ``request.state.caller``);
2. everyone authenticated lists and reads batches and sessions (names and states);
3. deleting, reading a driver's log, running or reading statements: the owner's or an
   admin's (``owner`` finds the app the path names);
4. ``/livy-repl/SID/...`` (a session's REPL talking to the server): only that session's
   app secret (``SESSIONSCHED_TOKEN`` in the REPL's environment) or an admin.
"""

from __future__ import annotations

import base64
import binascii
import inspect
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sessionsched.doors.native.views import one_line
from sessionsched.intake.guard import Refused
from sessionsched.operations import auth

OPEN_READS = {("/batches", "GET"), ("/batches/{bid}", "GET"), ("/batches/{bid}/state", "GET"),
              ("/sessions", "GET"), ("/sessions/{sid}", "GET"), ("/sessions/{sid}/state", "GET"),
              ("/version", "GET")}
CREATES = {("/batches", "POST"), ("/sessions", "POST")}
CHALLENGE = {"WWW-Authenticate": 'Basic realm="sessionsched", charset="UTF-8"'}

# path -> the owner and app id of what a request's path names; LookupError when it names
# nothing (the handler then answers its own 404).
OwnerOf = Callable[[Request], tuple[str, str]]


def credentials(authorization: str | None) -> tuple[str | None, str | None]:
    """(the Basic auth user name or None, the token or None) of an ``Authorization`` header;
    ``auth.Unauthorized`` for another scheme or a malformed header."""
    if not authorization:
        return None, None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer":
        return None, auth.bearer(authorization)
    if scheme.lower() != "basic":
        raise auth.Unauthorized("the Authorization header must be 'Bearer TOKEN' or Basic auth "
                                "with the token as the password")
    try:
        text = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise auth.Unauthorized("Basic auth: not base64 of 'user:password'") from None
    user, sep, password = text.partition(":")
    if not sep or not password:
        raise auth.Unauthorized("Basic auth: the password must be a sessionsched token")
    return user or None, password


def identify(gate: auth.Gate, authorization: str | None) -> auth.Caller:
    """The caller (``auth.Gate.identify``); a Basic auth user name must be the token's."""
    user, token = credentials(authorization)
    caller = gate.identify(token)
    if user is not None and user != caller.user and caller.role != auth.AGENT:
        raise auth.Unauthorized(f"Basic auth user {user!r} is not the token's user "
                                f"({caller.user})")
    return caller


def _msg(text: str, status: int, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"msg": one_line(text)}, status, headers)


def actor(request: Request) -> str:
    """Who, for the audit trail: the caller ``guard`` identified (``Admin`` with auth off)."""
    caller = getattr(request.state, "caller", None)
    return caller.actor if caller is not None else "Admin"


def refusal(e: Exception) -> JSONResponse:
    """A submission refused by the rules (``auth.Forbidden``: 403) or a limit
    (``guard.Refused``: its status, with ``Retry-After`` for the rate limit)."""
    if isinstance(e, Refused):
        headers = {"Retry-After": str(e.retry_after)} if e.retry_after else None
        return _msg(str(e), e.status, headers)
    return _msg(str(e), 403)


def guard(routes: list[Route], gate: auth.Gate, batch_owner: OwnerOf,
          session_owner: OwnerOf) -> list[Route]:
    """The Livy routes, each behind the rules of the module doc (with tokens on)."""

    def wrap(route: Route) -> Route:
        inner = route.endpoint
        methods = sorted(route.methods or ())
        key = (route.path, next((m for m in methods if m != "HEAD"), ""))

        async def endpoint(request: Request) -> Response:
            try:
                caller = identify(gate, request.headers.get("authorization"))
            except auth.Unauthorized as e:
                hint = "" if request.headers.get("authorization") else (
                    "; Livy clients: Basic auth with the token as the password")
                return _msg(f"{e}{hint}", 401, CHALLENGE)
            request.state.caller = caller
            refusal = check(caller, key, request)
            if refusal is not None:
                return _msg(refusal, 403)
            if inspect.iscoroutinefunction(inner):
                return await inner(request)
            return await run_in_threadpool(inner, request)

        return Route(route.path, endpoint, methods=methods)

    def check(caller: auth.Caller, key: tuple[str, str], request: Request) -> str | None:
        """None, or the rule a request breaks."""
        path, _ = key
        if caller.role == auth.ADMIN:
            return None
        repl = path.startswith("/livy-repl/")
        if caller.role == auth.AGENT and not repl:
            return "an agent secret may only report for its own app"
        if key in OPEN_READS or key in CREATES:
            return None
        owner_of = batch_owner if path.startswith("/batches/") else session_owner
        try:
            owner, app_id = owner_of(request)
        except LookupError:
            return None  # names nothing: the handler's 404
        if repl:
            if caller.role != auth.AGENT or caller.app_id != app_id:
                return f"only session {request.path_params.get('sid')}'s REPL may use {path}"
            return None
        what = "delete" if request.method == "DELETE" else (
            "read logs of" if path.endswith("/log") else "run statements in")
        try:
            gate.may_change(caller, app_id, owner, what)
        except auth.Forbidden as e:
            return str(e)
        return None

    return [wrap(r) for r in routes]


def admit_as_caller(gate: auth.Gate, limits, request: Request, app):
    """A Livy submission checked and made the caller's (``auth.admit``, with the caller
    ``guard`` identified). Raises ``auth.Forbidden`` or ``guard.Refused``."""
    caller = getattr(request.state, "caller", auth.NOBODY)
    return auth.admit(gate, limits, caller, app)


def _seq(request: Request, name: str) -> int:
    try:
        return int(request.path_params[name])
    except (KeyError, ValueError):
        raise LookupError(name) from None


def batch_owner(door) -> OwnerOf:
    """(owner, app id) of the batch a ``/batches/{bid}...`` path names (``livy.Livy``)."""

    def owner(request: Request) -> tuple[str, str]:
        snap = door.port.batch(_seq(request, "bid"))
        if snap is None:
            raise LookupError("no such batch")
        return snap["app"].user, snap["app"].id

    return owner


def session_owner(door) -> OwnerOf:
    """(owner, app id) of the session a ``/sessions/{sid}...`` or ``/livy-repl/{sid}/...``
    path names."""

    def owner(request: Request) -> tuple[str, str]:
        with door.sessions.lock:
            s = door.sessions.sessions.get(_seq(request, "sid"))
        snap = door.port.snapshot(s.app_id) if s is not None else None
        if snap is None:
            raise LookupError("no such session")
        return snap["app"].user, s.app_id

    return owner
