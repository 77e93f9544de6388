"""``/api/v1/uploads/{sha256}``: a remote client's files, before the submission that uses them
(``intake.uploads``, ``intake.remote``, through the operations port; docs/user/api.md).

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

from sessionsched.doors.common.asgi import TooLarge
from sessionsched.doors.common.requests import sender
from sessionsched.doors.native.deps import CallerDep, OpsDep, answer
from sessionsched.doors.native.schemas import UploadOut, error_responses
from sessionsched.model.text import one_line

router = APIRouter()
audit = logging.getLogger("sessionsched.audit")


@router.get("/api/v1/uploads/{sha256}", response_model=UploadOut,
            responses=error_responses(400, 404, 422))
def uploaded(sha256: str, ops: OpsDep, caller: CallerDep):
    size = answer(ops.uploaded(caller, sha256))
    return UploadOut(sha256=sha256, size=size, new=False)


@router.put("/api/v1/uploads/{sha256}", status_code=201, response_model=UploadOut,
            responses={**error_responses(400, 413, 422, 507), 200: {"model": UploadOut,
                       "description": "the same content was stored already"}})
async def upload(sha256: str, request: Request, response: Response, ops: OpsDep,
                 caller: CallerDep):
    length = request.headers.get("content-length")
    try:
        size, new = answer(await ops.upload(caller, sha256, request.stream(),
                                            int(length) if length and length.isdigit() else None))
    except TooLarge:  # BodyLimit, counting the streamed bytes
        limit = ops.max_upload_bytes
        raise HTTPException(413, f"request body over {limit} bytes (uploads.max_file_bytes)") \
            from None
    if not new:
        response.status_code = 200
    else:
        audit.info("%s uploaded %s (%d bytes) from sender %s", caller.actor, sha256, size,
                   one_line(sender(request)))
    return UploadOut(sha256=sha256, size=size, new=new)
