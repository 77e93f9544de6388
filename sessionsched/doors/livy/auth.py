"""Who may use the Apache Livy API with auth mode tokens (docs/operator/serving-a-team.md).

Livy clients authenticate the way they can: sparkmagic and Zeppelin send HTTP Basic auth
(``username``/``password`` in their configuration), Airflow's ``LivyHook`` a header of the
connection's. So a request carries a sessionsched token either as ``Authorization: Bearer
TOKEN`` or as ``Authorization: Basic base64(USER:TOKEN)``, where USER, if given, must be the
token's user (a mismatch is a misconfiguration, refused rather than guessed at). No header:
``auth.anonymous`` (refused, or that user). A refusal is Livy's ``{"msg": ...}``
(``answers``): 401 with ``WWW-Authenticate: Basic``, 403 naming the rule.

The rules are the operations port's (``operations.port.Operations``), checked once per
request, before its handler, as Livy's ``SessionServlet`` does (``withViewAccessSession`` /
``withModifyAccessSession``):

1. creating a batch or a session is a submission: the port checks the queue's
   ``submit_users``/``submit_groups``, the caller's priority range and rate limit when the
   handler submits (with ``request.state.caller``);
2. everyone authenticated lists and reads batches and sessions (names and states);
3. deleting, reading a driver's log, running or reading statements: the owner's or an
   admin's (``Operations.may_change``; ``app_of`` finds the app the path names);
4. ``/livy-repl/SID/...`` (a session's REPL talking to the server): only that session's
   app secret (``SESSIONSCHED_TOKEN`` in the REPL's environment) or an admin
   (``Operations.may_speak_for``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sessionsched.doors.livy.answers import msg, refusal
from sessionsched.operations import auth
from sessionsched.operations.callers import credentials
from sessionsched.operations.outcomes import Kind, Outcome
from sessionsched.operations.port import Operations

OPEN_READS = {("/batches", "GET"), ("/batches/{bid}", "GET"), ("/batches/{bid}/state", "GET"),
              ("/sessions", "GET"), ("/sessions/{sid}", "GET"), ("/sessions/{sid}/state", "GET"),
              ("/version", "GET")}
CREATES = {("/batches", "POST"), ("/sessions", "POST")}

# The app id of what a request's path names; LookupError when it names nothing (the handler
# then answers its own 404).
AppOf = Callable[[Request], str]


def identify(ops: Operations, authorization: str | None) -> Outcome:
    """The caller: a Bearer token or Basic auth, whose user name must be the token's."""
    try:
        user, token = credentials(authorization)
    except auth.Unauthorized as e:
        return Outcome(Kind.UNAUTHORIZED, message=str(e))
    return ops.identify(token, claimed_user=user)


def guard(routes: list[Route], ops: Operations, batch_app: AppOf,
          session_app: AppOf) -> list[Route]:
    """The Livy routes, each behind the rules of the module doc (with tokens on; with auth
    off every caller is the admin)."""

    def wrap(route: Route) -> Route:
        inner = route.endpoint
        methods = sorted(route.methods or ())
        key = (route.path, next((m for m in methods if m != "HEAD"), ""))

        async def endpoint(request: Request) -> Response:
            if ops.auth_on:
                header = request.headers.get("authorization")
                who = identify(ops, header)
                if not who.ok:
                    hint = "" if header else (
                        "; Livy clients: Basic auth with the token as the password")
                    return refusal(Outcome(Kind.UNAUTHORIZED, message=f"{who.message}{hint}"))
                request.state.caller = who.value
                allowed = check(who.value, key, request)
                if not allowed.ok:
                    return msg(allowed.message, 403)
            if inspect.iscoroutinefunction(inner):
                return await inner(request)
            return await run_in_threadpool(inner, request)

        return Route(route.path, endpoint, methods=methods)

    def check(caller: auth.Caller, key: tuple[str, str], request: Request) -> Outcome:
        path, _ = key
        repl = path.startswith("/livy-repl/")
        if not repl:
            client = ops.as_client(caller)
            if not client.ok or key in OPEN_READS or key in CREATES:
                return client
        app_of = batch_app if path.startswith("/batches/") else session_app
        try:
            app_id = app_of(request)
        except LookupError:
            return Outcome(Kind.DONE)  # names nothing: the handler's 404
        if repl:
            return ops.may_speak_for(caller, app_id, f"only session "
                                     f"{request.path_params.get('sid')}'s REPL may use {path}")
        what = "delete" if request.method == "DELETE" else (
            "read logs of" if path.endswith("/log") else "run statements in")
        allowed = ops.may_change(caller, app_id, what)
        return Outcome(Kind.DONE) if allowed.kind is Kind.NOT_FOUND else allowed

    return [wrap(r) for r in routes]


def _seq(request: Request, name: str) -> int:
    try:
        return int(request.path_params[name])
    except (KeyError, ValueError):
        raise LookupError(name) from None


def batch_app(door) -> AppOf:
    """The app id of the batch a ``/batches/{bid}...`` path names (``door.Livy``)."""

    def app_of(request: Request) -> str:
        app = door.batch(_seq(request, "bid"))
        if app is None:
            raise LookupError("no such batch")
        return app.id

    return app_of


def session_app(door) -> AppOf:
    """The app id of the session a ``/sessions/{sid}...`` or ``/livy-repl/{sid}/...`` path
    names."""

    def app_of(request: Request) -> str:
        with door.sessions.lock:
            s = door.sessions.sessions.get(_seq(request, "sid"))
        if s is None or door.ops.app(s.app_id) is None:
            raise LookupError("no such session")
        return s.app_id

    return app_of
