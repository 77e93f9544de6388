"""``/api/v1/uploads/{sha256}``: a remote client's files, before the submission that uses them
(``uploads``, ``remote``; docs/api.md).

- ``GET``: ``{"sha256", "size", "new": false}`` if that content is stored (the client then
  sends nothing), else 404;
- ``PUT`` with the raw bytes as the body: 201 when stored, 200 when it was stored already;
  400 when the bytes are not the named hash, 413 over ``uploads.max_file_bytes``, 507 when the
  store is full.

Auth applies as to a submission: a token with auth mode tokens (an agent secret is refused).
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, HTTPException, Request, Response

from sessionsched.doors.native.api import CallerDep
from sessionsched.doors.native.schemas import UploadOut, error_responses
from sessionsched.doors.native.views import one_line
from sessionsched.intake.guard import TooLarge
from sessionsched.intake.uploads import UploadError, UploadStore, check_sha
from sessionsched.operations import auth

router = APIRouter()
audit = logging.getLogger("sessionsched.audit")


def _store(request: Request) -> UploadStore:
    return request.app.state.uploads


def _uploader(caller: auth.Caller) -> None:
    if caller.role == auth.AGENT:
        raise HTTPException(403, "an agent secret may only report for its own app")


def _refused(e: UploadError) -> HTTPException:
    return HTTPException(e.status, str(e))


@router.get("/api/v1/uploads/{sha256}", response_model=UploadOut,
            responses=error_responses(400, 404, 422))
def uploaded(sha256: str, request: Request, caller: CallerDep):
    _uploader(caller)
    try:
        size = _store(request).has(check_sha(sha256))
    except UploadError as e:
        raise _refused(e) from None
    if size is None:
        raise HTTPException(404, f"no upload {sha256}")
    return UploadOut(sha256=sha256, size=size, new=False)


@router.put("/api/v1/uploads/{sha256}", status_code=201, response_model=UploadOut,
            responses={**error_responses(400, 413, 422, 507), 200: {"model": UploadOut,
                       "description": "the same content was stored already"}})
async def upload(sha256: str, request: Request, response: Response, caller: CallerDep):
    _uploader(caller)
    length = request.headers.get("content-length")
    try:
        size, new = await _store(request).put(
            check_sha(sha256), request.stream(),
            int(length) if length and length.isdigit() else None)
    except UploadError as e:
        raise _refused(e) from None
    except TooLarge:  # guard.BodyLimit, counting the streamed bytes
        limit = request.app.state.service.config.uploads.max_file_bytes
        raise HTTPException(413, f"request body over {limit} bytes (uploads.max_file_bytes)") \
            from None
    if not new:
        response.status_code = 200
    else:
        sender = f"{request.client.host}:{request.client.port}" if request.client else ""
        audit.info("%s uploaded %s (%d bytes) from sender %s", caller.actor, sha256, size,
                   one_line(sender))
    return UploadOut(sha256=sha256, size=size, new=new)
