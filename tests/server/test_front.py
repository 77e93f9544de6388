"""The server's front (``server/front.py``) on its own, with doors that only say who they are:
which door each request goes to, and the body limit applied around whichever it is."""

from __future__ import annotations

import asyncio
import json

import pytest

from sessionsched.doors.common.asgi import BodyLimit, send_answer
from sessionsched.server.front import Front


def door(name: str, read: bool = False):
    async def app(scope, receive, send):
        if read:
            while (await receive()).get("more_body"):
                pass
        await send_answer(send, 200, name.encode(), "text/plain")

    return app


def front(serves: bool = True, read: bool = False) -> Front:
    return Front(door("native", read), door("agents", read), door("spark", read),
                 door("standby"), BodyLimit(1024, {"/api/v1/uploads/": (4096, "uploads.max")}),
                 lambda: serves)


def ask(app: Front, method: str, path: str, chunks: tuple[bytes, ...] = (b"",),
        length: int | None = None) -> tuple[int, bytes]:
    headers = [] if length is None else [(b"content-length", str(length).encode())]
    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    messages = [{"type": "http.request", "body": c, "more_body": i + 1 < len(chunks)}
                for i, c in enumerate(chunks)]
    sent: list[dict] = []

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert len(sent) == 2, sent  # one answer, whole
    return sent[0]["status"], sent[1]["body"]


@pytest.mark.parametrize(("method", "path", "expected"), [
    ("POST", "/api/v1/agent/heartbeat", "agents"),
    ("POST", "/api/v1/agent/watch", "agents"),
    ("GET", "/api/v1/agent/heartbeat", "native"),  # FastAPI's route answers 405
    ("POST", "/v1/submissions/create", "spark"),
    ("GET", "/v1/submissions/status/driver-1", "spark"),
    ("GET", "/v7/submissions", "spark"),  # Spark's door answers a wrong version (468)
    ("GET", "/api/v1/apps", "native"),
    ("POST", "/batches", "native"),
    ("GET", "/", "native"),
])
def test_each_request_goes_to_its_door(method, path, expected):
    assert ask(front(), method, path) == (200, expected.encode())


@pytest.mark.parametrize("path", ["/api/v1/apps", "/api/v1/agent/heartbeat",
                                  "/v1/submissions/create", "/metrics"])
def test_a_scheduler_that_does_not_serve_sends_all_but_its_health_to_the_standby(path):
    assert ask(front(serves=False), "POST", path) == (200, b"standby")
    assert ask(front(serves=False), "GET", "/api/v1/health") == (200, b"native")


def test_a_declared_body_over_the_limit_is_refused_before_any_door_in_its_doors_shape():
    for serves in (True, False):  # a standby too: the limit comes first
        status, body = ask(front(serves), "POST", "/api/v1/apps", length=1025)
        assert (status, json.loads(body)) == (
            413, {"detail": "request body over 1024 bytes (auth.max_body_bytes)"})
    status, body = ask(front(), "POST", "/v1/submissions/create", length=1025)
    assert (status, json.loads(body)) == (413, {
        "action": "ErrorResponse", "message": "request body over 1024 bytes "
                                              "(auth.max_body_bytes)"})
    assert ask(front(), "PUT", "/api/v1/uploads/abc", length=4096) == (200, b"native")
    assert ask(front(), "PUT", "/api/v1/uploads/abc", length=4097)[0] == 413


def test_a_streamed_body_is_counted_as_the_door_reads_it():
    chunks = (b"x" * 600, b"x" * 600)
    status, body = ask(front(read=True), "POST", "/api/v1/agent/register", chunks)
    assert (status, json.loads(body)) == (
        413, {"detail": "request body over 1024 bytes (auth.max_body_bytes)"})
    assert ask(front(read=True), "POST", "/api/v1/agent/register", chunks[:1]) == (
        200, b"agents")
