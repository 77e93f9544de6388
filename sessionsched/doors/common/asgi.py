"""ASGI plumbing shared by the doors and the server's front (``server/front.py``): whole
answers sent without FastAPI (``send_answer``) and the request body limit the front applies to
every door (``BodyLimit``: 413 for a body over ``auth.max_body_bytes``, by its Content-Length or
counted as it streams in; an upload's own limit ``uploads.max_file_bytes``)."""

from __future__ import annotations

import json
from collections.abc import Mapping


class BodyLimit:
    """What a request body may hold: ``limit`` bytes, or for a path under one of ``paths``
    (prefix -> its own limit, the setting named in the refusal) that path's, for the upload
    of files (``uploads.max_file_bytes``). The server's front applies it to every door: 413 by
    the Content-Length before the door is called, or as the body streams in (``TooLarge``
    raised from ``receive``) if no answer was started."""

    def __init__(self, limit: int, paths: Mapping[str, tuple[int, str]] | None = None):
        self.limit = limit
        self.paths = dict(paths or {})

    def of(self, path: str) -> tuple[int, str]:
        """The limit on this path's bodies and the setting that sets it."""
        for prefix, limit in self.paths.items():
            if path.startswith(prefix):
                return limit
        return self.limit, "auth.max_body_bytes"

    async def refuse(self, path: str, send, limit: int, setting: str) -> None:
        """The 413, in Spark's shape on its paths."""
        message = f"request body over {limit} bytes ({setting})"
        body = json.dumps({"action": "ErrorResponse", "message": message}
                          if "/submissions" in path else {"detail": message}).encode()
        await send_answer(send, 413, body)


async def send_answer(send, status: int, body: bytes, content_type: str = "application/json",
                      headers: list | None = None) -> None:
    """A whole answer sent without FastAPI (``BodyLimit``, ``standby.Standby``,
    ``agent_api.AgentDoor``, ``rest.SparkDoor``)."""
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
        *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class TooLarge(Exception):
    """Raised from ``receive`` past the limit; a handler that streams the body itself (an
    upload) catches it and answers 413."""
