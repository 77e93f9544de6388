"""Livy's error dialect: ``{"msg": "..."}`` (one line), and the operations port's refusals in
it: 401 with ``WWW-Authenticate: Basic`` (clients that wait for a challenge then send their
credentials), 403 naming the rule, a limit's own status (429 with ``Retry-After``), 400, 404,
503."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from sessionsched.doors.common.bodies import json_body
from sessionsched.model.text import one_line
from sessionsched.operations import auth
from sessionsched.operations.outcomes import Kind, Outcome

CHALLENGE = {"WWW-Authenticate": 'Basic realm="sessionsched", charset="UTF-8"'}
STATUS = {Kind.INVALID: 400, Kind.UNAUTHORIZED: 401, Kind.FORBIDDEN: 403, Kind.NOT_FOUND: 404,
          Kind.CONFLICT: 409, Kind.REFUSED: 400, Kind.OVERLOADED: 503, Kind.UNAVAILABLE: 503}


def reason_info(app) -> dict[str, str | None]:
    """What ``appInfo`` (a map of strings) says of why an app waits, or how it got its state;
    behind several clusters, the ``cluster`` it was placed on (absent with one)."""
    code = app.reason_code
    return {"schedulerReason": app.reason or None,
            "schedulerReasonCode": None if code is None else str(code),
            **({"cluster": app.cluster} if app.cluster is not None else {})}


def msg(text: str, status: int, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"msg": one_line(text)}, status, headers)


async def json_of(request: Request) -> Any:
    """The request's body as JSON (null when empty); ``ValueError`` naming why it is not."""
    try:
        return json_body(await request.body() or b"null")
    except ValueError as e:
        raise ValueError(f"request body is not valid JSON: {e}") from None


def refusal(out: Outcome) -> JSONResponse:
    headers = None
    if out.kind is Kind.UNAUTHORIZED:
        headers = CHALLENGE
    elif out.retry_after:
        headers = {"Retry-After": str(out.retry_after)}
    return msg(out.message, out.status or STATUS[out.kind], headers)


def caller(request: Request) -> auth.Caller:
    """Who is asking, as ``livy.auth.guard`` identified them (the admin with auth off)."""
    return getattr(request.state, "caller", auth.NOBODY)


def int_param(request: Request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"query parameter {name}={raw!r} is not a whole number") from None


def log_page(request: Request, lines: list[str], default_size: int) -> tuple[int, list[str]]:
    """``GET .../log?from=&size=`` as Livy answers it (its ``SessionServlet.serializeLogs``):
    ``size`` lines from ``from``; without ``from`` (or a negative one), the last ``size``; a
    negative ``size``, every line from ``from``. ValueError names a parameter that is not a
    whole number."""
    start = int_param(request, "from", -1)
    size = int_param(request, "size", default_size)
    if size < 0:
        size = len(lines)
    if start < 0:
        start = max(len(lines) - size, 0)
    return start, lines[start:start + size]
