"""ASGI plumbing shared by the doors and the server's front (``server/front.py``): whole
answers sent without FastAPI (``send_answer``) and the request body limit applied once to every
door (``BodyLimit``: 413 for a body over ``auth.max_body_bytes``, by its Content-Length or
counted as it streams in; an upload's own limit ``uploads.max_file_bytes``)."""

from __future__ import annotations

import json
from collections.abc import Mapping


class BodyLimit:
    """413 for a request body over ``limit`` bytes, before any handler reads it: called by the
    front with the door it chose (``limit(door, scope, receive, send)``), for every HTTP
    request. ``paths``: path prefix -> (its own limit, the setting named in the refusal), for
    the upload of files (``uploads.max_file_bytes``)."""

    def __init__(self, limit: int, paths: Mapping[str, tuple[int, str]] | None = None):
        self.limit = limit
        self.paths = dict(paths or {})

    def _limit(self, path: str) -> tuple[int, str]:
        for prefix, limit in self.paths.items():
            if path.startswith(prefix):
                return limit
        return self.limit, "auth.max_body_bytes"

    async def __call__(self, door, scope, receive, send) -> None:
        limit, setting = self._limit(scope["path"])
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await self._refuse(scope, send, limit, setting)
                return
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise TooLarge()
            return message

        started = False

        async def watched_send(message):
            nonlocal started
            started = True
            await send(message)

        try:
            await door(scope, counted, watched_send)
        except TooLarge:
            if not started:
                await self._refuse(scope, send, limit, setting)

    async def _refuse(self, scope, send, limit: int, setting: str) -> None:
        message = f"request body over {limit} bytes ({setting})"
        spark = "/submissions" in scope.get("path", "")
        body = json.dumps({"action": "ErrorResponse", "message": message} if spark
                          else {"detail": message}).encode()
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
