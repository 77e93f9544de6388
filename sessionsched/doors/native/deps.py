"""What every native route depends on: the operations port, the caller, and the port's
outcomes in the native dialect (an ``HTTPException`` whose detail goes out as one line of
``{"detail": ...}``: 400 invalid, 401 with ``WWW-Authenticate: Bearer``, 403, 404, 409, a
refusal's own status with ``Retry-After`` for the rate limit, 503 overloaded or unavailable).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from sessionsched.operations import auth
from sessionsched.operations.callers import bearer
from sessionsched.operations.outcomes import Kind, Outcome
from sessionsched.operations.port import Operations

STATUS = {
    Kind.INVALID: 400,
    Kind.UNAUTHORIZED: 401,
    Kind.FORBIDDEN: 403,
    Kind.NOT_FOUND: 404,
    Kind.CONFLICT: 409,
    Kind.REFUSED: 400,
    Kind.OVERLOADED: 503,
    Kind.UNAVAILABLE: 503,
}


def answer(out: Outcome):
    """A done outcome's value; any other raised as the native API's error."""
    if out.ok:
        return out.value
    headers = None
    if out.kind is Kind.UNAUTHORIZED:
        headers = {"WWW-Authenticate": "Bearer"}
    elif out.retry_after:
        headers = {"Retry-After": str(out.retry_after)}
    raise HTTPException(out.status or STATUS[out.kind], out.message, headers=headers)


def identify(ops: Operations, authorization: str | None) -> auth.Caller:
    """Who is asking: 401 for no, a wrong or a revoked token (with auth off: the admin,
    whatever the header says)."""
    try:
        token = bearer(authorization) if ops.auth_on else None
    except auth.Unauthorized as e:
        raise HTTPException(401, str(e), headers={"WWW-Authenticate": "Bearer"}) from None
    return answer(ops.identify(token))


# Async, so that FastAPI does not hop to a worker thread to run them.
async def get_ops(request: Request) -> Operations:
    return request.app.state.ops


async def get_caller(request: Request) -> auth.Caller:
    return identify(request.app.state.ops, request.headers.get("authorization"))


OpsDep = Annotated[Operations, Depends(get_ops)]
CallerDep = Annotated[auth.Caller, Depends(get_caller)]
